# limit: 120
# Issue #13, session 21, helper 95: std.moe's routing rows, 3.85x (topk_softmax), 9.98x
# (topk_sigmoid) and 2.46x (topk_grouped) torch but 0.05, 0.18 and 0.02 of copy (session 20).
# Not memory-bound: they issue instructions.  On the CPU (nvcc 13.0 sm_90a): topk_softmax's row
# tile at the row's constants (BM = 8 tokens x BE = 64 experts, 128 threads) is
# tl::Blocked<8, 64, 128, 8>, runs of 8: 64 threads hold the tile, the other two warps idle, and
# each of the K = 8 rounds is a max and a min over 8 slots and 3 shuffles, a select and a mask
# of 8, an expf and a barrier: ~1750 SASS instructions a thread a block, 2^21 / 8 blocks x 4
# warps x 1750 / 132 SMs / 4 a cycle = 3.5 M cycles = 1.75 ms at 1.98 GHz, of the measured
# 2.07 ms.  More tokens a block fill the idle warps and share each round's shuffles and barrier:
# BM = 16 (every thread 8 slots) and 32 (16) at 128 threads; topk_grouped's rows at BM 8 /
# 4 blocks and BM 4 at 64 threads.  ptxas -v (sm_90a): 40-122 registers, no spills.  Every
# contender's output checked before it is timed (bench/ops.py's measure, 10 ms).  Question:
# which tile gives the fewest instructions a token, to make the rows' (and the defaults') choice.
python3 - <<'PY'
import sys
sys.path.insert(0, "bench")
from row_variants import run

soft, sig = {"T": "f16", "BE": 64}, {"T": "f32", "BE": 64}
grouped = {"T": "f32", "BE": 256, "GB": 8}
run([("topk_softmax", "now", None, {}), ("topk_softmax", "BM16", None, {**soft, "BM": 16}),
     ("topk_softmax", "BM32", None, {**soft, "BM": 32}),
     ("topk_sigmoid", "now", None, {}), ("topk_sigmoid", "BM16", None, {**sig, "BM": 16}),
     ("topk_sigmoid", "BM32", None, {**sig, "BM": 32}),
     ("topk_grouped", "now", None, {}), ("topk_grouped", "BM8/B4", None, {**grouped, "BM": 8, "BLOCKS": 4}),
     ("topk_grouped", "BM4/T64", None, {**grouped, "THREADS": 64, "BLOCKS": 8})])
PY
