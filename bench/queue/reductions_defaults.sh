# limit: 45
# Issue #13, session 23 (helper): this session's H200 answers (bench/results/row_reductions2- and
# scans_axis0-h200-twentythird.*) made config.json rules (sm_90a); does the GPU agree?
#   std.nn_train log_softmax f16: BLOCKS 4 (was 3; 140.0 against 160.3 us); bf16 keeps 2.
#   std.nn_layers batch_norm f32: BM 16 (was 32; 250.3 against 259.2 us); f16/bf16 keep 32.
#   std.reduce argmax_axis1 f16: BM 2 BN 1024 (was 4 x 256; 81.4 against 85.1 us).
#   std.reduce cummax_axis0 / cummin_axis0 f16: THREADS 512 (was 256; cummax 172.9 against 181.2).
# Not made defaults: col_registers_max 200 (var_axis0 +8%, logsumexp_axis0 +19%): ptxas -v sm_90a
# at four tiles a step: logsumexp f16 spills 44 bytes in the whole-runs build, bf16 var/std/lse
# 84-340, var/std f16 clean in the whole-runs build but 20 bytes in the general one, and
# RowKernel.registers gives all of them 112, so the rule cannot tell them apart.  argmax_axis0
# "steps" (+4%) is a rewrite of the kernel, not a constant: left.
# On the CPU (nvcc 13.0 -Xptxas -v sm_90a): log_softmax f16 at 4 blocks 64 registers, no spills in
# the whole-runs build (32 bytes in the general one); batch_norm f32 BM 16 62 registers, none;
# argmax_axis1 f16 2 x 1024 48, none in the whole-runs build (252 bytes in the general one);
# cummax/cummin f16 at 512 33, none in either.  The ragged shapes below run the general build.
# Asks, each output checked first: (1) the GPU tests of the changed kernels at ragged shapes with
# the table's constants (no constants given); (2) each new default timed against the old one
# at (16384, 8192), to be the answers above again.
set -o pipefail
T=tests/gpu/test_reduce_gpu.py::test_against_numpy
timeout 14 python3 -m pytest -q -x -m gpu -p no:cacheprovider "$T[argmax-f16-axis1]" "$T[cummax-f16-axis0]" \
  "$T[cummin-f16-axis0]" 2>&1 | tail -2
timeout 28 python3 - <<'PY' 2>&1 | tail -14
import torch, tlc
from tlc.timing import compare
nt, nl, rd = (tlc.load(m, target="cuda") for m in ("std.nn_train", "std.nn_layers", "std.reduce"))
g = torch.Generator(device="cuda").manual_seed(0)
def nan_like(x, dt=None):
    return torch.full(x.shape, float("nan"), device="cuda", dtype=dt or x.dtype)
def bn(R, L, C=11):
    x = torch.randn(R, L, device="cuda", generator=g)
    m, v = torch.randn(C, device="cuda", generator=g), torch.rand(C, device="cuda", generator=g) + 0.5
    w, b = torch.randn(C, device="cuda", generator=g), torch.randn(C, device="cuda", generator=g)
    c = torch.arange(R, device="cuda") % C
    ref = ((x.double() - m.double()[c, None]) / torch.sqrt(v.double()[c, None] + 1e-5) * w.double()[c, None] + b.double()[c, None]).float()
    return (x, m, v, w, b), nan_like(x), ref
rows = []
# (kernel, module, T, old constants, inputs, output, reference, check, shape, arguments after the output)
for M, N in ((37, 8000), (16384, 8192)):
    x = torch.randn(M, N, device="cuda", generator=g).half()
    rows.append(("log_softmax", nt, "f16", {"BLOCKS": 3}, (x,), nan_like(x), torch.log_softmax(x.float(), 1).half(),
                 lambda y, w: torch.allclose(y.float(), w.float(), rtol=2 ** -9, atol=1e-3), (M, N), ()))
for R, L in ((33, 300), (16384, 8192)):
    a, y, ref = bn(R, L)
    rows.append(("batch_norm", nl, "f32", {"BM": 32}, a, y, ref,
                 lambda y, w: torch.allclose(y, w, rtol=1e-5, atol=1e-5), (R, L), (1e-5,)))
for M, N in ((1000, 3001), (16384, 8192)):
    x = torch.randint(-2, 3, (M, N), device="cuda", generator=g).half()
    rows.append(("argmax_axis1", rd, "f16", {"BM": 4, "BN": 256}, (x,), torch.full((M,), -7, device="cuda", dtype=torch.int32),
                 x.float().argmax(1).int(), lambda y, w: torch.equal(y, w), (M, N), ()))
    for k, f in (("cummax_axis0", torch.cummax), ("cummin_axis0", torch.cummin)):
        rows.append((k, rd, "f16", {"THREADS": 256}, (x,), nan_like(x), f(x, 0).values,
                     lambda y, w: torch.equal(y, w), (M, N), ()))
for name, mod, dt, old, a, y, ref, ok, shape, extra in rows:
    fn = getattr(mod, name)
    runs = {}
    for label, c in (("new default", {}), (f"old {old}", old)):
        y.fill_(-7) if y.dtype == torch.int32 else y.fill_(float("nan"))
        fn(*a, y, *extra, T=dt, **c)
        torch.cuda.synchronize()
        good = ok(y, ref)
        if shape[0] < 16384:
            print(f"{name} {dt} {shape} {label}: {'ok' if good else 'WRONG'}")
        elif good:
            runs[label] = (lambda c=c, fn=fn, a=a, y=y, e=extra, dt=dt: fn(*a, y, *e, T=dt, **c))
        else:
            print(f"{name} {dt} {shape} {label}: WRONG")
    if runs:
        t = compare(runs, min_ms=5)
        print(f"{name} {dt} " + "  ".join(f"{k} {ms * 1e3:.1f} us" for k, ms in t.items()))
PY
