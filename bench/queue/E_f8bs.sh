#!/usr/bin/env bash
# limit: 42
# Asks (#18: std.gemm's matmul_f8_blockscaled 0.79x torch._scaled_mm per tensor at 8192^3 in
# session 20, goal 0.95x; not timed since): where its time goes, and whether BN=256 (two
# 128-column halves, one partial-sum fragment) wins it back, at 8192^3 and DeepSeek-V3's prefill
# shapes (M = 4096).  bench/f8bs_probe.py, one process a command, the vendor in the same run,
# every output checked first (4 bf16 units of the f32 reference's RMS).
# CPU (nvcc 13.0, sm_90a, cuobjdump): the default's K step is 4 QGMMA.64x128x32 + 64 FFMA a
# thread; the scale loads issue after the first QGMMA and SA * SB is multiplied right after the
# fourth, before the WARPGROUP.DEPBAR, so the warp waits for the loads' L2 latency there; a
# 128 x 128 tile with B multicast reads 24 KB from L2 per 4.2 MFLOP (128 x 256: 32 KB per 8.4).
# BN=256: 8 QGMMA.64x128x32 + 128 FFMA a K step, 192 accumulator registers, no spills (with the
# clears as instructions ptxas spilled 328 bytes a thread: codegen/sm90.py RING_SCALE_D_CLEARS;
# as the runtime builds it, TL_TMA_FLAGS, it still spilled 204 bytes at s3 and s4, pf or not, until
# E2's schedule/dead_stores.py + RING_SCALE_D_TIED kept both halves' products in one register
# window: 251 instructions a K step, none spilled, where it was 315 with 30 STL + 31 LDL);
# at 3 stages both halves staged and stored by the TMA (ir.StagedStore.more), at 4 stages (192 KB
# of ring) from registers: s3 vs s4 also says what the register epilogue costs at each shape.
# Probes: matmul_f8 at 128x128 (the tile with no promotion), bs_const (no scale loads), bs_tma
# (scales through the TMA into the ring: DeepGEMM's path, no clusters), bs_wide (128 x 192),
# bs_pf (the scales read a K step ahead: in its SASS the FMULs of SA * SB read registers loaded
# the step before, the next step's LDGs issue under this step's QGMMAs; persistent, clustered,
# no spills, 64 FFMA a K step as std's).
# Answer: each row's TFLOP/s and x per-tensor.  std BN=256 s3/s4 > std (default) at 8192^3 and
# most DeepSeek shapes: a config.json rule for matmul_f8_blockscaled on sm_90a, BN 256 with the
# faster stages where M, N >= those shapes' (rows where it loses keep BN 128).  f8 128x128 ~ std:
# the tile (L2 bytes a flop) bounds it, not the promotion; bs_const >> std: the scale loads'
# latency: bs_pf ~ bs_const says a K step ahead is enough (the compiler then reads the ring's
# loads so: the third command times std with schedule/prefetch_loads.py on, PREFETCH_RING_LOADS
# True, in its own process and cache); bs_tma >> std: the scales through the ring.
export PYTHONUNBUFFERED=1
python3 bench/f8bs_probe.py --sizes 8192x8192x8192 --ms 30 2>&1 | grep -v Warning
python3 bench/f8bs_probe.py --no-probes --ms 15 \
  --sizes 4096x7168x2048,4096x2112x7168,4096x24576x1536,4096x7168x16384,4096x4096x7168 2>&1 | grep -v Warning
TLC_CACHE_DIR=$(mktemp -d) python3 bench/f8bs_probe.py --prefetch --no-probes --ms 30 --sizes 8192x8192x8192 \
  --configs '{"std (default) pf": {}, "std BN=256 s3 pf": {"BN": 256, "stages": 3}, "std BN=256 s4 pf": {"BN": 256, "stages": 4}}' \
  2>&1 | grep -v Warning
