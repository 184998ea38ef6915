#!/bin/bash
# limit: 40
# Helper G, session 28 (#13): which switch lost expert_histogram 2.3x on the H200?  Session 28's
# G_ops_weak_rows.sh (bench/results/q_G_ops_weak_rows-h200-twentyeighth.txt) timed
# atomic_groups.GROUP_ATOMICS and host_asserts.WHOLE_RUNS_WITH_ASSERTS only together: 2^26 i64
# ids 165.9 -> 377.3 us (0.75 -> 0.33 of copy).  Both stay off until one is timed alone.
# CPU (nvcc 13.0 -cubin -arch=sm_90a, cuobjdump -sass, std.moe expert_histogram I=i64): at the
# defaults nvcc already renders the constant `atomic_add(hist[part[q]], 1)` as
# ATOMS.POPC.INC.32, the hardware's own increment by the lanes at one address; GROUP_ATOMICS
# replaces each with VOTE.ANY + MATCH.ANY + FLO + POPC + ATOMS.ADD (4 MATCH.ANY a loop
# iteration; ragged build 496 -> 560 SASS, whole-runs 320 -> 384; 29 -> 35 registers), so it is
# the suspect.  WHOLE_RUNS_WITH_ASSERTS alone: the whole-runs build, 496 -> 320 SASS, the same
# ATOMS.POPC.INC, 29 -> 20 registers; it reads the generic build's assert record too, only where
# a launch needed that build.
# Three processes (each its own TLC_CACHE_DIR: the cache's keys do not hold the switches): the
# defaults (host_asserts.HOST_DECIDED_ASSERTS on since session 28), GROUP_ATOMICS alone,
# WHOLE_RUNS_WITH_ASSERTS alone; each times the row (output checked against PyTorch's bincount
# first) and a variant with HOST_DECIDED_ASSERTS off (every launch reads the record, as session
# 28's run did).
# Answer: the two --compare lines (defaults -> one switch).  A switch whose rows lose: remove it
# and its code (atomic_groups.py / reduce.cuh's atomic_add_grouped; host_asserts.py's switch and
# launch.py's second record read); one whose rows gain 2% or more (none losing): flip it on.
set -u
BASE=${TLC_CACHE_DIR:-/tmp/tlc-cache}
ROW="expert_histogram @tlc.runtime.host_asserts.HOST_DECIDED_ASSERTS=0"
export PYTHONUNBUFFERED=1
TLC_CACHE_DIR=$BASE/gh_defaults python3 bench/ops_variants.py --min-ms 20 --json /tmp/gh_defaults.json $ROW 2>&1
TLC_CACHE_DIR=$BASE/gh_group python3 bench/ops_variants.py --min-ms 20 --json /tmp/gh_group.json \
  --option tlc.schedule.atomic_groups.GROUP_ATOMICS=1 $ROW 2>&1
TLC_CACHE_DIR=$BASE/gh_whole python3 bench/ops_variants.py --min-ms 20 --json /tmp/gh_whole.json \
  --option tlc.runtime.host_asserts.WHOLE_RUNS_WITH_ASSERTS=1 $ROW 2>&1
echo "GROUP_ATOMICS alone:"
python3 bench/ops_variants.py --compare /tmp/gh_defaults.json /tmp/gh_group.json 2>&1
echo "WHOLE_RUNS_WITH_ASSERTS alone:"
python3 bench/ops_variants.py --compare /tmp/gh_defaults.json /tmp/gh_whole.json 2>&1
