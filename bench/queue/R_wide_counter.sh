#!/bin/bash
# limit: 40
# Helper R, session 29 (#19 correctness; old28/notes/R.md "next"): sm80.WIDE_STEPPED_COUNTER (off)
# gives a range() loop whose step is not a constant 1 or -1, and whose stop the sizes do not prove
# keeps an i32 counter in range, a 64-bit counter as the cpu target has (a grid-stride loop: its
# start reads a block index, so no launch check sees it; near N = 2**31 its i32 counter's last step
# is undefined).  On, 8 of 1,992 std builds change (scripts/options-flip sm80.WIDE_STEPPED_COUNTER):
# std.conv conv2d's persistent tile loop range(by, cdiv(OW, BM) * N * OH, BLOCKS) at its config
# rules (sm_90a registers 64 -> 64 and 126 -> 128, no spills; sm_80 rule1 C=3,K=7 spills 84
# bytes); user kernels and ports with a grid-stride loop change too.
# CPU (nvcc 13.0, bench/wide_counter.py's kernel, -Xptxas -v, cuobjdump -sass; the same at BLOCKS 264):
# sm_90a 24 -> 30 registers, 96 -> 144 SASS lines, sm_80 24 -> 24, 88 -> 128: nvcc still unrolls
# the loop 4 ways from a (now 64-bit) trip count, but each element's index guard (k >= 0, k < N)
# is tested in full, two ISETP where the i32 loop's counter let it drop one.
# Asks: (1) the 64-bit counter ends at N = 2**31 - 1 with y = 2x (16 GiB of arrays); (2) its cost:
# the grid-stride kernel i32 vs 64-bit counter at N = 2**24 and 2**28, each checked first.
# Answer: "ended, 0 wrong; 2**24 i32 X us / wide Y us (ratio), 2**28 ...".  Within 2% at both:
# flip WIDE_STEPPED_COUNTER on (then runtime/loop_bounds.py's launch check could go); slower:
# keep it off, and try counting trips (for (int t = 0, n = trips(...); t < n; ++t), k = start +
# t * step), which keeps an i32 compare a step.
PYTHONUNBUFFERED=1 python3 bench/wide_counter.py 2>&1 | tail -3
PYTHONUNBUFFERED=1 python3 bench/wide_counter.py --end 2>&1 | tail -2
