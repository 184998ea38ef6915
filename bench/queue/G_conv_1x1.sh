# limit: 30
# Issue #18, session 24 (helper G): (1) the GPU tests of std.conv's conv2d through the counted
# TMA producer (codegen/warpspec/stepped.py; see G_conv_stepped.sh): the ragged cases of
# tests/gpu/test_conv_gpu.py with the default tiles in f16 (C not a multiple of BK, stride 2,
# dilation 2, 5x5 and 7x7 kernels, a 1x1) and the im2col-mode cases of bench/conv_im2col_*.tl;
# the CPU checked the counters against the divisions (tests/codegen/test_warpspec_stepped.py)
# but no kernel ran.  (2) r50_s4_1x1_2048 (session 18: 185.3 TFLOP/s = 0.45x cuDNN), the GEMM
# 3136 x 2048 x 512: 200 tiles of 128x256 for 132 SMs (1.5 waves), 8 K steps each; --gemm
# times std.gemm's matmul_nt and cuBLAS on the
# same GEMM (x as rows [N*H*W, C]): whether the im2col box costs a 1x1 conv anything against a
# plain GEMM's tiled boxes.  Every output checked before it is timed, cuDNN in the same process.
set -o pipefail
timeout 15 python3 -m pytest -q -x -n 10 -m gpu -p no:cacheprovider tests/gpu/test_conv_gpu.py \
  -k "f16-default or (im2col_mode and gather)" 2>&1 | tee "$OUT/G_conv_tests.txt" | tail -3
timeout 13 python3 bench/conv.py --only r50_s4_1x1_2048 --min-ms 3 --gemm \
  --json "$OUT/G_conv_1x1.json" 2>&1 | tee "$OUT/G_conv_1x1.txt" | tail -6
