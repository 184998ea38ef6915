# limit: 120
# Issue #13, session 21, helper 95, second round (the first: bench/results/data_moe_rows-h200-
# twentyfirst.txt: moe_align_block_size 0.74x -> 3.14x torch, gather 0.84 -> 0.91 of copy,
# scatter 0.21 -> 0.72 (1.00x -> 3.36x torch), expert_histogram 0.60 -> 0.70, moe_permute 0.52 ->
# 0.63).  Every contender's output checked before it is timed (bench/ops.py's measure, 10 ms).
# Questions:
#  1. expert_histogram at 0.70 of copy, where pure reads reach 0.99 (sum_axis1): its blocks end
#     in one global atomic a nonzero bin, 8192 blocks x 64 experts = 524 K atomics on 64 adjacent
#     words (two L2 lines); at one an L2 clock a line that is ~150 us of its 178.  BLOCK 32768
#     (131 K atomics) and 131072 (33 K), and 512 threads at 32768 (29 registers, 4 LDG.128 a
#     thread a step as now; ptxas -v sm_90a i64, no spills at any of them).
#  2. moe_permute (320 MiB: 288 written, x's 32 MiB read from L2 8 times) at 0.63, as repeat
#     (256 of 320 MiB written) at 0.57, where moe_unpermute (288 read, 32 written) is at 0.95:
#     the write-only ceiling, torch's zero_() of 256 MiB (checked zero after), and variants:
#     BD 4096 at 256 threads (estimate: 6 blocks), BD 2048 at 128 x 16 blocks (25 registers).
#  3. gather and scatter after 8dc5acc (their shared row copied in and out as 16-byte vectors;
#     the first round timed 02c25d3), scatter also after 65c1840 (y read only where no source
#     wrote: none here, so at most 1.0 of copy, where reading the row first bounded it at 0.86).
python3 - <<'PY'
import sys
import torch
sys.path.insert(0, "bench")
from row_variants import run

y = torch.ones(1 << 27, dtype=torch.float16, device="cuda")
start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
for _ in range(3):
    y.zero_()
torch.cuda.synchronize()
start.record()
for _ in range(50):
    y.zero_()
end.record()
torch.cuda.synchronize()
assert bool((y == 0).all()), "zero_ left a nonzero"
ms = start.elapsed_time(end) / 50
print(f"write-only: torch zero_ of 256 MiB f16: {ms * 1e3:.1f} us, {(1 << 28) / ms / 1e6:.0f} GB/s", flush=True)
del y
hist, f16 = {"I": "i64"}, {"T": "f16"}
run([("expert_histogram", "now", None, {}), ("expert_histogram", "B32K", None, {**hist, "BLOCK": 32768}),
     ("expert_histogram", "B128K", None, {**hist, "BLOCK": 131072}),
     ("expert_histogram", "B32K/512", None, {**hist, "BLOCK": 32768, "THREADS": 512}),
     ("moe_permute", "now", None, {}), ("moe_permute", "4096/256", None, {**f16, "BD": 4096, "THREADS": 256, "BLOCKS": 0}),
     ("moe_permute", "2048x16", None, {**f16, "BD": 2048, "THREADS": 128, "BLOCKS": 16}),
     ("gather", "now", None, {}), ("scatter", "now", None, {}), ("moe_align_block_size", "now", None, {})])
PY
