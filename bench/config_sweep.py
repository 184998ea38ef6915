"""Tiles and block counts of std row kernels on (16384, 8192) against torch and a device copy, one
process; each configuration's output is checked against torch's before its time counts (the
scans' inputs keep every partial result exact in f16; log_softmax within 2 f16/bf16 units).
std.broadcast's add: a (4, 4, M/16, N) plus a bias (1, 4, 1, N), as bench/ops.py's row (div by
|bias| + 0.5; lerp, where and clamp with a value per position (4, 1, M/16, 1) too).
The lead's tool for choosing defaults: python3 bench/config_sweep.py [--min-ms 10] [--only NAMES]."""
import argparse
import sys

import torch

import tlc
from tlc.timing import compare

SCANS = [dict(), dict(BM=8, THREADS=256), dict(BM=4, BN=2048, THREADS=256), dict(BM=2, BN=1024, THREADS=64),
         dict(BM=8, BN=512, THREADS=128), dict(BM=4, BN=512, THREADS=64)]
BROADCAST = [dict(), dict(BN=2048), dict(BN=4096, THREADS=256), dict(BN=8192, THREADS=256)]
COLUMNS = [dict(), dict(THREADS=512), dict(BM=128, STAGES=4), dict(BM=512, THREADS=512, STAGES=2)]
ROWS = [dict(), dict(BLOCKS=3), dict(THREADS=512, BLOCKS=2), dict(THREADS=512, BLOCKS=3), dict(THREADS=1024, BLOCKS=1)]


def cases(g, M, N):
    small = torch.randint(-2, 3, (M, N), device="cuda", generator=g).half()
    signs = (torch.randint(0, 2, (M, N), device="cuda", generator=g) * 2 - 1).half()
    normal = {dt: torch.randn(M, N, device="cuda", generator=g).to(dt) for dt in (torch.float16, torch.bfloat16)}
    def exact(want):
        return lambda y: torch.equal(y, want)

    def close(want, rtol=None, atol=1e-3):
        def ok(y):  # within 2 units of the output's dtype (or rtol), in f32
            r = rtol if rtol is not None else 2 * 2.0 ** -(10 if y.dtype == torch.float16 else 7)
            return bool(torch.allclose(y.float(), want.float(), rtol=r, atol=atol))
        return ok
    yield ("cumsum", "std.reduce", "f16", small, exact(torch.cumsum(small.float(), 1).half()), SCANS,
           lambda x, out: torch.cumsum(x, 1, out=out))
    yield ("cumprod", "std.reduce", "f16", signs, exact(torch.cumprod(signs, 1)), SCANS,
           lambda x, out: torch.cumprod(x, 1, out=out))
    yield ("cummax", "std.reduce", "f16", small, exact(torch.cummax(small, 1).values), SCANS,
           lambda x, out: torch.cummax(x, 1))
    yield ("cumsum_axis0", "std.reduce", "f16", small, exact(torch.cumsum(small.float(), 0).half()), COLUMNS,
           lambda x, out: torch.cumsum(x, 0, out=out))
    yield ("cummax_axis0", "std.reduce", "f16", small, exact(torch.cummax(small, 0).values), COLUMNS[:2],
           lambda x, out: torch.cummax(x, 0))
    a4 = normal[torch.float16].view(4, 4, M // 16, N)
    b4 = torch.randn(1, 4, 1, N, device="cuda", generator=g).half()
    yield ("add", "std.broadcast", "f16", (a4, b4), exact(a4 + b4), BROADCAST, lambda x, out: torch.add(*x, out=out))
    c4 = torch.rand(4, 1, M // 16, 1, device="cuda", generator=g).half()
    yield ("lerp", "std.broadcast", "f16", (a4, b4, c4),
           close(torch.lerp(a4.float(), b4.float(), c4.float()), rtol=2.0 ** -10, atol=2.0 ** -14),
           BROADCAST, lambda x, out: torch.lerp(*x, out=out))
    cond = torch.rand(4, 4, M // 16, N, device="cuda", generator=g) < 0.5
    yield ("where", "std.broadcast", "f16", (cond, a4, b4), exact(torch.where(cond, a4, b4)), BROADCAST,
           lambda x, out: torch.where(*x, out=out))
    lo, hi = b4 - 1, (c4 + 1).to(torch.float16)
    yield ("clamp", "std.broadcast", "f16", (a4, lo, hi), exact(torch.minimum(torch.maximum(a4, lo), hi)), BROADCAST,
           lambda x, out: torch.clamp(*x, out=out))
    den = b4.abs() + 0.5
    yield ("div", "std.broadcast", "f16", (a4, den), close(a4.float() / den.float(), rtol=2.0 ** -10, atol=2.0 ** -14),
           BROADCAST, lambda x, out: torch.div(*x, out=out))
    a32, b32 = a4.float(), b4.float()
    yield ("add", "std.broadcast", "f32", (a32, b32), exact(a32 + b32), BROADCAST, lambda x, out: torch.add(*x, out=out))
    for dt, name in ((torch.float16, "f16"), (torch.bfloat16, "bf16")):
        x = normal[dt]
        yield ("log_softmax", "std.nn_train", name, x, close(torch.log_softmax(x.float(), 1).to(dt)), ROWS,
               lambda x, out: torch.log_softmax(x, 1, out=out))


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--min-ms", type=float, default=10.0)
    ap.add_argument("--only", default="")
    args = ap.parse_args()
    M, N = 16384, 8192
    g = torch.Generator(device="cuda").manual_seed(0)
    src = torch.randn(M, N, device="cuda", generator=g).half()
    copy_dst = torch.empty_like(src)
    ms_copy = compare({"copy": lambda: copy_dst.copy_(src)}, min_ms=args.min_ms)["copy"]
    gbs = lambda ms: 2 * M * N * 2 / ms / 1e6
    print(f"copy {gbs(ms_copy):.0f} GB/s")
    modules = {}
    for name, module, dt, x, ok, configs, torch_fn in cases(g, M, N):
        if args.only and name not in args.only.split(","):
            continue
        runs = {}
        args_ = x if isinstance(x, tuple) else (x,)
        for c in configs:
            y = torch.full(tuple(torch.broadcast_shapes(*(a.shape for a in args_))), float("nan"),
                           device="cuda", dtype=args_[-1].dtype if name == "where" else args_[0].dtype)
            c = dict(c)
            where_ = c.pop("_module", module)
            if where_ not in modules:
                modules[where_] = tlc.load(where_, target="cuda")
            kernel = c.pop("_kernel", name)
            fn = getattr(modules[where_], kernel)
            try:
                fn(*args_, y, T=dt, **c)
            except Exception as e:  # a configuration the kernel refuses: said, not timed
                print(f"{kernel} {dt} {c}: {type(e).__name__}: {str(e)[:200]}")
                continue
            torch.cuda.synchronize()
            if not ok(y):
                print(f"{kernel} {dt} {c}: WRONG")
                continue
            runs[f"{kernel} {c}"] = (lambda c=c, y=y, a=args_, fn=fn: fn(*a, y, T=dt, **c))
        out = torch.empty_like(y)
        traffic = sum(a.nelement() * a.element_size() for a in args_) + y.nelement() * y.element_size()
        runs["torch"] = (lambda x=x, out=out, f=torch_fn: f(x, out))
        times = compare(runs, min_ms=args.min_ms)
        for k, ms in times.items():
            rate = traffic / ms / 1e6
            print(f"{name:11s} {dt:4s} {k:60s} {ms * 1e3:8.1f} us  {rate:6.0f} GB/s  {rate / gbs(ms_copy):.2f} of copy  "
                  f"{times['torch'] / ms:.2f}x torch")
    return 0


if __name__ == "__main__":
    sys.exit(main())
