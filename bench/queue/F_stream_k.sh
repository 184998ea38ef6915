#!/bin/bash
# limit: 26
# Helper F, session 26 (#18): does stream-K (tlc/schedule/stream_k.py, ir.StreamK; off by default:
# stream_k.STREAM_K = False, no device this session) speed up the rows whose tiles leave the last
# wave part empty?  r50_s4_1x1_2048 (200 tiles of 8 K steps: the busiest block 16 -> 13 steps),
# r50_s4_3x3_512 (98 tiles of 72 at config.json's 64 x 256: 72 -> 27; also 128 x 256, 50 tiles:
# 72 -> 28 on bigger tiles), dw at r50_s4_3x3_512 (144 tiles of 49 pixel steps at batch 64:
# 98 -> 54) and at r50_s3_3x3_256 (36 tiles of 196, streamed instead of split-K's 3 parts: 66
# -> 54; stream_k.prefer), r50_s3_3x3_256 (98 tiles in clusters of 2: 49 tile pairs on 66
# clusters, 36 -> 27, the multicast kept).  The CPU showed: the walk covers every step once
# (tests/schedule/test_stream_k.py, the C walk = the Python walk through g++), the interpreter
# matches NumPy, nvcc builds it without spills (168 registers, as unstreamed), the producer's
# stepped loop unchanged in SASS (no division a step).  Each process times cuDNN too; every
# output is checked against PyTorch's f32 before it is timed (bench/conv.py).  Session 27 (B):
# tl::StreamWalk counts in 32 bits (the producer's 64-bit divisions spilled std.gemm's matmul_tn
# and matmul_skinny), a one-warpgroup ring's producer 48 registers; scripts/options-flip with it
# on: no std kernel or example spills more than off but matmul_epilogue's plain nvcc build (72 B
# against 60; its default spills: NVRTC 52 on against 84 off).
# Answer: the tables' ratios per row, off (runs 1 and 3) against on (runs 2 and 4).  Flip
# stream_k.STREAM_K to True if the streamed rows gain and none loses more than 1%; std.gemm's
# clustered matmul streams too when it is on (8192^3: 1024 tile pairs on 66 clusters, the busiest
# 1024 -> 993 steps; 4096^3 not): time bench/splitk_r3.py's GEMMs both ways before the flip.
R=r50_s4_1x1_2048,r50_s4_3x3_512,r50_s3_3x3_256
V=r50_s4_3x3_512:BM=128,BN=256,stages=3
# (in pairs, off then on, so that a run the limit cuts keeps whole pairs)
SK=$TLC_CACHE_DIR/stream_k  # the stream-K processes' own cache: its keys do not hold the switch
python3 bench/conv.py --min-ms 3 --only $R --variant $V 2>&1 | grep -v Warning
TLC_CACHE_DIR=$SK python3 bench/conv.py --stream-k --min-ms 3 --only $R --variant $V 2>&1 | grep -v Warning
python3 bench/conv.py --bwd --min-ms 3 --only r50_s3_3x3_256,r50_s4_3x3_512 2>&1 | grep -v Warning
TLC_CACHE_DIR=$SK python3 bench/conv.py --stream-k --bwd --min-ms 3 --only r50_s3_3x3_256,r50_s4_3x3_512 2>&1 | grep -v Warning
