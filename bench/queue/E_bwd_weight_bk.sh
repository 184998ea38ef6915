#!/usr/bin/env bash
# limit: 20
# Helper E, session 28 (#18), for helper F's question that session 28 lost: every dw row of
# bench/queue/F_bwd_data_ring.sh and F_stream_k.sh printed "conv2d_bwd_weight() launches 2 grids;
# launcher() holds one launch of one grid: call the kernel instead" (bench/results/q_F_*-h200-twentyeighth.txt):
# bench/conv.py asked for a launcher of a two-grid kernel.  It now times the call whole (_launch; its Python
# call's microseconds included; tests/bench/test_conv_variants.py runs it on the cpu target against NumPy).
# Asks: std.conv conv2d_bwd_weight (dw) against cuDNN at ResNet-50's stride-1 3 x 3 layers, batch 64, and at
# r50_s1_3x3_64 (0.40x cuDNN in session 25 at batch 32) with BK=128 pixels a K step (half the steps of 4 tiny
# 64 x 64 x 16 wgmmas each; the TMA build: 240 registers, no spills, ptxas -v sm_90a -DTL_TMA_FLAGS=3, F's CPU
# figure).  Every output checked against PyTorch's f32 gradient first (16 f16 ulps).
# Answer: per dw row the ratio to cuDNN; BK=128 faster by > 2% at r50_s1_3x3_64: config.json's
# conv2d_bwd_weight 64-channel rule takes BK 128.  (The dx rows print too: RING by config.json since session 28.)
export PYTHONUNBUFFERED=1
python3 bench/conv.py --bwd --min-ms 3 --only r50_s1_3x3_64,r50_s2_3x3_128b,r50_s3_3x3_256 \
  --variant WEIGHT:r50_s1_3x3_64:BK=128 2>&1 | grep -v Warning
