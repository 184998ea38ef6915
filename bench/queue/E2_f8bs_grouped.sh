#!/usr/bin/env bash
# limit: 28
# Asks (#18, helper E2, session 26): does std.gemm's grouped (MoE) block-scaled f8 kernel,
# matmul_grouped_f8_blockscaled, gain from 128 x 256 tiles (BN=256: two 128-column halves into
# one partial-sum fragment, as matmul_f8_blockscaled's), at DeepSeek-V3's expert GEMMs: 8 experts
# of ragged groups (one empty), 8192 rows in all, up/gate N = 4096 x K = 7168 and down N = 7168 x
# K = 2048.  bench/f8bs_probe.py --grouped, one process, each row checked against the groups'
# dequantized f32 products (4 bf16 units of the reference's RMS) before it is timed; the vendor row
# is torch._scaled_mm per tensor on the dense product of the same flops (no grouped block-scaled
# f8 GEMM in PyTorch).  Then the GPU tests of the grouped kernel at BN=256 (3 and 4 stages, ragged
# groups, N = 520: a half partly outside).
# CPU (nvcc 13.0 and NVRTC 13.5, sm_90a, as the runtime builds it: TL_TMA_FLAGS): BN=256 spilled
# 284 bytes a thread (std's matmul_f8_blockscaled BN=256 204, at 3 and 4 stages, with or without
# PREFETCH_RING_LOADS): not the tile walk's scalars (a walk of none spilled more) but the two
# halves' products placed by ptxas in two 64-register windows, the accumulators moved around them
# through local memory.  schedule/dead_stores.py (the scaled partial sums values of their loops,
# no store to `part`) + codegen/sm90.py RING_SCALE_D_TIED (the clearing K step reads the last
# product's registers, "+f") keep one window: 0 spills, a K step 8 QGMMA.64x128x32 + 128 FFMA, 250
# instructions (the spilling build 311, 28 STL + 30 LDL).  No default kernel's code changes.
# Second (own process and TLC_CACHE_DIR: the program cache's key ignores the switch), the same
# kernels with codegen/store_pairs.py STORE_PAIRS on: the group-guarded epilogue's register pairs
# stored as one 4-byte bf16x2 each where inside and aligned (sm_90a SASS: 32 STG.E a thread a
# 128 x 128 tile instead of 64 STG.E.U16, no spills), checked at the down shape and at an odd N
# (1023: rows of odd length, pairs unaligned or half outside: the element path) before timing.
# Answer: each row's TFLOP/s and x the dense per-tensor row.  grouped BN=256 s3 or s4 faster than
# grouped (default) at both shapes: a config.json rule for matmul_grouped_f8_blockscaled on sm_90a
# (BN 256 with the faster stages where TOTAL_M / E >= 1024 and N >= 4096); slower: keep BN 128.
# "pairs" rows faster than the first command's same rows at 8x8192x7168x2048 (by > 1%, no row
# slower): STORE_PAIRS on by default (matmul_grouped too, the same epilogue).
export PYTHONUNBUFFERED=1
python3 bench/f8bs_probe.py --grouped 8x8192x4096x7168,8x8192x7168x2048 --ms 10 2>&1 | grep -v Warning
TLC_CACHE_DIR=$(mktemp -d) python3 bench/f8bs_probe.py --store-pairs --grouped 8x8192x7168x2048,8x2048x1023x1024 --ms 10 \
  --configs '{"grouped (default) pairs": {}, "grouped BN=256 s3 pairs": {"BN": 256, "stages": 3}}' 2>&1 | grep -v Warning
python3 -m pytest -q -m gpu -p no:cacheprovider tests/gpu/test_gemm_shapes_gpu.py -k "grouped_f8 and BN256" 2>&1 | tail -4
