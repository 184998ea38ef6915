# limit: 90
# Issue #13, session 22 (helper 99): std.reduce's column scans after 73337c7, whose
# tl::cumsum_shared keeps a thread's chunk of 32 rows in registers (32 loads issued together, a
# chain of 32 combines) where it ran 32 dependent load-combine-store steps in shared memory.
# Before (bench/results/ops-h200-twentieth.txt, (16384, 8192) f16): cumsum/cumprod/cummax/
# cummin_axis0 0.59/0.61/0.52/0.52 of copy (cumsum 210 us = 3.3 us a tile of 256 rows for each
# of the 256 blocks; 0.9 needs <= 2.17 us).  On the CPU (nvcc 13.0, sm_90a): the tile loop 936 ->
# 867 SASS instructions, the scan's first pass 157 serial -> 71, 64 registers (cummax/cummin 48),
# no spill in f16/bf16/f32; the template checked as host code (tests/codegen/
# test_scan_columns_host.py).  Predicted 0.85-0.95 of copy.  Questions, every output checked
# before it is timed:
# (1) the four rows now (bench/ops.py against torch and copy);
# (2) the tiles: THREADS=512 (chunks of 16, 32 warps an SM), BM=128 at 4 stages, BM=512 at 512
#     threads and 2 stages, against the defaults (BM=256, BN=32, 3 stages, 256 threads);
# (3) the new template path right on the GPU at ragged shapes ((1000, 3001), (4097, 33), ...):
#     cumsum f16 and i32, cumprod bf16, cummax f16, cummin f32.
timeout 35 python3 bench/ops.py --only cumsum_axis0,cumprod_axis0,cummax_axis0,cummin_axis0 --min-ms 10 \
  --no-chart --json "$OUT/scans_axis0.json" 2>&1 | tail -7
timeout 30 python3 bench/config_sweep.py --min-ms 10 --only cumsum_axis0,cummax_axis0 2>&1 | tail -9
T=tests/gpu/test_reduce_gpu.py::test_against_numpy
timeout 20 python3 -m pytest -q -m gpu -p no:cacheprovider "$T[cumsum-f16-axis0]" "$T[cumsum-i32-axis0]" \
  "$T[cumprod-bf16-axis0]" "$T[cummax-f16-axis0]" "$T[cummin-f32-axis0]" 2>&1 | tail -3
