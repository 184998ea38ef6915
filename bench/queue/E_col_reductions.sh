# limit: 40
# Issue #13, session 24 (helper E): do the column reductions with three running values an element
# (var_axis0, std_axis0, logsumexp_axis0) gain from eight [64, 64] tiles a step?
# This morning's table (bench/results/ops-h200-twentyfourth.txt, (16384, 8192) f16): logsumexp_axis0
# 0.64 of copy, var_axis0 0.82, std_axis0 0.81, where sum_axis0 is 0.93.  Their tiles: four [128, 64]
# tiles a step (16 elements a thread of 512, 8 runs of 16 bytes in flight) exceed the column loop's
# register cap (RowKernel.registers 112 > 100), so the step halved to two: half sum_axis0's bytes in
# flight.  Session 23 timed four [128, 64] (col_registers_max 200): var +8%, logsumexp +19%, but
# ptxas -v sm_90a spills there (logsumexp f16 44 bytes in the whole-runs build, bf16/f32 up to 472).
# The change under test (tileops/__init__.py _column_candidates, batch_loads.BATCH_RUNS): before
# halving the bytes in flight, tiles of half the rows (8 elements a thread, their running values
# half the registers) twice as many a step: eight [64, 64] tiles of one 16-byte run each, one load
# batch (8 LDG.128 together in the SASS); f32's four [64, 64] where one [128, 64] was.  ptxas -v
# sm_90a (nvcc 13.0), both builds: logsumexp/var/std f16 110-127 registers, bf16 114-127, f32 92-118,
# no spills anywhere; sum_axis0 unchanged (four [128, 64]).
# logsumexp_axis0 also rescales its running sums once a step now (Rules.col_step_max, one_pass.py
# _step_max): each place's maximum over the step's tiles, then its sum rescaled once and one
# exponential an element, where the lazy form (a reference raised when an element passes it by 32)
# selects the exponent, the sum and the reference an element: SASS of the f16 loop (TL_WHOLE_RUNS
# build, 64 elements a thread a step) 960 -> 743 instructions; 128 registers, no spills there (the
# general build, ragged shapes: 64 bytes).  Timed against the lazy form at eight [64, 64] too.
# Asks, each output checked against float64 first (4 units of the dtype, f32 64): the new default against
# the old tiles (col_tiles_per_step 2; f32 1; logsumexp's lazy), logsumexp f16 also against four
# [128, 64] (col_registers_max 200, lazy), one compare per row; std_axis0 (var's tiles) new alone; sum_axis0 f16 (unchanged, four [128, 64]) as the
# run's control, and at eight [64, 64] (the same bytes in flight: does the shape matter?).
set -o pipefail
timeout 38 python3 - <<'PY' 2>&1 | tee "$OUT/E_col_reductions.txt" | tail -40
import time
import torch, tlc
from tlc.timing import Checked, compare_checked, tolerance

t0 = time.time()
M, N = 16384, 8192
g = torch.Generator(device="cuda").manual_seed(0)
base = torch.randn(M, N, device="cuda", generator=g)
src = base.half()
dst = torch.empty_like(src)
copy = compare_checked({"copy": Checked(lambda: dst.copy_(src), src, 0.0, 0.0, out=dst)}, min_ms=10)[0]["copy"]
copy_gbs = 2 * src.numel() * 2 / copy / 1e6
print(f"copy {copy_gbs:.0f} GB/s", flush=True)
mod = tlc.load("std.reduce", target="cuda")
REFS = {"logsumexp_axis0": lambda w: torch.logsumexp(w, 0), "var_axis0": lambda w: w.var(0, unbiased=False),
        "std_axis0": lambda w: w.std(0, unbiased=False), "sum_axis0": lambda w: w.sum(0)}
OLD16, OLD32, FOUR = {"col_tiles_per_step": 2}, {"col_tiles_per_step": 1}, {"col_registers_max": 200}
LAZY = {"col_step_max": False}
PLAN = [("logsumexp_axis0", "f16", {"new": {}, "lazy 8x[64,64]": LAZY, "old 2x[128,64]": {**OLD16, **LAZY},
                                    "4x[128,64] lazy": {**FOUR, **LAZY}}),
        ("var_axis0", "f16", {"new": {}, "old 2x[128,64]": OLD16}),
        ("sum_axis0", "f16", {"default": {}, "8x[64,64]": {"col_elems_per_thread": 8, "col_block_elems": 4096,
                                                             "col_tiles_per_step": 8}}),
        ("std_axis0", "f16", {"new": {}}),
        ("logsumexp_axis0", "bf16", {"new": {}, "lazy 8x[64,64]": LAZY, "old 2x[128,64]": {**OLD16, **LAZY}}),
        ("var_axis0", "f32", {"new": {}, "old 1x[128,64]": OLD32})]
DT = {"f16": torch.float16, "bf16": torch.bfloat16, "f32": torch.float32}
for op, dt, variants in PLAN:
    x = base.to(DT[dt])
    ref = REFS[op](x.double())
    contenders = {}
    for name, rules in variants.items():
        launch, out = getattr(mod, op).with_rules(**rules).prepare(x, T=dt)
        contenders[name] = Checked(launch, ref, out=out, **tolerance(out.dtype, ref, 64 if dt == "f32" else 4))
    ms, verdicts = compare_checked(contenders, min_ms=8)
    for name, v in verdicts.items():
        if not v.ok:
            print(f"{op} {dt} {name}: NOT TIMED {v.why}")
    nbytes = x.numel() * x.element_size() + out.numel() * out.element_size()
    line = "  ".join(f"{k} {t * 1e3:.1f} us ({nbytes / t / 1e6 / copy_gbs:.2f} of copy)" for k, t in ms.items())
    print(f"{op} {dt} [{time.time() - t0:.0f} s]: {line}", flush=True)
PY
