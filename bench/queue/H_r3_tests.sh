# limit: 15
# Issue #13, session 24 (helper H), round 3: the GPU tests of e03d36f (flat copies: element-wise tile
# ops and vector_add through both builds, sizes whose last block is partial, ragged sizes and bases
# off 16 bytes) and of 62db304 (one run a thread) on std.elementwise's abs and where at the ragged
# shapes of tests/gpu/test_elementwise_gpu.py (the general build).  On the CPU: tests/codegen,
# tests/runtime, tests/schedule pass (the whole-runs SASS of abs 47 instructions, where's three loads
# issued together).
set -o pipefail
timeout 14 python3 -m pytest -m gpu -q -p no:cacheprovider tests/gpu/test_flat_copies_gpu.py \
  tests/gpu/test_elementwise_gpu.py -k "flat or vector_add or test_op and (abs- or where-)" 2>&1 \
  | tee "$OUT/H_r3_tests.txt" | tail -8
