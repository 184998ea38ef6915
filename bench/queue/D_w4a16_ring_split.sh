#!/bin/bash
# limit: 12
# Helper D, session 26 (#18, w4a16 decode; prepared on the CPU, no device that session).
# Asks: does split-K inside the kernel (schedule/ring_split_k.py's RING_SPLIT, off by default:
# std.gemm's matmul_w4a16 takes K in parts along the grid's z (since session 27 it alone: the
# rule takes a ring that dequantizes packed weights in registers, where before it split every
# cp.async GEMM on sm_80), and the parts meet after the loop,
# tl::split_k_meet: each stores its f32 tile into a slot and counts itself arrived, the last to
# arrive adds the slots in part order and runs the epilogue) beat the split-K kernel plus its
# second launch, splitk_reduce (3.0 us of the M = 1 split-K's ~24 in session 25's Nsight Compute
# run)?  bench/lowbit.py --ring-split, a process with caches of its own: its "w4a16" rows are the
# split matmul_w4a16 (M = 1: config.json's BM = 8, K steps of 256 on 3 stages, 48 KB, 4 blocks an
# SM: 4 parts at N = K = 8192; M = 16: K steps of 512 on 2 stages, 72 KB, 3 blocks an SM: 3
# parts; M = 64's 132 KB hold one block an SM: not split, so not asked), "w4a16 BK=512 stages=2"
# the split kernel at the split-K kernel's M = 1 tiles (K steps of 512 on 2 stages, 56 KB: 4
# blocks an SM, 4 parts), its "split-K"
# rows the author's matmul_w4a16_splitk + splitk_reduce (three grid dimensions: not split again),
# F.linear f16 in the same process; every output checked against F.linear in f32 first (the
# meeting's correctness on the GPU: the interpreter and nvcc only so far,
# tests/schedule/test_ring_split_k.py).
# Answer (ANSWER:): each split row / best split-K row at M = 1 and 16: flip RING_SPLIT = True if
# the better split row is <= 0.98 at both and no row failed its check (config.json's M = 1 rule
# for matmul_w4a16 takes BK = 512 on 2 stages if that row is the better one); a failed check of
# a split row keeps it off.
set -u
mkdir -p /tmp/tlc-cache-D-ring
TLC_CACHE_DIR=/tmp/tlc-cache-D-ring timeout 11 python3 bench/lowbit.py --w4a16 --quick --m 1,16 --ring-split \
  --only "w4a16,w4a16 BK=512 stages=2,w4a16 split-K 2,w4a16 split-K 4" | tee /tmp/D_ring.txt
python3 - <<'PY'
import sys
sys.path.insert(0, "bench")
from lowbit import printed_w4a16_rows
rows = {}
for (row, v), (t, _) in printed_w4a16_rows("/tmp/D_ring.txt").items():
    rows.setdefault(row, {})[v] = t
for row, r in sorted(rows.items()):
    split = [t for v, t in r.items() if v.startswith("w4a16 split-K")]
    for v in ("w4a16", "w4a16 BK=512 stages=2"):
        if v in r and split:
            print(f"ANSWER: ring split {row} {v}: / best split-K {r[v] / min(split):.3f} "
                  f"({r[v]:.1f} vs {min(split):.1f} us; F.linear {r.get('F.linear f16', 0):.1f})")
PY
