#!/bin/bash
# limit: 30
# Helper D2, session 26 (#18, w4a16 decode; prepared on the CPU, no device that session).
# Asks: does the int4 weight stream through the TMA ring (schedule/dequant_ring.py DEQUANT_RING,
# off by default: warp specialization takes std.gemm's matmul_w4a16 and matmul_w4a16_splitk, a
# producer warpgroup loading W4, A, scales and zeros by UTMALDG into a ring of mbarrier stages, the
# consumer warpgroup dequantizing and multiplying on its stage and issuing no copy code) beat
# their cp.async rings, and std's best decode kernel, at M = 1 and 16 (N = K = 8192, g128)?
# CPU evidence (nvcc 13.0 sm_90a, TL_ASSUME_SIZES as NVRTC builds; tests/schedule/
# test_dequant_ring.py): no spills (240 registers: one block of 128 + 128 threads an SM, setmaxnreg
# 40 / 240); no LDGSTS anywhere, UTMALDG.2D in the producer's loop; the consumers' loop a K step:
# matmul_w4a16 M = 1 (BM 8, BK 256) 489 SASS (16 HMMA, 24 LDS + 8 LDS.U8, no global access),
# where helper D counted ~580 of copy issue alone in a cp.async K step of 512; split-K (BK 512)
# 907; M = 16 (BK 512, wgmma register A) 1,068.  A warp-specialized block holds an SM alone (240
# registers a consumer): one consumer warpgroup is one warp a scheduler, little to hide the
# dequantization's latencies with (the cp.async kernels run 4 blocks an SM).  So a dequantizing
# ring whose gemm is mma.sync (M <= 8) runs up to DEQUANT_BLOCKS = 3 blocks an SM without
# setmaxnreg (matmul_w4a16 at M = 1: 56 registers, split-K 71, no spills; the launch fills the
# SMs as the occupancy calculator says); "TMA ring 1 block an SM" is the setmaxnreg form; "BN=128
# 256 thr split-K 2" gives a lone block two consumer warpgroups (168 registers, no spills); at
# M = 16 "TMA ring mma.sync" adds D's WGMMA_REGISTER_A_MAX = 32 (mma.sync: 3 blocks an SM, 72
# registers, no spills) where the wgmma ring keeps one block.  One process (bench/lowbit.py's "options" rows:
# each switch set from a copy of std.gemm at a path of its own): the "w4a16 TMA ring" rows beside
# the same kernels and tiles without it ("w4a16", "w4a16 split-K 4/2"), std's M = 1 GEMV, helper
# D's switches (copy forms, split inside the kernel) and F.linear f16; every output checked
# against F.linear in f32 before its time counts (bench/lowbit.py, 8 f16 units).
# Answer (ANSWER:, one line each M): TMA/cp.async ratio of each pair (same kernel, same tiles) and
# the best row against F.linear.  Flip dequant_ring.DEQUANT_RING = True if both pairs' ratios are
# <= 0.98 at M = 1 and at M = 16 and no TMA row failed its check (then config.json takes the
# fastest TMA row's tiles at each M, and std's M = 1 choice its kernel if it beats the GEMV); a
# failed check keeps it off.
set -u
timeout 28 python3 bench/lowbit.py --w4a16 --quick --m 1,16 \
  --only "w4a16,w4a16 gemv,w4a16 split-K 4,w4a16 split-K 2,w4a16 TMA ring,w4a16 TMA ring 1 block an SM,w4a16 TMA ring mma.sync,w4a16 TMA ring BK=256 stages=6,w4a16 TMA ring BK=512 stages=4,w4a16 TMA ring split-K 4,w4a16 TMA ring split-K 2,w4a16 TMA ring BN=128 256 thr split-K 2,w4a16 copy forms split-K 4,w4a16 copy forms split-K 2,w4a16 ring split" \
  | tee /tmp/D2_tma.txt
python3 - <<'PY'
import sys
sys.path.insert(0, "bench")
from lowbit import printed_w4a16_rows
text = open("/tmp/D2_tma.txt").read() if __import__("os").path.exists("/tmp/D2_tma.txt") else ""
rows = {}
for (row, v), (t, vs) in printed_w4a16_rows("/tmp/D2_tma.txt").items():
    rows.setdefault(row, {})[v] = (t, vs)
for row, r in sorted(rows.items()):
    pairs = [(a, b) for a, b in (("w4a16 TMA ring", "w4a16"), ("w4a16 TMA ring split-K 4", "w4a16 split-K 4"),
                                 ("w4a16 TMA ring split-K 2", "w4a16 split-K 2")) if a in r and b in r]
    ratios = ", ".join(f"{a} / {b} {r[a][0] / r[b][0]:.3f} ({r[a][0]:.1f} vs {r[b][0]:.1f} us)" for a, b in pairs)
    best = min((t, v) for v, (t, _) in r.items() if v != "F.linear f16")
    lin = r.get("F.linear f16", (0, None))[0]
    print(f"ANSWER: TMA ring {row}: {ratios or 'no pair timed'}; best {best[1]} {best[0]:.1f} us "
          f"= {lin / best[0]:.2f}x F.linear ({lin:.1f} us)")
failed = [l for l in text.splitlines() if "TMA ring" in l and " !! " in l]  # (w4a16_line's failed check)
for l in failed:
    print(f"ANSWER: TMA ring FAILED its check, keep DEQUANT_RING off: {l.strip()[:160]}")
PY
