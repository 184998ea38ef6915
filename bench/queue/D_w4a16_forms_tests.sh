#!/bin/bash
# limit: 25
# Helper D, session 26 (#18; prepared on the CPU, no device that session).  Asks: are std.gemm's
# w4a16 kernels right on the GPU under the copy forms (ROUND_STEPS with CLIP_ROWS_MAX = 8)?
# tests/gpu/test_gemm_w4a16_options_gpu.py: ROUND_STEPS with CLIP_ROWS_MAX = 8 (M = 1 and 5:
# the 8-row activation tiles clipped; the decode kernel, the split-K + reduce, the gemv) against
# NumPy, the option's kernels from a copy of std.gemm's text at a path of its own.  On the CPU
# nvcc built every kind of tile with the copy forms (tests/codegen/test_copies_rounds.py).
# (RING_SPLIT, its other question, was removed in session 29.)  Session 28 timed both options slower than the defaults (they stay off:
# bench/results/q_D2_w4a16_tma_ring-h200-twentyeighth.txt), their outputs at N = K = 8192 passing
# bench/lowbit.py's checks; this asks whether the off options are still right at ragged shapes.
# Session 28 ran it at 11 s: 7 of the 8 tests passed before the timeout (the 8th compiles M = 16's
# copy-form kernels); 23 s now.
# Answer (ANSWER:): the pytest exit status; a failure keeps the failing option off.
set -u
timeout 23 python3 -m pytest -q -m gpu -p no:cacheprovider tests/gpu/test_gemm_w4a16_options_gpu.py 2>&1 | tail -6
echo "ANSWER: w4a16 GPU tests under the copy forms: pytest exit ${PIPESTATUS[0]}"
