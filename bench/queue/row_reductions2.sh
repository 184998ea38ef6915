# limit: 120
# Issue #13, session 21 (helper 94), second round.  The first (bench/results
# row_reductions-h200-twentyfirst.txt) answered, of copy: var/std_axis1 0.69 -> 1.00,
# logsumexp_axis1 0.68 -> 0.98 (971b92a, 3c68895), batch_norm 0.90 (0.92 at 32 rows: 62ade4a),
# group_norm 0.51 -> 0.62 (bc2c586), argmax/argmin_axis1 0.78, log_softmax 0.78 (0.90 at
# BLOCKS=4, which spills in bf16/f32 and the ragged build), argmax_axis0 0.60, var_axis0 0.80,
# logsumexp_axis0 0.62 (col_elems_per_thread=8 slower).  Questions, each output checked against
# float64 torch before it is timed:
# (1) the rows now (bench/ops.py): group_norm's first pass has two tiles a step since ebb0de7
#     (four spilled in the ragged build), batch_norm 32 rows, argmax/argmin without a branch an
#     element (0a0f6af: 130 -> 71 SASS instructions for 8 elements of a whole tile), the column
#     rows' load batches without 16-bit merges (cdc308f: var_axis0's loop 339 -> 325);
# (2) var_axis0 / logsumexp_axis0 at four tiles a step (a7922d9 col_registers_max=200: 126 / 125
#     registers, no spill in f16's TL_WHOLE_RUNS build; 4 loads a thread in flight now, 8 then);
# (3) argmax_axis1 / argmax_axis0 as four tiles a step (candidates below: 9 blocks of 128
#     threads an SM at 50 registers; axis 0 [128, 32] x 4 at 512 threads, 64 registers; no spill
#     in the TL_WHOLE_RUNS build, nan handling as 8a59b33);
# (4) log_softmax f16 and bf16 at 512 threads (16 elements a thread: 2 blocks 56-64 registers,
#     3 blocks 40, no spill in f16) against BLOCKS=4 at 256 (64, f16 only without spills);
# (5) group_norm with four tiles a step in both passes (bc2c586, spilling in the ragged build)
#     against two in the first (ebb0de7); batch_norm in f32 at 16 and 32 rows (62 / 128 registers).
python3 bench/ops.py --min-ms 10 --no-chart --json $OUT/row_reductions2.json --only \
  argmax_axis1,argmin_axis1,argmax_axis0,var_axis0,logsumexp_axis0,log_softmax,group_norm,batch_norm \
  2>&1 | tail -9
cat > /tmp/argmax_steps.tl <<'TL'
@kernel
def argmax_axis1(x: T[M, N], y: i32[M], T: dtype = f32, BM: const = 4, BN: const = 256, THREADS: const = 128):
    with grid(cdiv(M, BM), threads=THREADS) as bx:
        ta = fragment(T[BM, BN])
        tb = fragment(T[BM, BN])
        tc = fragment(T[BM, BN])
        td = fragment(T[BM, BN])
        best = fragment(T[BM, BN])
        at = fragment(i32[BM, BN])
        top = fragment(T[BM])
        first = fragment(i32[BM])
        fill(at, -1)
        steps = N // (4 * BN)
        for s in range(steps):
            q = s * 4
            copy(x[bx * BM, q * BN], ta)
            copy(x[bx * BM, (q + 1) * BN], tb)
            copy(x[bx * BM, (q + 2) * BN], tc)
            copy(x[bx * BM, (q + 3) * BN], td)
            for i, j in parallel(BM, BN):
                if ta[i, j] > best[i, j] or at[i, j] < 0 and ta[i, j] == ta[i, j]:
                    best[i, j] = ta[i, j]
                    at[i, j] = q * BN + j
                if tb[i, j] > best[i, j] or at[i, j] < 0 and tb[i, j] == tb[i, j]:
                    best[i, j] = tb[i, j]
                    at[i, j] = (q + 1) * BN + j
                if tc[i, j] > best[i, j] or at[i, j] < 0 and tc[i, j] == tc[i, j]:
                    best[i, j] = tc[i, j]
                    at[i, j] = (q + 2) * BN + j
                if td[i, j] > best[i, j] or at[i, j] < 0 and td[i, j] == td[i, j]:
                    best[i, j] = td[i, j]
                    at[i, j] = (q + 3) * BN + j
        for k in range(steps * 4, cdiv(N, BN)):
            copy(x[bx * BM, k * BN], ta)
            for i, j in parallel(BM, BN):
                if k * BN + j < N and (ta[i, j] > best[i, j] or at[i, j] < 0 and ta[i, j] == ta[i, j]):
                    best[i, j] = ta[i, j]
                    at[i, j] = k * BN + j
        for i, j in parallel(BM, BN):
            best[i, j] = where(at[i, j] < 0, min_value(T), best[i, j])
        reduce_max(best, top, dim=1)
        for i, j in parallel(BM, BN):
            at[i, j] = where(at[i, j] >= 0 and best[i, j] == top[i], at[i, j], i32(N))
        reduce_min(at, first, dim=1)
        copy(first, y[bx * BM])
TL
cat > /tmp/argmax0_steps.tl <<'TL'
@kernel
def argmax_axis0(x: T[M, N], y: i32[N], T: dtype = f32, BM: const = 128, BN: const = 32, THREADS: const = 512):
    with grid(cdiv(N, BN), threads=THREADS) as bx:
        ta = fragment(T[BM, BN])
        tb = fragment(T[BM, BN])
        tc = fragment(T[BM, BN])
        td = fragment(T[BM, BN])
        best = fragment(T[BM, BN])
        at = fragment(i32[BM, BN])
        top = fragment(T[BN])
        first = fragment(i32[BN])
        fill(at, -1)
        steps = M // (4 * BM)
        for s in range(steps):
            q = s * 4
            copy(x[q * BM, bx * BN], ta)
            copy(x[(q + 1) * BM, bx * BN], tb)
            copy(x[(q + 2) * BM, bx * BN], tc)
            copy(x[(q + 3) * BM, bx * BN], td)
            for i, j in parallel(BM, BN):
                if ta[i, j] > best[i, j] or at[i, j] < 0 and ta[i, j] == ta[i, j]:
                    best[i, j] = ta[i, j]
                    at[i, j] = q * BM + i
                if tb[i, j] > best[i, j] or at[i, j] < 0 and tb[i, j] == tb[i, j]:
                    best[i, j] = tb[i, j]
                    at[i, j] = (q + 1) * BM + i
                if tc[i, j] > best[i, j] or at[i, j] < 0 and tc[i, j] == tc[i, j]:
                    best[i, j] = tc[i, j]
                    at[i, j] = (q + 2) * BM + i
                if td[i, j] > best[i, j] or at[i, j] < 0 and td[i, j] == td[i, j]:
                    best[i, j] = td[i, j]
                    at[i, j] = (q + 3) * BM + i
        for k in range(steps * 4, cdiv(M, BM)):
            copy(x[k * BM, bx * BN], ta)
            for i, j in parallel(BM, BN):
                if k * BM + i < M and (ta[i, j] > best[i, j] or at[i, j] < 0 and ta[i, j] == ta[i, j]):
                    best[i, j] = ta[i, j]
                    at[i, j] = k * BM + i
        for i, j in parallel(BM, BN):
            best[i, j] = where(at[i, j] < 0, min_value(T), best[i, j])
        reduce_max(best, top, dim=0)
        for i, j in parallel(BM, BN):
            at[i, j] = where(at[i, j] >= 0 and best[i, j] == top[j], at[i, j], i32(M))
        reduce_min(at, first, dim=0)
        copy(first, y[bx * BN])
TL
cat > /tmp/group_norm_four.tl <<'TL'
@kernel
def group_norm(x: T[B, C, L], weight: T[C], bias: T[C], y: T[B, C, L], eps: f32, G: const = 32, T: dtype = f16,
               BLOCK: const = 2048, THREADS: const = 256, BLOCKS: const = 4):
    with grid(B * G, threads=THREADS, blocks_per_sm=BLOCKS) as bx:
        xa = fragment(T[1, BLOCK])
        xb = fragment(T[1, BLOCK])
        xc = fragment(T[1, BLOCK])
        xd = fragment(T[1, BLOCK])
        shift = fragment(f32[1, BLOCK])
        s1 = fragment(f32[1, BLOCK])
        s2 = fragment(f32[1, BLOCK])
        mean = fragment(f32[1])
        m2 = fragment(f32[1])
        b = bx // G
        first = bx % G * (C // G)
        steps = L // (4 * BLOCK)  # steps of four whole tiles, then the rest one tile at a time
        clear(s1)
        clear(s2)
        copy(x[b, first:first + 1, 0:BLOCK], shift)
        for ci in range(C // G):
            ch = first + ci
            for s in range(steps):
                p = s * 4 * BLOCK
                copy(x[b, ch:ch + 1, p:p + BLOCK], xa)
                copy(x[b, ch:ch + 1, p + BLOCK:p + 2 * BLOCK], xb)
                copy(x[b, ch:ch + 1, p + 2 * BLOCK:p + 3 * BLOCK], xc)
                copy(x[b, ch:ch + 1, p + 3 * BLOCK:p + 4 * BLOCK], xd)
                for i, j in parallel(1, BLOCK):
                    da = f32(xa[i, j]) - shift[i, j]
                    db = f32(xb[i, j]) - shift[i, j]
                    dc = f32(xc[i, j]) - shift[i, j]
                    dd = f32(xd[i, j]) - shift[i, j]
                    s1[i, j] = s1[i, j] + ((da + db) + (dc + dd))
                    s2[i, j] = s2[i, j] + ((da * da + db * db) + (dc * dc + dd * dd))
            for t in range(steps * 4, cdiv(L, BLOCK)):
                copy(x[b, ch:ch + 1, t * BLOCK:t * BLOCK + BLOCK], xa)
                for i, j in parallel(1, BLOCK):
                    da = f32(xa[i, j]) - shift[i, j] if t * BLOCK + j < L else 0.0
                    s1[i, j] = s1[i, j] + da
                    s2[i, j] = s2[i, j] + da * da
        for i, j in parallel(1, BLOCK):
            s1[i, j] = f32(C // G * ((L - j + BLOCK - 1) // BLOCK)) * shift[i, j] + s1[i, j]
        reduce_sum(s1, mean, dim=1)
        for i in parallel(1):
            mean[i] = mean[i] / f32(C // G * L)
        for i, j in parallel(1, BLOCK):
            n = f32(C // G * ((L - j + BLOCK - 1) // BLOCK))
            u = mean[i] - shift[i, j]
            s2[i, j] = s2[i, j] - 2.0 * u * (s1[i, j] - n * shift[i, j]) + n * u * u
        reduce_sum(s2, m2, dim=1)
        for i in parallel(1):
            m2[i] = rsqrt(m2[i] / f32(C // G * L) + eps)
        for ci in range(C // G):
            ch = first + ci
            w = f32(weight[ch])
            o = f32(bias[ch])
            for s in range(steps):
                p = s * 4 * BLOCK
                copy(x[b, ch:ch + 1, p:p + BLOCK], xa)
                copy(x[b, ch:ch + 1, p + BLOCK:p + 2 * BLOCK], xb)
                copy(x[b, ch:ch + 1, p + 2 * BLOCK:p + 3 * BLOCK], xc)
                copy(x[b, ch:ch + 1, p + 3 * BLOCK:p + 4 * BLOCK], xd)
                for i, j in parallel(1, BLOCK):
                    xa[i, j] = T((f32(xa[i, j]) - mean[i]) * m2[i] * w + o)
                    xb[i, j] = T((f32(xb[i, j]) - mean[i]) * m2[i] * w + o)
                    xc[i, j] = T((f32(xc[i, j]) - mean[i]) * m2[i] * w + o)
                    xd[i, j] = T((f32(xd[i, j]) - mean[i]) * m2[i] * w + o)
                copy(xa, y[b, ch:ch + 1, p:p + BLOCK])
                copy(xb, y[b, ch:ch + 1, p + BLOCK:p + 2 * BLOCK])
                copy(xc, y[b, ch:ch + 1, p + 2 * BLOCK:p + 3 * BLOCK])
                copy(xd, y[b, ch:ch + 1, p + 3 * BLOCK:p + 4 * BLOCK])
            for t in range(steps * 4, cdiv(L, BLOCK)):
                copy(x[b, ch:ch + 1, t * BLOCK:t * BLOCK + BLOCK], xa)
                for i, j in parallel(1, BLOCK):
                    xa[i, j] = T((f32(xa[i, j]) - mean[i]) * m2[i] * w + o)
                copy(xa, y[b, ch:ch + 1, t * BLOCK:t * BLOCK + BLOCK])
TL
python3 - <<'PY'
import torch
import tlc
from tlc.timing import Checked, compare_checked, tolerance

g = torch.Generator(device="cuda").manual_seed(0)
F = torch.nn.functional
M, N = 16384, 8192


def show(name, contenders, nbytes):
    ms, verdicts = compare_checked(contenders, min_ms=10)
    for v, verdict in verdicts.items():
        if not verdict.ok:
            print(f"{name} {v}: {verdict.why}")
    for v, t in sorted(ms.items(), key=lambda kv: kv[1]):
        print(f"{name:16s} {v:44s} {t * 1e3:8.1f} us  {nbytes / t / 1e6:7.0f} GB/s", flush=True)


def kernels(name, runs, args, out, ref, ulps, nbytes, dtype="float16"):
    """runs: (label, kernel, constants)"""
    show(name, {label: Checked(k.launcher(*args, **v), ref, out=out, **tolerance(dtype, ref, ulps))
                for label, k, v in runs}, nbytes)


x = torch.randn(M, N, device="cuda", generator=g).half()
xd = x.double()
red = tlc.load("std.reduce")
for name, ref in (("var_axis0", xd.var(0, unbiased=False)), ("logsumexp_axis0", torch.logsumexp(xd, 0))):
    contenders = {}
    for r in ({}, {"col_registers_max": 200}):
        launch, out = getattr(red, name).with_rules(**r).prepare(x)
        contenders[str(r or "default")] = Checked(launch, ref, out=out, **tolerance("float16", ref, 4))
    show(name, contenders, M * N * 2)

idx = torch.empty(M, device="cuda", dtype=torch.int32)
steps1 = tlc.load("/tmp/argmax_steps.tl").argmax_axis1
kernels("argmax_axis1", [("default", red.argmax_axis1, {}), ("BM 2 BN 1024", red.argmax_axis1, {"BM": 2, "BN": 1024}),
                         ("BN 512", red.argmax_axis1, {"BN": 512}),
                         ("steps", steps1, {}), ("steps BM 8 x 256", steps1, {"BM": 8, "THREADS": 256})],
        (x, idx), idx, x.float().argmax(1).int(), 0, M * N * 2, "int32")
idx0 = torch.empty(N, device="cuda", dtype=torch.int32)
steps0 = tlc.load("/tmp/argmax0_steps.tl").argmax_axis0
kernels("argmax_axis0", [("default", red.argmax_axis0, {}), ("steps", steps0, {}),
                         ("steps BM 64 x 256", steps0, {"BM": 64, "THREADS": 256})],
        (x, idx0), idx0, x.float().argmax(0).int(), 0, M * N * 2, "int32")

nt = tlc.load("std.nn_train")
for dt in (torch.half, torch.bfloat16):
    xt = x.to(dt)
    y = torch.empty_like(xt)
    variants = [{}, {"BLOCKS": 4}, {"THREADS": 512, "BLOCKS": 2}] + ([{"THREADS": 512, "BLOCKS": 3}] if dt == torch.half else [])
    kernels(f"log_softmax {str(dt)[6:]}", [(str(v or "default"), nt.log_softmax, v) for v in variants], (xt, y), y,
            torch.log_softmax(xt.double(), -1), 4, 2 * M * N * 2, str(dt)[6:])
    del xt, y

nl = tlc.load("std.nn_layers")
C = 64
mu, w, b = (torch.randn(C, device="cuda", generator=g) for _ in range(3))
var = torch.rand(C, device="cuda", generator=g) * 1.5 + 0.5
c = torch.arange(M, device="cuda") % C
x32 = x.float()
y32 = torch.empty_like(x32)
ref = (xd - mu.double()[c, None]) / (var.double()[c, None] + 1e-5).sqrt() * w.double()[c, None] + b.double()[c, None]
kernels("batch_norm f32", [("BM 32 (default)", nl.batch_norm, {}), ("BM 16", nl.batch_norm, {"BM": 16})],
        (x32, mu, var, w, b, y32, 1e-5), y32, ref, 64, 2 * M * N * 4, "float32")
del ref, xd, x32, y32

xg = x.view(16, C, M * N // (16 * C))
wg, bg = torch.randn(C, device="cuda", generator=g).half(), torch.randn(C, device="cuda", generator=g).half()
yg = torch.empty_like(xg)
ref = F.group_norm(xg.double(), 32, wg.double(), bg.double(), 1e-5)
four = tlc.load("/tmp/group_norm_four.tl").group_norm
kernels("group_norm", [("now (two tiles a step, then four)", nl.group_norm, {}), ("four and four", four, {})],
        (xg, wg, bg, yg, 1e-5), yg, ref, 8, 2 * M * N * 2)
PY
