# limit: 120
# Issue #13, session 21 (lead): 63062da scans a fragment along its rows in registers (each
# thread's runs, the runs' totals through shared memory) and std.reduce's cumsum, cumprod, cummax
# and cummin use it.  Session 20's table (bench/results/ops-h200-twentieth.txt, (16384, 8192) f16,
# of copy / vs torch): cumsum 0.75 / 3.36x, cumprod 0.75 / 3.38x, cummax 0.90 / 7.69x, cummin
# 0.90 / 7.71x.  CPU: cumsum f16 sm_90a 1384 -> 1208 SASS instructions, no shared tile.
# Question 1: the GPU tests of tests/programs/cumsum.tl (the new fragment-row kernels: f32 rows
# both ways, f16 max/min with nans, i32 wrapping sums, f32 products, a carried row, a gemm
# accumulator on sm_90a) and std.reduce's scans.  Question 2: the four rows now (bench/ops.py
# checks each contender's output against float64 before it is timed).
python3 -m pytest -m gpu -q -p no:cacheprovider tests/gpu/test_cumsum_gpu.py 2>&1 | tail -5
python3 -m pytest -m gpu -q -p no:cacheprovider tests/gpu -k "cumsum or cumprod or cummax or cummin" 2>&1 | tail -3
python3 bench/ops.py --only cumsum,cumprod,cummax,cummin --min-ms 10 --no-chart
