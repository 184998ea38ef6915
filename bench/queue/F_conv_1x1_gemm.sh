#!/bin/bash
# limit: 14
# Helper F, session 26 (#18): why are the 1x1 rows (plain GEMMs over NHWC: M = pixels, N = F,
# K = C) at 0.93-0.97x cuDNN?  Each row beside std.gemm's matmul_nt and cuBLAS on the same GEMM
# (bench/conv.py --gemm; random operands, outputs checked first).  r50_s1_1x1_64 (K = 64: one K
# step a 256 x 64 tile, 51 MB moved: memory-bound, tlc 2.99 TB/s vs cuDNN 3.20 in session 25)
# and r50_s3_1x1_1024 (392 tiles of 4 steps).  The conv's x tile comes through the TMA's im2col
# mode, the GEMM's through a tiled box: if matmul_nt beats the conv at the same shape, a 1x1,
# S = 1, P = 0 im2col tile should be loaded as the plain [N * H * W, C] box it is.
# Two tile variants beside the defaults (each built for sm_90a without spills, 168 registers, 192
# KB of stages): r50_s1_1x1_64 at 128 x 64 on 8 stages (twice the tiles in flight a block),
# r50_s3_1x1_1024 at 128 x 128 on 6 (784 tiles of 4 steps where 128 x 256 makes 392).
# Then the same rows with x's tile as tiled boxes of x seen as [N * H * W, C] (--tiled-1x1:
# schedule/im2col_tma.TILED_IDENTITY, off by default; SASS UTMALDG.2D where the default issues
# UTMALDG.4D.IM2COL, the kernels otherwise instruction for instruction the same: 776 SASS).
# Answer: per row the conv's, matmul_nt's and cuBLAS's TFLOP/s; a variant that beats the
# default by more than 1% becomes that row's config.json rule; if the tiled boxes win on both
# rows, flip TILED_IDENTITY.
python3 bench/conv.py --gemm --min-ms 3 --only r50_s1_1x1_64,r50_s3_1x1_1024 \
  --variant r50_s1_1x1_64:BM=128,stages=8 --variant r50_s3_1x1_1024:BM=128,BN=128,stages=6 2>&1 | grep -v Warning
TLC_CACHE_DIR=$TLC_CACHE_DIR/tiled python3 bench/conv.py --tiled-1x1 --min-ms 3 --only r50_s1_1x1_64,r50_s3_1x1_1024 \
  2>&1 | grep -v Warning
