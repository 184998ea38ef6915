# limit: 45
# Issue #18, session 24 (helper G): std.conv's conv2d on sm_90a with its TMA producer's K-step
# coordinates counted along, not divided (codegen/warpspec/stepped.py).  Before: the producer
# thread computed k % CB, k // CB % K, k // (K * CB) and the im2col box's corner ((by * BM) % OW,
# // OW % OH, // (OW * OH)) every K step by run-time divisions: ~380 SASS instructions between its
# empty-barrier wait and its TMA issues (I2F / MUFU.RCP / F2I chains), where std.gemm's has ~40.
# Every row ran ~1.3-1.5 us a K step whatever the step's work (conv3x3_56_256's 128x256x64 and
# r50_s1_3x3_64's 128x64x64, 4x less, took the same), and 6 or 8 stages did not help r50_s1
# (session 18): an issue rate, not a latency.  Now (CPU, nvcc sm_90a): ~90 instructions a step and
# no division, the corner once a tile; 168 registers, no spills; the divisions stay for a divisor
# not above 0 (tests/codegen/test_warpspec_stepped.py checks the counters against them).
# Asks, every output checked against F.conv2d in f32 before it is timed, cuDNN in the same process:
# tlc (the new default) on the three 3x3 rows of bench/conv.py's quick list; r50_s1_3x3_64 also at
# BM=256 (twice the work a K step, 4 stages, 193 KB) and on 6 stages (144 KB); r50_s3_3x3_256 (98 tiles of 128x256 for
# 132 SMs) also at BM=64 on one consumer warpgroup (392 tiles: 2.97 waves); and (--gemm) std.gemm's
# matmul_nt and cuBLAS on each row's own GEMM, what the GEMM schedule reaches at that size.
# Session 18, same rows before: conv3x3_56_256 440.6 TFLOP/s = 0.58x, r50_s3_3x3_256 0.58x,
# r50_s1_3x3_64 0.28x.
set -o pipefail
timeout 43 python3 bench/conv.py --only conv3x3_56_256,r50_s1_3x3_64,r50_s3_3x3_256 --min-ms 3 --gemm \
  --variant r50_s1_3x3_64:BM=256,stages=4 --variant r50_s1_3x3_64:stages=6 \
  --variant r50_s3_3x3_256:BM=64,THREADS=128 \
  --json "$OUT/G_conv_stepped.json" 2>&1 | tee "$OUT/G_conv_stepped.txt" | tail -14
