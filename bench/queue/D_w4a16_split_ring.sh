#!/bin/bash
# limit: 40
# Helper D, session 29 (#18, the 3.0x goal at M = 1; prepared on the CPU, no device this session).
# Asks: does std.gemm's matmul_w4a16 through the TMA ring get faster at M = 1 when the ring is
# split along K with its wave counting the blocks an SM holds (schedule/dequant_ring.py
# DEQUANT_SPLIT, off): N = K = 8192's 128 tiles take K in 2 parts, 256 units, two blocks of 4
# consumer warps on each SM where config.json's M = 1 rule (BM 8, K steps of 256 on 6 stages:
# 2 blocks an SM by shared memory) leaves one block, one consumer warp a scheduler, on 128 of the
# 132 SMs.  What the CPU showed (nvcc 13.0 sm_90a, TL_ASSUME_SIZES): the rule's consumer loop is
# 498 SASS a K step with a chain of 16 HMMA into one accumulator; session 28's 24.2 us over 32
# steps is ~1,500 cycles a step at 1.98 GHz, one issue every ~3 cycles: latency-bound, not
# stream-bound: its ring holds 6 x 8.6 KB of DRAM bytes a block, more than Little's law asks
# for at the goal's 2.72 TB/s (16.5 KB an SM at 0.8 us of latency, 37 KB at 1.8 us).  Split:
# 88 registers under launch bounds (256, 2), 96 KB a block, 0 spills, the same 501-SASS loop.
# Rows (bench/lowbit.py, one process, every output checked against F.linear in f32 first): M = 1
# the rule, split, split at K steps of 512 on 3 stages (2 blocks an SM, 8 steps a part), K steps
# of 512 on 4 stages unsplit (twice the bytes a stage: 893 SASS a step of 512, 1.74 a column
# against 1.95), the GEMV; M = 16 the rule (wgmma, one block an SM), split at the rule (132
# units: one part at N = 8192, the fixup compiled in but not run), split on mma.sync
# (WGMMA_REGISTER_A_MAX = 32) at 2 stages (3 blocks an SM: 3 parts).  Then bench/w4a16_probe.py
# --ring: the ring of the M = 1 rule with the dequantization and the gemm removed (its stream's
# ceiling at these tiles; checked against NumPy's sums first) at K steps of 256 on 6 stages and
# 512 on 4, and the rule's ring with the weight's box alone (one box a stage where the rule issues
# four: 200 box rows a stage), beside matmul_w4a16 and F.linear.  Session 28's two-warpgroup
# split-K 2 row (8 consumer warps an SM, 27.3 us with its reduce) did not beat the rule: if the
# split lands near 24 us too, the limit is the SM's stream (the ring probe near the rule's time;
# fewer box rows then: the weight-alone row), not its consumers.
# Answer (ANSWER:): each M's times; flip DEQUANT_SPLIT on if "w4a16 TMA split" / "w4a16" <= 0.98
# at M = 1 and "w4a16 TMA split M=16 rule" / "w4a16" <= 1.01 at M = 16; a variant at <= 0.98 of
# its M's rule becomes config.json's rule (with DEQUANT_SPLIT where it is a split row); the ring
# probe's time against the rule's says how much of the rule's time is the consumers'.
set -u
timeout 23 python3 bench/lowbit.py --w4a16 --quick --m 1,16 \
  --only "w4a16,w4a16 TMA split,w4a16 TMA split M=16 rule,w4a16 TMA split BK=512 stages=3,w4a16 TMA BK=512 stages=4,w4a16 TMA split mma.sync stages=2,w4a16 gemv" \
  | tee /tmp/D_split.txt
timeout 15 python3 bench/w4a16_probe.py --ring --min-ms 50 | tee /tmp/D_ring.txt
python3 - <<'PY'
import re
import sys
sys.path.insert(0, "bench")
from lowbit import printed_w4a16_rows
rows = printed_w4a16_rows("/tmp/D_split.txt")
for M, rule_split in ((1, "w4a16 TMA split"), (16, "w4a16 TMA split M=16 rule")):
    row = f"decode M={M} N=8192 K=8192 g128"
    rule = rows.get((row, "w4a16"))
    for (r, v), (t, x) in sorted(rows.items()):
        if r != row or v in ("w4a16", "F.linear f16"):
            continue
        vs = f"{x:.2f}x F.linear" if x else "F.linear not timed"
        print(f"ANSWER: M={M} {v}: {t:.1f} us, {vs}" + (f", {t / rule[0]:.3f} of the rule's {rule[0]:.1f} us"
                                                          if rule else ", the rule not timed"))
    split = rows.get((row, rule_split))
    if rule and split:
        print(f"ANSWER: DEQUANT_SPLIT at M={M}: split/rule {split[0] / rule[0]:.3f} ({split[0]:.1f} vs {rule[0]:.1f} us)")
ring = {}
for line in open("/tmp/D_ring.txt"):
    m = re.match(r"^(.+?)\s+([0-9.]+) us\s+([0-9]+) GB/s", line)
    if m:
        ring[m.group(1).strip()] = (float(m.group(2)), int(m.group(3)))
for label, (t, gbs) in ring.items():
    print(f"ANSWER: ring probe run {label}: {t:.1f} us, {gbs} GB/s of int4 weight")
PY
