# limit: 30
# Issue #19, session 24 (helper B), round 3: the GPU tests of what changed defaults.  493811a lets
# wgmma read a 16-bit A M-major (gemm(..., trans_a=True)), which puts std.gemm's matmul_tn and
# std.conv's conv2d_bwd_weight on wgmma on sm_90a (mma.sync before; conv2d_bwd_weight's ring now
# warp-specialized, its producer gathering rows); efe7db7 adds an mma accumulator's f32 tile
# atomics two registers at a time (8-byte reds) and atomic_add's order=; 2fae5ed their turns in
# a warp-specialized ring.  CPU: interpreter, SASS (HGMMA .tnspA, REDG.E.ADD.F32x2, no spills),
# the README suite.  Round 2 ran the M-major gemm's GPU test (f16, 4 passed) and the one-grid
# attention backward (right, slower: not adopted).
set -o pipefail
# (matmul_tn's check at a ragged shape in f16 and bf16 and at 8192^3: B_r3_time.sh)
timeout 28 python3 -m pytest -q -x -n 8 -m gpu -p no:cacheprovider \
  tests/gpu/test_conv_gpu.py tests/gpu/test_plain_gpu.py tests/gpu/test_tile_atomics_gpu.py \
  tests/gpu/test_wgmma_m_major_a_gpu.py -k "backwards or exchange_copy or tile_atomics or at_b or ordered or split_k" 2>&1 | tail -6
