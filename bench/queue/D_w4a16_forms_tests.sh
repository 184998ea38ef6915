#!/bin/bash
# limit: 12
# Helper D, session 26 (#18; prepared on the CPU, no device that session).  Asks: are std.gemm's
# w4a16 kernels right on the GPU under the options bench/queue/D_w4a16_copies.sh and
# D_w4a16_ring_split.sh time?  tests/gpu/test_gemm_w4a16_options_gpu.py: RING_SPLIT's matmul_w4a16
# (parts meeting inside the kernel: 8, 2, 4 and 7 parts, each launched twice, so that the second
# launch finds every tile's count back at 0), and ROUND_STEPS with CLIP_ROWS_MAX = 8 (M = 1 and 5:
# the 8-row activation tiles clipped; the decode kernel, the split-K + reduce, the gemv) against
# NumPy, each option's kernels from a copy of std.gemm's text at a path of its own.  On the CPU
# the interpreter ran the split kernels at these shapes (tests/schedule/test_ring_split_k.py) and
# nvcc built every kind of tile with the copy forms (tests/codegen/test_copies_rounds.py).
# Answer (ANSWER:): the pytest exit status; a failure keeps the failing option off.
set -u
timeout 11 python3 -m pytest -q -m gpu -p no:cacheprovider tests/gpu/test_gemm_w4a16_options_gpu.py 2>&1 | tail -6
echo "ANSWER: w4a16 GPU tests under RING_SPLIT and the copy forms: pytest exit ${PIPESTATUS[0]}"
