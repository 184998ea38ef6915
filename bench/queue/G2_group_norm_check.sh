#!/bin/bash
# limit: 45
# Helper G2, session 26 (#13, correctness): c21006d makes std.nn_layers' group_norm and
# group_norm_bwd refuse a G that does not divide C (they left channels past G * (C // G)
# unwritten) by typing bias (dbias) T[G * (C // G)], which every launch checks against the array.
# CPU-checked: the interpreter, the cpu target and the CUDA binder refuse with the exact text; the
# device code at the defaults differs from before by one bound each (the forward's per-channel
# bias read `ch < 32 * (C // 32)` instead of `ch < C`; group_norm_bwd's third grid's dbias store);
# group_norm_bwd's first two grids' SASS is byte-identical, registers 64 / 78 / 46 / 32 unchanged,
# no spills (sm_90a and sm_80, nvcc 13.0, the whole-runs build).
# (45 s: cold NVRTC compiles of both kernels at G = 3 and 4, f16, and the row at its defaults.)
# Asks: (1) the GPU test (NumPy, CuPy and PyTorch arrays, each call twice: the cached launcher /
# fast path) passes; (2) the ops table's group_norm row keeps its ratio (0.61-0.63 of copy,
# bench/RESULTS.md; output checked against PyTorch before it is timed).
# Answer: "test passed/failed; group_norm X of copy, Y x torch".  A row below 0.60 of copy (past
# the sessions' noise) -> measure the forward with bias typed T[C] again (one line of the .tl)
# before keeping the check there, and say so in bench/RESULTS.md.
python3 -m pytest -q -m gpu -p no:cacheprovider tests/gpu/test_nn_train_gpu.py -k refuses 2>&1 | tail -3
PYTHONUNBUFFERED=1 python3 bench/ops.py --only group_norm --min-ms 20 --no-chart --json /tmp/G2_group_norm.json 2>&1 | tail -6
