#!/bin/bash
# limit: 40
# Helper G, sessions 28-29 (#13): std.broadcast's pow f16 on sm_90a: should it take BLOCKS = 8 (a
# stdlib/config.json rule), and codegen/rare_runs.py's RARE_POW_RUNS (pow's special cases tested
# once a run of 8 elements instead of once an element) be on?
# Session 28's H200 (bench/results/q_G_ops_weak_rows-h200-twentyeighth.txt, RARE_POW_SPECIALS on as
# by default now, outputs checked first): the table's row (y (4, 4, 1024, 8192) f16, a whole, b
# (1, 4, 1, 8192), the whole-runs build) 213.4 us at the default against 184.5 at BLOCKS = 8, 1.157x.
# Not made a rule then: the general build (a launch of ragged rows) spilled at BLOCKS = 8.
# Session 29, CPU (nvcc 13.0 -cubin sm_90a -Xptxas -v, the kernel as generated with A3, B3 not 1;
# "hot": the fewest SASS instructions from the entry through the runs' 16-byte loads and stores to
# EXIT):              general build                      whole-runs build
#   switch off, B=0:  96 regs, no spill, hot 1359        110 regs, hot 1066
#   switch off, B=8:  64 regs, 12 bytes spilled, 1378    64 regs, hot 1103
#   switch off, B=7:  72 regs, 4 bytes spilled, 1375     72 regs, hot 1101
#   switch on,  B=0:  87 regs, no spill, hot 1230        146 regs, hot 981
#   switch on,  B=8:  64 regs, no spill, hot 1296        63 regs, hot 1043
# ptxas hoisted later elements' MUFU.LG2 above each element's branch and spilled what it kept
# across them; one branch a run leaves nothing to hoist over.  Off -> on changes only
# std.broadcast's pow (scripts/options-flip, every std/example build at sm_90a: f16 96 -> 85,
# bf16 116 -> 108 registers at the defaults, A3 = B3 = 1024).
# First the GPU tests of the kernel both ways (special values, whole and ragged rows, BLOCKS = 8);
# then three processes, each row's output checked against PyTorch's float64 result before it is
# timed: the table's shape with the switch off (session 28's pair again), then on (a kernel
# cache of its own: the switch is not in its key), and on at N = 8191 (ragged: the general build).
# Answer: (1) RARE_POW_RUNS: on if on/default and on/BLOCKS=8 are no slower than off/default and
# off/BLOCKS=8 (within 1%) and faster at either by 2% or more; (2) if on wins, the rule
# (broadcast.tl pow, arch sm_90a, when T f16, BLOCKS 8) if on/BLOCKS=8 beats on/default by 2% or
# more at the table's shape and loses no more than 1% at N = 8191; if off, the rule only if
# off/BLOCKS=8 still beats off/default by 2% (session 28: 1.157x) and a ragged row is rare enough
# to take the spill (say so in the commit).
export PYTHONUNBUFFERED=1
timeout 12 python3 -m pytest -q -p no:cacheprovider tests/gpu/test_fast_math16_gpu.py -k broadcast_pow 2>&1 | tail -5
python3 bench/ops_variants.py --min-ms 20 broadcast.pow BLOCKS=8 2>&1
CACHE=$(mktemp -d)
TLC_CACHE_DIR=$CACHE python3 bench/ops_variants.py --min-ms 20 --option tlc.codegen.rare_runs.RARE_POW_RUNS=1 \
    broadcast.pow BLOCKS=8 2>&1
TLC_CACHE_DIR=$CACHE python3 bench/ops_variants.py --min-ms 20 --option tlc.codegen.rare_runs.RARE_POW_RUNS=1 \
    --shape 16384,8191 broadcast.pow BLOCKS=8 2>&1
rm -rf "$CACHE"
