# limit: 90
# Issue #18, session 22, helper 97: std.gemm's w4a16 decode at N = K = 8192, groups of 128
# (bench/lowbit.py --w4a16 --quick: each contender's output checked against the f32 product
# of the dequantized weight before it is timed, F.linear f16 in the same run).  Last measured
# (s17/s18): M = 1 gemv 24.5 us (1.63x F.linear, 0.33 of copy over its 32 MiB), M = 16 30.7 us
# (1.17x), M = 64 40.2 (0.96x); goal 3.0x.  What the CPU found (nvcc 13.0 -Xptxas -v, SASS):
#  - the gemv is issue-bound: ~5 SASS a weight (LOP3 + FADD + FFMA each, the activations' f32
#    conversion behind a barrier), 16 warps an SM (N * BKW / 16 threads in all); ~11 us at full
#    issue, so ~45% of issue now.  Contender: BKW=256 on 256 threads, 2 stages, BLOCKS=4 (64
#    registers, no spill; 32 warps an SM, one wave of 512 blocks).
#  - split-K kept a floordiv and pymod per weight (its K step reads bz * steps, whose sign nvcc
#    did not see): 5,152 SASS and 254 registers where the kernel without split-K has 2,480 and
#    64, the ~2x that every earlier split-K row showed.  40cc427 tells nvcc (tl::sized_nonneg):
#    2,552 and 64.  Contenders: M = 1 on tensor cores, BM=8 BK=512 split-K 4 (mma.sync, 48
#    registers, 4 blocks an SM, ~2.5 SASS a weight); M = 16 split-K 2 at BK=512 and M = 64 at
#    BK=256, 2 stages (two blocks an SM of 222 / 195 registers where the default has one of 4
#    warps); M = 16 BK=512 on 3 stages (32 KB of weight in flight an SM where 2 stages hold 16).
#  - splitk_reduce at M <= 16 runs 32 blocks (config.json RN=256): "reduce RN=64" gives 128.
#  - every contender runs through kernel.launcher() since this script's commit (a call with
#    constants bound its arguments each run: host time two calls a run need not hide).
# Read: which contender is fastest at each M against "w4a16" / "w4a16 gemv" (the defaults), to
# be made the config.json rule; times in us and weight/copy.
set -o pipefail
python3 bench/lowbit.py --w4a16 --quick --m 1,16 --json "$OUT/w4a16_decode.json" --only \
  "w4a16,w4a16 gemv,w4a16 gemv BKW=256 256 thr 4 blocks,w4a16 BM=8 BK=512 split-K 4 stages=2,w4a16 BK=512 stages=3,w4a16 BK=512 split-K 2 stages=2,w4a16 BK=512 split-K 2 stages=2 reduce RN=64" \
  2>&1 | tail -17
python3 bench/lowbit.py --w4a16 --quick --m 64 --json "$OUT/w4a16_decode_m64.json" --only \
  "w4a16,w4a16 BK=256 split-K 2 stages=2" 2>&1 | tail -5
