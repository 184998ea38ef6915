#!/bin/bash
# limit: 50
# Helper G, session 26 (#13): do three untimed compiler decisions (each off by default, no device
# this session) move the ops table's weak rows?  One bench/ops_variants.py process at today's
# defaults, one with the three switches on (each its own TLC_CACHE_DIR: the cache's keys do not
# hold the switches); each row as bench/ops.py measures it, its output checked against PyTorch's
# float64 result before it is timed, PyTorch eager timed in the same process.
#  - fast_math.RARE_POW_SPECIALS: pow's special cases behind one rarely taken branch an element
#    (tl::pow_of's RARE): the same values (tests/codegen/test_fast_log.py's special pairs), SASS
#    of std.elementwise's pow f16 on sm_90a 21 instructions an element on the common path
#    against 34 (FSETP 10 -> 2, FSEL 4 -> 0; tests/codegen/test_fast_log.py), but
#    std.broadcast's pow 63 -> 99 registers (whole-runs build), 64 and no spills at BLOCKS = 8,
#    which the second process times too.  Rows: pow (0.87 of copy), broadcast.pow (0.55).
#  - l2_policy.KEEP_GATHERED_ROWS: a gather's copies (rows chosen by an index) load with an L2
#    evict_last policy.  moe_permute reads x (32 MiB) 8 times while writing y (288 MiB): 0.63 of
#    copy.  Rows: moe_permute, and embedding, which it marks too (no loss wanted; moe_unpermute and
#    index_select, marked as well, only in the GPU tests here).
#  - atomic_groups.GROUP_ATOMICS: a warp's constant shared atomic adds at one data-chosen
#    address added once (MATCH.ANY, POPC, one ATOMS a group); the skewed ids put ~6 of a warp's
#    32 lanes on one bin.  Row: expert_histogram (0.76 of copy).
#  - host_asserts.WHOLE_RUNS_WITH_ASSERTS: a kernel with device_asserts keeps the TL_WHOLE_RUNS
#    build (today it takes the ragged one: expert_histogram 496 SASS against 320, sm_90a), its
#    generic build's assert record read too.  expert_histogram's line in the second process is
#    this and GROUP_ATOMICS together.
# And a run-time switch, timed in the first process as a variant of its own (the launcher reads
# it): host_asserts.HOST_DECIDED_ASSERTS, expert_histogram's device_assert `E <= BE` decided on
# the host when the launcher binds its sizes, so that no launch waits for the GPU to read the
# assert record (every launch of a kernel with asserts synchronizes today, inside the timed
# region of tlc.timing).
# Then the GPU tests of the three on (pow's special pairs, std.moe's table with the switches).
# Answer: the --compare lines (before -> after, after's speedup), and the first process's
# expert_histogram default -> @...HOST_DECIDED_ASSERTS=1.  Flip a switch's default to on
# (fast_math.py, l2_policy.py, atomic_groups.py, runtime/host_asserts.py's two) if its rows gain,
# none loses more than 1%, and the tests pass; where broadcast.pow gains with RARE only at BLOCKS = 8,
# that is its sm_90a rule in stdlib/config.json with the flip.
set -u
SPEC="pow broadcast.pow moe_permute expert_histogram embedding"
BASE=${TLC_CACHE_DIR:-/tmp/tlc-cache}
ASSERTS=@tlc.runtime.host_asserts.HOST_DECIDED_ASSERTS=1  # a run-time switch: a variant in the same process
TLC_CACHE_DIR=$BASE/g_defaults PYTHONUNBUFFERED=1 python3 bench/ops_variants.py --min-ms 20 --json /tmp/g_before.json \
  ${SPEC/expert_histogram/expert_histogram $ASSERTS} 2>&1
TLC_CACHE_DIR=$BASE/g_switches PYTHONUNBUFFERED=1 python3 bench/ops_variants.py --min-ms 20 --json /tmp/g_after.json \
  --option tlc.schedule.fast_math.RARE_POW_SPECIALS=1 --option tlc.schedule.l2_policy.KEEP_GATHERED_ROWS=1 \
  --option tlc.schedule.atomic_groups.GROUP_ATOMICS=1 --option tlc.runtime.host_asserts.WHOLE_RUNS_WITH_ASSERTS=1 \
  ${SPEC/broadcast.pow/broadcast.pow BLOCKS=8} 2>&1
python3 bench/ops_variants.py --compare /tmp/g_before.json /tmp/g_after.json 2>&1
python3 -m pytest -q -m gpu -p no:cacheprovider tests/gpu/test_fast_math16_gpu.py tests/gpu/test_moe_gpu.py \
  -k "pow_special or untimed or decide_its_assert or whole_runs_build" 2>&1
