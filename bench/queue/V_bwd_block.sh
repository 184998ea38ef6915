#!/usr/bin/env bash
# limit: 40
# Helper B, session 28 (#19): std.attention's flash_bwd took the block mask session 28 timed as
# bench/B_bwd_block_mask.tl (q_B_bwd_block_mask: D=128 B=4 H=32 S=4096 f16 6.101 ms = 0.891x cuDNN,
# causal 3.427 = 0.911x, against std with CAST_PAIRS 6.392 = 0.850x, 3.593 = 0.869x), now its
# default (MASK_BLOCKS True; config.json's head dim 129-256 rule keeps the mask element by element,
# MASK_BLOCKS False, where the block mask made ptxas serialize the wgmmas, C7518), with the LSE in
# log2 units from grid0 and both loops' back-to-back products cleared by scale-d 0 (schedule/
# scale_d_clears.py RING_SCALE_D_CLEARS "reused": the timed build's "all", for flash_bwd alone: of 1992 std/example
# builds at sm_90a and sm_80 only flash_bwd's CUDA changed; its sm_90a D=128 CUDA equals the timed
# variant's but for dQ's H // HK type).  CPU: the interpreter's gradients as scheduled for sm_90a
# against NumPy (ragged, causal, GQA, whole blocks, MASK_BLOCKS False); ptxas -v: no spills, no
# C75xx at D=64/128/256, f16/bf16, sm_90a and sm_80.  No GPU test has run the new std build yet.
# Runs: tests/gpu/test_bwd_block_mask_gpu.py (the D=64/128 config.json tiles, f16 and bf16) and
# test_flash_bwd_against_numpy cases 8, 9 (D=256, MASK_BLOCKS False); then flash_bwd D=128 full and
# causal: std (block mask) beside elem (MASK_BLOCKS=False at the same tiles), cuDNN in the process.
# Answer: the tests' pass/fail line; per row "<label> <ms> <x>x cudnn".  If a test fails, revert the
# commit that made the block mask std's default; if elem ties or beats std (within 2%) on both masks,
# make MASK_BLOCKS False the default again.
export PYTHONUNBUFFERED=1
timeout 22 python3 -m pytest -q -x -n 0 -m gpu tests/gpu/test_bwd_block_mask_gpu.py tests/gpu/test_attention_gpu.py -k \
    "block_mask or test_flash_bwd_against_numpy and (8- or 9-)" 2>&1 | tail -4
TILES=BM=128,THREADS=256,BN=128,BQ=64,KV_STAGES=3
timeout 14 python3 bench/attention_bwd.py --causal both --min-ms 20 std=std:flash_bwd \
    elem=std:flash_bwd:$TILES,MASK_BLOCKS=False 2>&1 | grep -v Warning
