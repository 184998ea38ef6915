# limit: 120
# Issue #13, session 21 (helper 94): the ops table's weak reduction rows (session 20, of copy):
# var/std_axis1 0.69, var/std_axis0 0.83, logsumexp_axis1 0.68, logsumexp_axis0 0.67,
# argmax/argmin_axis1 0.66, argmax_axis0 0.66, log_softmax 0.82, group_norm 0.51, batch_norm 0.86.
# CPU (nvcc 13.0 sm_90a, the TL_WHOLE_RUNS build, ptxas -v, SASS on the executed path for
# N = 8192, 32 elements a thread): the row tile ops spent 17 instructions an element
# (var_axis1 536, logsumexp_axis1 528, sum_axis1 286 a thread), more than the 15.6 an SM can
# issue at copy speed (128 thread-instructions a clock over 8.2 f16 elements a clock).
# 971b92a: a row exactly one tile long takes the one-tile path unmasked (273, 317, 168);
# 3c68895, layout.cuh's copy_g2f: the
# TL_WHOLE_RUNS build moves a 16-bit fragment's vectors as they are, not each half through float
# and back with 16-bit merges (239, 291, 134; registers var_axis1 62 -> 42, logsumexp_axis1
# 64 -> 47, log_softmax f16 95 -> 80; no kernel checked spills more).
# Questions: (1) the rows now (bench/ops.py checks each output, torch's too, before timing);
# (2) which neighbouring schedules are faster (each output checked against float64 torch first):
# var_axis1 at 5 or 6 blocks an SM (47 and 40 registers, no spill); var_axis0 and logsumexp_axis0
# at 8 elements a thread (0847817: 1024 threads, 32 warps an SM where 512 threads at 114-127
# registers held 16; 64 registers, logsumexp_axis0 spills 20 bytes); log_softmax's BLOCKS (2 now;
# 3: 71 registers, 4: 64, no spill in f16); argmax_axis1's tile (one 16-byte load a thread an
# iteration at [4, 256] x 128 threads: 24 KB in flight an SM); batch_norm's tile; group_norm
# rewritten (stdlib/nn_layers.tl, this commit's parent's: no block reduction in its statistics'
# loop, which took two a tile, four tiles a step; 64 registers, no spill in f16/bf16) against
# the kernel before it (one tile of 4096 a step, and 8192 at 512 threads).
python3 bench/ops.py --min-ms 10 --no-chart --json $OUT/row_reductions.json --only \
  sum_axis1,var_axis1,std_axis1,logsumexp_axis1,argmax_axis1,argmin_axis1,argmax_axis0,var_axis0,logsumexp_axis0,log_softmax,group_norm,batch_norm \
  2>&1 | tail -13
# a candidate argmax_axis1: four tiles a step (loads of all four in flight: 9 blocks of 128
# threads an SM at 50 registers, no spill in the TL_WHOLE_RUNS build, f16/bf16/f32)
cat > /tmp/argmax_steps.tl <<'TL'
@kernel
def argmax_axis1(x: T[M, N], y: i32[M], T: dtype = f32, BM: const = 4, BN: const = 256, THREADS: const = 128):
    # As std.reduce's argmax_axis1, four tiles a step (a thread's loads of all four in flight).
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
# group_norm before this session's rewrite (stdlib/nn_layers.tl at 370fa48), timed beside it
cat > /tmp/group_norm_before.tl <<'TL'
@kernel
def group_norm(x: T[B, C, L], weight: T[C], bias: T[C], y: T[B, C, L], eps: f32, G: const = 32, T: dtype = f16,
               BLOCK: const = 4096, THREADS: const = 256):
    # y = (x - mean) / sqrt(var + eps) * weight[c] + bias[c], the statistics of each group of
    # C / G channels of one sample (F.group_norm; G divides C; L the flattened spatial size).  A
    # block per group walks its channels in tiles of BLOCK positions (16-byte loads, each
    # channel's end masked): one pass merges each tile's mean and centred squares into the
    # group's (as std.nn's layer_norm), a second writes y channel by channel.
    with grid(B * G, threads=THREADS) as bx:
        xt = fragment(T[1, BLOCK])
        xf = fragment(f32[1, BLOCK])
        c = fragment(f32[1, BLOCK])
        yt = fragment(T[1, BLOCK])
        mean = fragment(f32[1])
        m2 = fragment(f32[1])
        tile_mean = fragment(f32[1])
        tile_m2 = fragment(f32[1])
        b = bx // G
        first = bx % G * (C // G)
        clear(mean)
        clear(m2)
        for ci in range(C // G):
            for t in range(cdiv(L, BLOCK)):
                copy(x[b, first + ci:first + ci + 1, t * BLOCK:t * BLOCK + BLOCK], xt)
                for i, j in parallel(1, BLOCK):
                    xf[i, j] = f32(xt[i, j])
                reduce_sum(xf, tile_mean, dim=1)
                seen = f32(ci * L + t * BLOCK)
                count = f32(min(L - t * BLOCK, BLOCK))
                for i in parallel(1):
                    tile_mean[i] = tile_mean[i] / count
                for i, j in parallel(1, BLOCK):
                    c[i, j] = (xf[i, j] - tile_mean[i]) * (xf[i, j] - tile_mean[i]) if t * BLOCK + j < L else 0.0
                reduce_sum(c, tile_m2, dim=1)
                for i in parallel(1):
                    delta = tile_mean[i] - mean[i]
                    share = count / (seen + count)
                    mean[i] = mean[i] + delta * share
                    m2[i] = m2[i] + tile_m2[i] + delta * delta * seen * share
        for i in parallel(1):
            m2[i] = rsqrt(m2[i] / f32(C // G * L) + eps)
        for ci in range(C // G):
            w = f32(weight[first + ci])
            o = f32(bias[first + ci])
            for t in range(cdiv(L, BLOCK)):
                copy(x[b, first + ci:first + ci + 1, t * BLOCK:t * BLOCK + BLOCK], xt)
                for i, j in parallel(1, BLOCK):
                    yt[i, j] = T((f32(xt[i, j]) - mean[i]) * m2[i] * w + o)
                copy(yt, y[b, first + ci:first + ci + 1, t * BLOCK:t * BLOCK + BLOCK])
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


def kernel_variants(name, kernel, args, out, ref, ulps, variants, nbytes, dtype="float16"):
    contenders = {}
    for v in variants:
        contenders[str(v or "default")] = Checked(kernel.launcher(*args, **v), ref, out=out,
                                                  **tolerance(dtype, ref, ulps))
    show(name, contenders, nbytes)


x = torch.randn(M, N, device="cuda", generator=g).half()
xd = x.double()
red = tlc.load("std.reduce")
for name, ref, variants in (("var_axis1", xd.var(1, unbiased=False), ({}, {"min_blocks": 5}, {"min_blocks": 6})),
                            ("logsumexp_axis1", torch.logsumexp(xd, 1), ({}, {"min_blocks": 5})),
                            ("var_axis0", xd.var(0, unbiased=False), ({}, {"col_elems_per_thread": 8})),
                            ("logsumexp_axis0", torch.logsumexp(xd, 0), ({}, {"col_elems_per_thread": 8}))):
    contenders = {}
    for r in variants:
        launch, out = getattr(red, name).with_rules(**r).prepare(x)
        contenders[str(r or "default")] = Checked(launch, ref, out=out, **tolerance("float16", ref, 4))
    show(name, contenders, M * N * 2)

idx = torch.empty(M, device="cuda", dtype=torch.int32)
kernel_variants("argmax_axis1", red.argmax_axis1, (x, idx), idx, x.float().argmax(1).int(), 0,
                [{}, {"BN": 512}, {"BN": 1024}, {"BM": 2, "BN": 1024}, {"BM": 8, "BN": 512, "THREADS": 256},
                 {"BM": 1, "BN": 2048, "THREADS": 256}], M * N * 2, "int32")
kernel_variants("argmax_axis1 steps", tlc.load("/tmp/argmax_steps.tl").argmax_axis1, (x, idx), idx,
                x.float().argmax(1).int(), 0, [{}, {"BM": 8, "THREADS": 256}], M * N * 2, "int32")
idx0 = torch.empty(N, device="cuda", dtype=torch.int32)
kernel_variants("argmax_axis0", red.argmax_axis0, (x, idx0), idx0, x.float().argmax(0).int(), 0,
                [{}, {"BM": 512}, {"BM": 128, "BN": 64}], M * N * 2, "int32")

y = torch.empty_like(x)
kernel_variants("log_softmax", tlc.load("std.nn_train").log_softmax, (x, y), y, torch.log_softmax(xd, -1), 4,
                [{}, {"BLOCKS": 3}, {"BLOCKS": 4}, {"BLOCKS": 0}], 2 * M * N * 2)

nl = tlc.load("std.nn_layers")
C = 64
mu, w, b = (torch.randn(C, device="cuda", generator=g) for _ in range(3))
var = torch.rand(C, device="cuda", generator=g) * 1.5 + 0.5
c = torch.arange(M, device="cuda") % C
ref = (xd - mu.double()[c, None]) / (var.double()[c, None] + 1e-5).sqrt() * w.double()[c, None] + b.double()[c, None]
kernel_variants("batch_norm", nl.batch_norm, (x, mu, var, w, b, y, 1e-5), y, ref, 4,
                [{}, {"BL": 512}, {"BM": 32}, {"BM": 32, "THREADS": 512}], 2 * M * N * 2)
del ref, xd

xg = x.view(16, C, M * N // (16 * C))
wg, bg = torch.randn(C, device="cuda", generator=g).half(), torch.randn(C, device="cuda", generator=g).half()
yg = torch.empty_like(xg)
ref = F.group_norm(xg.double(), 32, wg.double(), bg.double(), 1e-5)
contenders = {}
for v in ({}, {"BLOCKS": 3}, {"BLOCK": 1024}):
    contenders["now " + str(v)] = Checked(nl.group_norm.launcher(xg, wg, bg, yg, 1e-5, **v), ref, out=yg,
                                          **tolerance("float16", ref, 8))
before = tlc.load("/tmp/group_norm_before.tl")
for v in ({}, {"BLOCK": 8192, "THREADS": 512}):
    contenders["before " + str(v)] = Checked(before.group_norm.launcher(xg, wg, bg, yg, 1e-5, **v), ref, out=yg,
                                             **tolerance("float16", ref, 8))
show("group_norm", contenders, 2 * M * N * 2)
PY
