#!/bin/bash
# limit: 34
# Helper D, session 26 (#18, w4a16 decode at M = 16; prepared on the CPU, no device that session).
# Asks: do std.gemm's w4a16 decode kernels at M = 16 run faster on mma.sync than on wgmma when
# their register-A fragment is large (schedule/operand_layout.py WGMMA_REGISTER_A_MAX = 32, off by
# default: 0)?  wgmma reads all of A's registers until its wait, so the K step's dequantized
# weights stay live whole: the split-K kernel at M = 16's tiles (K steps of 512) takes 222
# registers, 2 blocks of 4 warps an SM; on mma.sync (which reads its registers at issue) 100, 3
# blocks an SM (then shared memory bound); at K steps of 256, 104 -> 52 registers, 5 blocks (nvcc
# 13.0 sm_90a, -DTL_ASSUME_SIZES).  bench/lowbit.py --option in a process of its own (own caches),
# F.linear f16 in it, every output checked first; the same rows without the option in the process
# before it, with two M = 16 rows whose answers session 28 lost (D_w4a16_copies.sh's first process
# timed out before M = 16): "w4a16 BK=256 split-K 4 stages=2" against config.json's split-K 2 at
# K steps of 512, and splitk_reduce with its parts unrolled.  Session 28 ran this at 11 s a
# process: both timed out compiling before a row printed (the D2 process of 15 rows at two Ms took
# under 28 s); 16 s each now.  Session 28 also timed the TMA ring with the option ("w4a16 TMA ring
# mma.sync", M = 16: 27.4 us, as without it): a different kernel, which this does not answer.
# Answer (ANSWER:): each row's speedup over F.linear with the option and without; set
# WGMMA_REGISTER_A_MAX = 32 if "w4a16 split-K 2" (config.json's M = 16 kernel) gains >= 2% and the
# other row does not lose; config.json's M = 9..16 split-K rule takes K steps of 256 in 4 parts if
# that row is the faster in the same process; "unrolled reduce" / std: give std's splitk_reduce
# `for s in unroll(S)` if <= 0.98 here and at M = 1 (session 28: 0.992, a tie, so it stays).
set -u
timeout 16 python3 bench/lowbit.py --w4a16 --quick --m 16 \
  --only "w4a16 split-K 2,w4a16 BK=256 split-K 4 stages=2,w4a16 split-K 2 unrolled reduce" | tee /tmp/D_mma_off.txt
mkdir -p /tmp/tlc-cache-D-mma
TLC_CACHE_DIR=/tmp/tlc-cache-D-mma timeout 16 python3 bench/lowbit.py --w4a16 --quick --m 16 \
  --option tlc.schedule.operand_layout.WGMMA_REGISTER_A_MAX=32 --only "w4a16 split-K 2,w4a16 BK=256 split-K 4 stages=2" | tee /tmp/D_mma.txt
python3 - <<'PY'
import sys
sys.path.insert(0, "bench")
from lowbit import printed_w4a16_rows
on, off = printed_w4a16_rows("/tmp/D_mma.txt"), printed_w4a16_rows("/tmp/D_mma_off.txt")
for key, (_, x) in sorted(on.items()):
    if key[1] != "F.linear f16" and x:
        print(f"ANSWER: mma.sync register A {key[0]} {key[1]}: {x:.2f}x F.linear with it, "
              f"{off[key][1]:.2f}x without" if key in off and off[key][1] else
              f"ANSWER: mma.sync register A {key[0]} {key[1]}: {x:.2f}x F.linear with it (no run without)")
for (row, v), (t, _) in sorted(off.items()):
    std = off.get((row, v.replace(" unrolled reduce", "")))
    if "unrolled reduce" in v and std:
        print(f"ANSWER: unrolled reduce {row} {v}: unrolled/std {t / std[0]:.3f} ({t:.1f} vs {std[0]:.1f} us)")
PY
