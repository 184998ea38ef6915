# limit: 90
# Issue #13, session 20: three std.nn_layers rows far below the H200's copy bandwidth (ops table
# this session, bench/ops.py --min-ms 10): batch_norm f16 0.57 of copy (1.23x torch), rope f16
# 0.57 (4.70x), geglu f16 0.61 (2.40x).  All three ran 8 elements a thread, one 16-byte load an
# operand, and geglu's two one-run copies were not a load batch (batch_loads.MIN_RUNS = 2): its
# second LDG.E.128 was issued after the first one's data came back.  CPU (nvcc 13.0, sm_90a,
# -DTL_WHOLE_RUNS, ptxas -v, cuobjdump; whole kernel's SASS / elements a thread) at the rows' shapes:
#   rope (S=32768, H=32, D=128): half-split pairs loaded straight into registers (both halves as
#     16-byte vectors, one load batch of 4 LDG.E.128 at 128 threads), the angle's row once into
#     shared memory (LDS.128 a run), instead of x through shared memory with a 2-byte read of
#     each partner and two 4-byte global loads of cos/sin an element: 888 SASS / 16 = 55.5 ->
#     456 / 32 = 14.3, 58 -> 51 registers, 32 LDG.E + 32 LDS.U16 -> 4 LDS.128.
#   geglu (M=16384, N=4096): BN 256 -> 512, two runs a copy (one load batch, 4 LDG.E.128 back
#     to back): 360 / 8 = 45 -> 688 / 16 = 43 (the whole-run path about 44 -> 35 an element),
#     53 -> 64 registers, __launch_bounds__(256, 4) both.
#   batch_norm (R=16384, L=8192, C=64): BM 8 -> 16 (2 LDG.E.128 a thread, the block's index
#     division, 4 rows' parameters and barriers shared by 4096 elements): 536 / 8 = 67 -> 664 /
#     16 = 41.5, 40 -> 47 registers, (256, 5) both.
# Questions: (1) the three rows now (bench/ops.py checks each contender's output, torch's too,
# before timing it); (2) is each new default the fastest of its neighbours (each variant's output
# checked against float64 torch before it is timed; "default" is the committed one); (3) last,
# the rows' GPU table tests at their ragged shapes (the half-split rope's new path included).
python3 bench/ops.py --min-ms 10 --no-chart --only batch_norm,rope,geglu --json $OUT/nn_rows.json 2>&1 | tail -8
python3 - <<'PY'
import torch
import tlc
from tlc.timing import Checked, compare_checked, tolerance

nn = tlc.load("std.nn_layers")
g = torch.Generator(device="cuda").manual_seed(0)
F = torch.nn.functional
MiB = 2 ** 20


def run(name, kernel, args, out, ref, ulps, variants, nbytes):
    contenders = {}
    for v in variants:
        launch = getattr(nn, kernel).launcher(*args, **v)
        contenders[str(v or "default")] = Checked(launch, ref, out=out, **tolerance("float16", ref, ulps))
    ms, verdicts = compare_checked(contenders, min_ms=10)
    for v, verdict in verdicts.items():
        if not verdict.ok:
            print(f"{name} {v}: {verdict.why}")
    for v, t in sorted(ms.items(), key=lambda kv: kv[1]):
        print(f"{name:10s} {v:34s} {t * 1e3:8.1f} us  {nbytes / t / 1e6:7.0f} GB/s", flush=True)


M, N = 16384, 4096
x = torch.randn(M, 2, N, device="cuda", generator=g).half()
xd = x.double()
y = torch.empty(M, N, device="cuda", dtype=torch.half)
run("geglu", "geglu", (x, y), y, F.gelu(xd[:, 0]) * xd[:, 1], 8,
    [{}, {"BN": 256}, {"BN": 256, "THREADS": 128}], 3 * M * N * 2)
del x, xd, y

S, H, D = 32768, 32, 128
x = torch.randn(S, H, D, device="cuda", generator=g).half()
ang = torch.rand(S, D // 2, device="cuda", generator=g, dtype=torch.float64) * 6
cos, sin = ang.cos(), ang.sin()
xd = x.double()
a, b = xd[..., :D // 2], xd[..., D // 2:]
c, s = cos.float().double()[:, None, :], sin.float().double()[:, None, :]
ref = torch.cat([a * c - b * s, a * s + b * c], dim=-1)
y = torch.empty_like(x)
run("rope", "rope", (x, cos.float(), sin.float(), y), y, ref, 4, [{}, {"THREADS": 256}],
    2 * S * H * D * 2 + 2 * S * D // 2 * 4)
del x, xd, a, b, ref, y

R, L, C = 16384, 8192, 64
x = torch.randn(R, L, device="cuda", generator=g).half()
mu, w, bias = (torch.randn(C, device="cuda", generator=g) for _ in range(3))
var = torch.rand(C, device="cuda", generator=g) * 1.5 + 0.5
ch = torch.arange(R, device="cuda") % C
ref = (x.double() - mu.double()[ch, None]) / (var.double()[ch, None] + 1e-5).sqrt() * w.double()[ch, None] + \
    bias.double()[ch, None]
y = torch.empty_like(x)
run("batch_norm", "batch_norm", (x, mu, var, w, bias, y, 1e-5), y, ref, 4,
    [{}, {"BM": 8}, {"BM": 8, "THREADS": 128}], 2 * R * L * 2)
PY
timeout 30 python3 -m pytest -q -p no:cacheprovider tests/gpu/test_nn_train_gpu.py \
  -k "test_table_on_the_gpu and (rope- or geglu- or batch_norm-)" 2>&1 | tail -3
