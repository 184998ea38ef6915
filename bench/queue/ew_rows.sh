# limit: 120
# Issue #13, session 20: four std rows below PyTorch on the H200 ((16384, 8192) f16, ops table
# this session: tlc / torch): hypot 0.83 / 1.00 of copy (0.82x), sin 0.78 / 0.82 (0.96x), cos
# 0.76 / 0.79 (0.97x), index_select 0.90 / 0.95 (0.95x).  Measured on the CPU (nvcc 13.0 sm_90a,
# the TL_WHOLE_RUNS build the runtime compiles first, SASS instructions an element on the hot
# path of the kernel at the row's shape, loads and stores included; before = feef147):
# - hypot 46.6 -> 23.7: std.elementwise's hypot computed both arms of a where for every element
#   (sqrt(a^2 + b^2), and max * sqrt(1 + (min / max)^2) with a division and a second root); now
#   both operands scaled by the power of two 2^-e of the larger one (exact), one root, times 2^e.
# - sin 30.2 -> 19.8, cos 31.2 -> 20.8: sinf / cosf with their range check and Payne-Hanek slow
#   path in line for every element (an f16 argument never needs it) became tl::fast_sin_near /
#   fast_cos_near for 16-bit results: a reduction by pi, one odd polynomial, no branch
#   (scripts/ew-sass: 24.6 -> 14.1 and 25.6 -> 15.1 an element, CUDA's own functions 24.6, 25.6).
# - index_select: a block of grid(A * K * cdiv(C, BC)) divided its index four times by
#   tl::floordiv / tl::pymod (checks of a zero or negative divisor) before it could load idx[k]:
#   the load was the 159th instruction, the first 16-byte load of x the 238th (NVRTC's assumption
#   that sizes are not negative on); with A, K and C known from 1 (the kernel returns where one is
#   below 1) they are unsigned divisions: 54th and 134th, 356 -> 250 instructions a thread.
# Question: do the rows reach PyTorch (>= 1.0x) and 0.9 of copy?  `bench/ops.py` times each row
# with PyTorch in the same run, every output checked against float64 before its time counts.
set -e
python3 bench/ops.py --min-ms 10 --no-chart --only hypot,sin,cos,index_select --json "$OUT/ew_rows.json"
