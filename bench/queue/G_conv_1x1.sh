# limit: 30
# Issue #18, session 24 (helper G): std.conv's 1x1 rows with the TMA producer's K steps counted
# along (codegen/warpspec/stepped.py; see G_conv_stepped.sh), against the GEMM they are.
# r50_s4_1x1_2048 (session 18: 185.3 TFLOP/s = 0.45x cuDNN) is the GEMM 3136 x 2048 x 512: 200
# tiles of 128x256 for 132 SMs (1.5 waves), 8 K steps each; BM=64 on one consumer warpgroup makes
# 392 (2.97 waves).  r50_s1_1x1_256 is 200704 x 256 x 64: one K step a tile, x and y's 129 MB
# (30 us at 4.3 TB/s) over 6.6 GFLOP.  --gemm times std.gemm's matmul_nt and cuBLAS on the same
# GEMMs (x as rows [N*H*W, C], w as [F, C]): whether the im2col box costs a 1x1 conv anything
# against the tiled boxes of a plain GEMM.  Every output checked before it is timed, cuDNN in
# the same process.
set -o pipefail
timeout 28 python3 bench/conv.py --only r50_s4_1x1_2048,r50_s1_1x1_256 --min-ms 3 --gemm \
  --variant r50_s4_1x1_2048:BM=64,THREADS=128 \
  --json "$OUT/G_conv_1x1.json" 2>&1 | tee "$OUT/G_conv_1x1.txt" | tail -10
