#!/usr/bin/env bash
# limit: 22
# Asks (#19: flash_bwd at head dim 256, never timed): what do std's defaults cost there, and does
# BKV=64 (a config.json rule for D=256 on sm_90a) beat them? CPU (nvcc 13.0 sm_90a): at the
# defaults (BKV=128, two consumer warpgroups of 64 keys) the dK/dV grid spills 2292 bytes a
# thread and ptxas serializes its wgmmas (C7511): 64 keys x 256 of dK and of dV is 256 registers
# a thread (tests/stdlib/test_attention_bwd_ring.py's strict xfail). At BKV=64 the warpgroups
# split the scores' columns (S and dP on HGMMA.64x16x16, or 64x32 at BQ=64) and dV, dK run on
# mma.sync from P and dS staged in shared memory, every warp 64 keys x 32 of D: no spills (230
# registers; 243 at BQ=64 in 2 stages), no warp specialization (a cp.async ring).
# B=2 H=16 S=2048 D=256 f16, full mask, one process, cuDNN beside where its backward takes the
# shape; every gradient checked against PyTorch's math backend (32 f16 units) before its time.
# Answer: "<variant> <ms> [<x>x cudnn]". If bkv64 or bkv64q64 beats std by >= 5%, add the faster
# as config.json's flash_bwd rule for D in [129, 256] on sm_90a and turn the xfail around.
export PYTHONUNBUFFERED=1
python3 bench/attention_bwd.py --shape 2,16,16,2048,256 --min-ms 40 \
    std=std:flash_bwd bkv64=std:flash_bwd:BKV=64 bkv64q64=std:flash_bwd:BKV=64,BQ=64,KV_STAGES=2 2>&1
