# limit: 120
# Issue #13, session 20: std.reduce's row tile ops with two reductions a row reach 0.66-0.69 of
# copy on the H200 (var_axis1, std_axis1, logsumexp_axis1; ops table this session) where one
# reduction reaches 0.93-0.94 (norm_l1/l2/inf_axis1).  Both read each 8192-column row once (one
# row a block, 256 threads, 32 elements a thread); the two-phase ones need 56-64 registers, so
# __launch_bounds__(256, 4) holds 4 rows an SM, and while a block reduces it loads nothing.  CPU
# (ptxas -v, sm_90a): row_elems_per_thread=16 gives 512 threads at 3 blocks (36-40 registers, no
# spill: 1536 threads an SM); with min_blocks=4, 512 x 4 (32 registers; var none, logsumexp a
# 12-byte spill); min_blocks=6 at 256 threads spills 104 bytes.  Question: which is fastest?
# Each variant's output checked against float64 torch (4 f16 units) before it is timed.
python3 - <<'PY'
import torch
import tlc
from tlc.timing import Checked, compare_checked, tolerance

M, N = 16384, 8192
g = torch.Generator(device="cuda").manual_seed(0)
x = torch.randn(M, N, device="cuda", generator=g).half()
xd = x.double()
refs = {"var_axis1": xd.var(1, unbiased=False), "std_axis1": xd.std(1, unbiased=False),
        "logsumexp_axis1": torch.logsumexp(xd, 1), "norm_l2_axis1": xd.norm(dim=1)}
VARIANTS = [{}, {"row_elems_per_thread": 16}, {"row_elems_per_thread": 16, "min_blocks": 4}, {"min_blocks": 5}]
red = tlc.load("std.reduce")
copy_out = torch.empty_like(x)
for name, ref in refs.items():
    contenders = {}
    for r in VARIANTS:
        launch, out = getattr(red, name).with_rules(**r).prepare(x)
        contenders[str(r or "default")] = Checked(launch, ref, out=out, **tolerance("float16", ref, 4))
    ms, verdicts = compare_checked(contenders, min_ms=30)
    for v, verdict in verdicts.items():
        if not verdict.ok:
            print(f"{name} {v}: {verdict.why}")
    for v, t in sorted(ms.items(), key=lambda kv: kv[1]):
        print(f"{name:16s} {v:48s} {t * 1e3:8.1f} us  {M * N * 2 / t / 1e6:7.0f} GB/s read")
    print(flush=True)
PY
