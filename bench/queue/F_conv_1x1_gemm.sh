#!/bin/bash
# limit: 18
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
# The ResNet stem (0.54x cuDNN) too, whose 128 x 160 im2col tile and 64 x 160 weight tile feed
# mma.sync through ldmatrix from rows of 320 bytes (20 16-byte chunks: 8 rows on 2 of the 8 bank
# groups, a 4-way conflict); --pad-odd-rows (schedule/smem.ODD_CHUNK_ROWS, off by default) pads
# them to 336 (21 chunks, 8 groups): 72448 -> 75520 bytes of shared memory, 3 blocks an SM still,
# the same registers and spills.  (Neither switch touches the other's rows: the 1x1 rows' operands
# are swizzled, the stem's window is 7 x 7.)
# Answer: per row the conv's, matmul_nt's and cuBLAS's TFLOP/s, then the switched process's; a
# variant that beats the default by more than 1% becomes that row's config.json rule; flip
# TILED_IDENTITY if the tiled boxes win on both 1x1 rows, ODD_CHUNK_ROWS if the stem gains.
python3 bench/conv.py --gemm --min-ms 3 --only r50_s1_1x1_64,r50_s3_1x1_1024,r50_stem_7x7 \
  --variant r50_s1_1x1_64:BM=128,stages=8 --variant r50_s3_1x1_1024:BM=128,BN=128,stages=6 2>&1 | grep -v Warning
TLC_CACHE_DIR=$TLC_CACHE_DIR/switched python3 bench/conv.py --tiled-1x1 --pad-odd-rows --min-ms 3 \
  --only r50_s1_1x1_64,r50_s3_1x1_1024,r50_stem_7x7 2>&1 | grep -v Warning
