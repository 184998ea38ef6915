# limit: 45
# Issue #18, session 24 (helper G): std.conv's conv2d with this session's defaults on sm_90a: the
# counted TMA producer (1d154ea, codegen/warpspec/stepped.py) and 8929c87's rule (256 x 64 tiles
# on 4 stages for up to 64 output channels).  Round 2 answered: conv3x3_56_256 1.00x cuDNN,
# r50_s3_3x3_256 1.01x, r50_s1_3x3_64 0.91x at 256 x 64 (0.65x at 128 x 64), r50_s4_1x1_2048 0.78x
# (std.gemm's matmul_nt 348 TFLOP/s on its GEMM, cuBLAS 434).  Asks: bench/conv.py's whole table
# (batch 64 NHWC f16: ResNet-50's convolutions, the 3x3 at 56x56x256, depthwise), every output
# checked against F.conv2d in f32 before it is timed, cuDNN channels_last in the same process;
# the 64-channel rows also at round 2's 128 x 64 on 3 stages (the rule was timed on the 3x3 row
# only: do the 1x1 rows agree?); r50_s1_3x3_64 also at 256 x 64 on 5 stages;
# r50_s4_1x1_2048 (200 tiles of 128 x 256 for 132 SMs) also at 128 x 128 (400);
# the 128-channel 3x3 rows (the .tl's 128 x 128 on 3 stages, no sm_90a rule) also at 256 x 128
# on 4 stages and 128 x 128 on 5; the rows of few 128 x 256 tiles (r50_s4_1x1_2048 200,
# r50_s3_3x3_256 98, r50_s4_3x3_512 50, for 132 SMs) also at 64 x 256 on 4 stages, the two
# consumer warpgroups each 128 of the 256 columns (4x the tiles; stored from registers).
set -o pipefail
timeout 43 python3 bench/conv.py --min-ms 3 --json "$OUT/G_conv_defaults.json" \
  --variant r50_s1_1x1_64:BM=128,stages=3 --variant r50_s1_1x1_in256:BM=128,stages=3 \
  --variant r50_s1_3x3_64:BM=128,stages=3 --variant r50_s1_3x3_64:BM=256,stages=5 \
  --variant r50_s4_1x1_2048:BN=128 --variant r50_s2_3x3_128b:BM=256,stages=4 \
  --variant r50_s2_3x3_128b:stages=5 --variant r50_s2_3x3_128:BM=256,stages=4 \
  --variant r50_s4_1x1_2048:BM=64,stages=4 --variant r50_s3_3x3_256:BM=64,stages=4 \
  --variant r50_s4_3x3_512:BM=64,stages=4 \
  2>&1 | tee "$OUT/G_conv_defaults.txt" | tail -34
