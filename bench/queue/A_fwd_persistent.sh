#!/bin/bash
# limit: 60
# Helper A, session 26 (#19; no device this session): does std.attention's flash_fwd gain from a
# persistent schedule now that its epilogue is cheap, and does head dim 64 gain from
# FlashAttention 3's three consumer warpgroups?  Session 25 put the gap to cuDNN (0.92x at D=128)
# in each block's fixed cost (SK=256: 273.8 us against cuDNN's 151; a 128-key step costs the same
# as cuDNN's); session 24 timed a persistent form slower (0.948x of the grid) while its epilogue
# stored O from registers.  Contenders, one process, cuDNN timed in the same alternating rounds,
# every output checked first against the f32 reference (bench/fwd_variants.py):
#   std:  std.attention's flash_fwd (one tile a block, as today).
#   walk: bench/A_fwd_walk.tl, the same statements as an author's persistent walk: its tile grid made
#         persistent by warp specialization (b5b1b7d): Q by the producer's TMA once a tile, loaded
#         under the last tile's softmax, P @ V and epilogue; O staged in K's stage of the tile's last
#         iteration and stored by the TMA, the stage released once the store has read it.  CPU:
#         nvcc sm_90a 168 registers, no spills, HGMMA 32, UTMASTG; the interpreter vs NumPy
#         (tests/schedule/test_persistent_grid.py), and the NumPy check fails when the stage is
#         released before the store has read it.
#   bm192_*: D=64 at 192 query rows on three consumer warpgroups taking turns (0736909, c503634),
#         96 or 128 keys; CPU: 160 registers a consumer thread, BN=96 no spills, BN=128 4-8 bytes.
#   walk_dyn (causal only): the walk with schedule/warpspec.py DYNAMIC_TILES, each block's next tile
#         from a counter in device memory, longest first (FA3's dynamic scheduler), instead of pairs
#         from both ends of x (2048 pairs on 132 SMs: the busiest block 528 key steps against a 512
#         mean); CPU: tests/schedule/test_dynamic_tiles.py (C = the interpreter's order, nvcc, NumPy).
#   sp192: FlashAttention 3's D=64 non-causal tile, 192 x 192 on three warpgroups with P through
#         shared memory (std's flash_fwd with `probs = shared(...)`, written to /tmp here as
#         tests/gpu/test_attention_gpu.py writes it; a5e6202 waits for the deferred P @ V before P is
#         rewritten): two stages, V on its own barriers; CPU: no spills, the interpreter vs NumPy.
# Rows: f16 B=4 H=32 S=4096 D=128 full, SK=256 (a block's fixed cost), causal, GQA 32/8; D=64 full.
# First a guard (18 s, a process of its own): each new schedule at a small ragged shape against
# torch in f32, printed as it runs, so that a hang costs only the guard and the cases that ran
# are the ones timed.
# Answer: per row "<label> <us> <TFLOP/s> <x>x cuDNN".  If walk beats std by >= 2% at D=128 both
# masks (and loses nowhere), flip schedule/warpspec.py GRID_TILE_LOADS to True (std's grid then
# runs as the walk does; its tests are written for both values); if walk_dyn beats walk causal,
# flip DYNAMIC_TILES too (a causal persistent ring then takes its tiles from the counter).  If bm192_bn96 (or its walk)
# beats std at D=64, give config.json's flash_fwd a D <= 64 rule BM=192 THREADS=384 BN=96; if
# sp192 beats them, P through shared memory at D=64 is the next step (a schedule decision).
export PYTHONUNBUFFERED=1
timeout 18 python3 - <<'PY' 2>&1 | tee /tmp/A_guard.txt
import math, sys, torch
import tlc
sys.path.insert(0, "bench")
from fwd_variants import renamed, switched
mods = {p: tlc.load(p, target="cuda") for p in ("bench/A_fwd_walk.tl", "std.attention")}
DYN = {"tlc.schedule.warpspec.DYNAMIC_TILES": True}
for path, causal, D, consts in [("bench/A_fwd_walk.tl", False, 128, {}), ("bench/A_fwd_walk.tl", True, 128, {}),
                                ("std.attention", False, 64, {"BM": 192, "THREADS": 384, "BN": 96}),
                                ("bench/A_fwd_walk.tl", True, 64, {"BM": 192, "THREADS": 384, "BN": 96}),
                                ("dyn", True, 128, {})]:
    B, H, S, SK = 1, 3, 300, 400
    q = torch.randn(B, H, S, D, device="cuda", dtype=torch.float16)
    k = torch.randn(B, H, SK, D, device="cuda", dtype=torch.float16)
    v = torch.randn(B, H, SK, D, device="cuda", dtype=torch.float16)
    o = torch.empty_like(q); lse = torch.empty(B, H, S, device="cuda")
    if path == "dyn":  # twice: the counter set back to 0 by the first launch
        f = renamed("bench/A_fwd_walk.tl", "dyn").flash_fwd_dyn
        for _ in range(2):
            switched(lambda: f(q, k, v, o, lse, 1 / math.sqrt(D), CAUSAL=causal), DYN)
    else:
        mods[path].flash_fwd(q, k, v, o, lse, 1 / math.sqrt(D), CAUSAL=causal, **consts)
    torch.cuda.synchronize()
    s = (q.float() @ k.float().mT) / math.sqrt(D)
    if causal:
        s = s.masked_fill(torch.ones(S, SK, device="cuda", dtype=torch.bool).triu(SK - S + 1), float("-inf"))
    err = (o.float() - torch.softmax(s, -1) @ v.float()).abs().max().item()
    print(f"guard {path} D={D} causal={causal} {consts} max err {err:.2e} {'ok' if err < 2e-2 else 'WRONG'}")
PY
WALK=0; W3=0; DYN=0
grep -q "walk.tl D=128 causal=True .* ok" /tmp/A_guard.txt && WALK=1
grep -q "walk.tl D=64 causal=True .* ok" /tmp/A_guard.txt && W3=1
grep -q "guard dyn D=128 causal=True .* ok" /tmp/A_guard.txt && DYN=1
echo "guard: WALK=$WALK W3=$W3 DYN=$DYN"
WALK=$WALK W3=$W3 DYN=$DYN python3 - <<'PY'
import os, sys, time
sys.path.insert(0, "bench")
from fwd_variants import run
t0 = time.time()
walk = [("walk", "bench/A_fwd_walk.tl", {})] if os.environ["WALK"] == "1" else []
for shape in [("float16", 4, 32, 32, 4096, 4096, 128, False),
              ("float16", 4, 32, 32, 4096, 256, 128, False),  # a block's fixed cost
              ("float16", 4, 32, 32, 4096, 4096, 128, True),
              ("float16", 4, 32, 8, 4096, 4096, 128, False)]:
    dyn = [("walk_dyn", "bench/A_fwd_walk.tl", {}, {"tlc.schedule.warpspec.DYNAMIC_TILES": True})] \
        if shape[-1] and os.environ["DYN"] == "1" else []
    run(shape, [("std", None, {})] + walk + dyn, min_ms=70)
W3 = [("bm192_bn96", None, {"BM": 192, "THREADS": 384, "BN": 96}),
      ("bm192_bn128", None, {"BM": 192, "THREADS": 384, "BN": 128})]
W3 += [("walk_" + label, "bench/A_fwd_walk.tl", c) for label, _, c in W3] if walk else []
W3 = W3 if os.environ["W3"] == "1" else []
src = open("stdlib/attention.tl").read()
old = "        probs = fragment(T[BM, BN])\n"
assert old in src
open("/tmp/A_sp.tl", "w").write(src.replace(old, "        probs = shared(T[BM, BN])\n"))
W3 += [("sp192", "/tmp/A_sp.tl", {"BM": 192, "THREADS": 384, "BN": 192})] if W3 else []
run(("float16", 4, 32, 32, 4096, 4096, 64, False), [("std", None, {})] + walk + W3, min_ms=50)
print(f"total {time.time() - t0:.1f} s")
PY
