#!/bin/bash
# limit: 24
# Helper D, session 26 (#18, w4a16 decode; prepared on the CPU, no device that session).
# Asks: (1) does tl::copy_g2s's cheaper issue code, codegen/copies.py ROUND_STEPS (a thread's
# source one pointer stepped a round, its shared destination a constant offset; since session 27
# (helper A) only on the copies of packed weights, Copy.packed: the w4a16 weight tile, which
# schedule/packed_tiles.py marks, so that flipping it changes no other kernel) with
# CLIP_ROWS_MAX = 8 (a decode step's 8-row activation tile at M = 1 zero-filled by cp.async's
# source size instead of copy_g2s's edge loop), speed up std.gemm's w4a16 decode kernels?  Both
# are off by default; bench/lowbit.py --copy-forms turns them on, in a process of its own with
# caches of its own (the program cache's keys do not hold them).  (2) does splitk_reduce with its
# parts unrolled (bench/splitk_reduce_unrolled.tl) beat std's loop, same process?
# CPU evidence (nvcc 13.0 sm_90a, tests/codegen/test_copies_rounds.py): matmul_w4a16_splitk at
# M = 1's tiles (BM=8, K steps of 512, 2 stages, 4 parts), the weight tile's 8 cp.async a thread
# 198 / 167 -> 47 / 61 SASS (prologue / K loop); a K step's issue code a thread ~580 -> ~260
# SASS of ~1,200 (the dequantization and mma ~620, unchanged); session 25's Nsight Compute run
# put the kernel at 0.62 issued warps a cycle a scheduler, 16 warps an SM: issue-bound.  The
# gemv's registers 128 -> 96 with the forms (the same 4 blocks an SM: shared memory).  The
# unrolled reduce: parts 0-1's loads then 2-3's, two load latencies where the loop waits four
# (splitk_reduce 3.0 us of the M = 1 split-K's ~24 in session 25).
# Each timed variant's output is checked against F.linear in f32 first (bench/lowbit.py), and
# F.linear f16 is timed in each process.
# (3) At M = 16, does "w4a16 BK=256 split-K 4 stages=2" (K steps of 256 in 4 parts: 104 / 120
# registers without / with the forms, 4 blocks an SM) beat config.json's split-K 2 at K steps of
# 512 (222 / 200 registers: wgmma's register A holds the whole step's weights, 2 blocks an SM)?
# Answer (one line each, ANSWER:): forms on/off time ratio of each variant at M = 1 and 16: flip
# copies.ROUND_STEPS = True and CLIP_ROWS_MAX = 8 if the ratios of "w4a16 split-K 4" (M = 1),
# "w4a16 split-K 2" (M = 16) and "w4a16 gemv" are all <= 0.98 and none > 1.01; (3) from the
# printed rows: config.json's M = 9..16 split-K rule takes BK = 256 in 4 parts if that row's time
# is below split-K 2's in the same process; "unrolled reduce" / std at each M:
# give std's splitk_reduce `for s in unroll(S)` if every ratio <= 0.98 (the unrolled contender
# runs its own defaults, RM = 16, RN = 256: config.json's for std at M <= 16).
set -u
echo "== tl::copy_g2s as today (defaults)"
timeout 11 python3 bench/lowbit.py --w4a16 --quick --m 1,16 \
  --only "w4a16 split-K 2,w4a16 split-K 4,w4a16 gemv,w4a16 split-K 4 unrolled reduce,w4a16 BK=256 split-K 4 stages=2" \
  | tee /tmp/D_copies_off.txt
echo "== tl::copy_g2s with --copy-forms (ROUND_STEPS, CLIP_ROWS_MAX = 8)"
mkdir -p /tmp/tlc-cache-D-forms
TLC_CACHE_DIR=/tmp/tlc-cache-D-forms timeout 11 python3 bench/lowbit.py --w4a16 --quick --m 1,16 --copy-forms \
  --only "w4a16 split-K 2,w4a16 split-K 4,w4a16 gemv" | tee /tmp/D_copies_on.txt
python3 - <<'PY'
import sys
sys.path.insert(0, "bench")
from lowbit import printed_w4a16_rows
off, on = printed_w4a16_rows("/tmp/D_copies_off.txt"), printed_w4a16_rows("/tmp/D_copies_on.txt")
for (row, v), (t, _) in sorted(on.items()):
    if v != "F.linear f16" and (row, v) in off:
        print(f"ANSWER: copy forms {row} {v}: on/off {t / off[row, v][0]:.3f} ({t:.1f} vs {off[row, v][0]:.1f} us)")
for (row, v), (t, _) in sorted(off.items()):
    std = off.get((row, v.replace(" unrolled reduce", "")))
    if "unrolled reduce" in v and std:
        print(f"ANSWER: unrolled reduce {row} {v}: unrolled/std {t / std[0]:.3f} ({t:.1f} vs {std[0]:.1f} us)")
PY
