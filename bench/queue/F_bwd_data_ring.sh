#!/bin/bash
# limit: 16
# Helper F, session 26 (#18): is std.conv's conv2d_bwd_data with RING=True (at S = 1 conv2d's
# implicit GEMM over dy: on sm_90a the persistent TMA im2col ring, wgmma, dx stored by the TMA)
# faster than the default gather through cp.async (not warp-specialized), and at which tiles?
# cuDNN's dx (aten.convolution_backward on the channels_last tensors) in the same process; dw's
# defaults timed too.  The CPU showed: --emit ir says "copies im2col of dy -> dys, w -> ws",
# persistent, "dx box 64x64 (store)"; 168 registers, no spills (ptxas -v sm_90a, K=3); the
# interpreter runs the scheduled ring against NumPy (tests/stdlib/test_conv.py).  Every output
# checked against PyTorch's f32 gradient first (16 f16 ulps).
# Also dw at r50_s1_3x3_64 (0.40x cuDNN in session 25 at batch 32) with BK=128 pixels a K step
# (half the steps of 4 tiny 64 x 64 x 16 wgmmas each, whose barrier round trips may bound it; the
# TMA build: 240 registers, no spills, ptxas -v sm_90a -DTL_TMA_FLAGS=3).
# Answer: per row, dx's ratio to cuDNN for the gather (tlc) and each RING variant.  Where a RING
# variant wins, add a config.json rule for conv2d_bwd_data on sm_90a (its C bucket: RING=True
# and the tiles), as conv2d's rules are by F; where BK=128 wins dw's 64-channel rule takes it.
python3 bench/conv.py --bwd --min-ms 3 --only r50_s1_3x3_64,r50_s1_1x1_256,r50_s2_3x3_128b,r50_s3_3x3_256 \
  --variant DATA:RING=True \
  --variant DATA:r50_s1_3x3_64:RING=True,BM=256,BN=64,stages=4 \
  --variant DATA:r50_s1_1x1_256:RING=True,BM=256,BN=64,stages=4 \
  --variant DATA:r50_s2_3x3_128b:RING=True,stages=6 \
  --variant DATA:r50_s3_3x3_256:RING=True,BN=256 \
  --variant WEIGHT:r50_s1_3x3_64:BK=128 2>&1 | grep -v Warning
