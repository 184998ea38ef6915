"""Plain kernels against PyTorch and against tuned tlc on the GPU (one process, a few minutes).

The kernels of bench/plain/ are written as docs/LANGUAGE.md teaches and not tuned (default
constants, no sweep): the compiler chooses every layout (issue #17).  Each is measured, by the
same method in the same run (tlc.timing: CUDA events, warm-up, L2 flushed, median over
>= 300 ms, contenders alternating), against
- PyTorch doing the same work (torch.softmax, F.rms_norm, F.layer_norm, sum, a transposed
  copy, torch.add, matmul, relu(x + b));
- the tuned tlc kernel doing the same work: std.nn's softmax / rms_norm / layer_norm, and for
  the others the tile ops of bench/plain_ops.tl (scheduled by tlc's rules);
and the device's copy bandwidth (a device-to-device copy of 1 GiB).  Goals: the memory-bound
ones at >= 0.8 of copy bandwidth and never below PyTorch; none below 0.8x its tuned
counterpart.  Every contender's output is first checked element by element against a float32
reference (bench/checks.py); a wrong one is reported and never timed.

Prints GB/s (bytes the kernel must move: inputs read once, output written once; TFLOP/s for
the GEMM), the fraction of copy bandwidth, and the ratios (> 1: the plain kernel is faster);
writes bench/results/plain-<gpu>.json (and --json).  Not a test: it asserts nothing about time.

`--dry-run` (no GPU needed): runs the plain kernels and their tlc counterparts on the
interpreter at small sizes and checks each against the NumPy reference, timing nothing.
"""
from __future__ import annotations

import argparse
import math
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import tlc  # noqa: E402
from tlc.timing import Checked, tolerance, verify  # noqa: E402

PLAIN = ROOT / "bench" / "plain"
EPS_RMS, EPS_LN = 1e-6, 1e-5  # the plain kernels' defaults, passed to the tuned ones and PyTorch
ALPHA = 1.75
ULPS = 4  # tolerance in units of the output's precision (bench/rowwise.py says why 4)
GOAL_OF_COPY, GOAL_VS_TUNED = 0.8, 0.8

LARGE = {"rows": (16384, 8192), "square": (8192, 8192), "vector": 1 << 28, "gemm": (8192, 8192, 8192)}
SMALL = {"rows": (4, 1000), "square": (70, 45), "vector": 3001, "gemm": (100, 70, 40)}


@dataclass
class Work:
    """One workload: the plain kernel, its tuned counterpart and PyTorch's (None in a dry
    run), the array the plain kernel writes (or None: the call returns it) and the reference."""
    name: str
    nbytes: int
    flops: int  # 0: memory-bound
    plain: Callable[[], Any]
    plain_out: Any
    tuned_name: str
    tuned: Callable[[], Any]
    tuned_out: Any
    torch: Callable[[], Any] | None
    ref: Any
    out_dtype: Any
    terms: int = 1  # the longest sum per output element in f32 (the tolerance grows as its square root)


class Arrays:
    """Random inputs and float32 references, as PyTorch tensors on the GPU or NumPy arrays."""

    def __init__(self, cuda: bool):
        self.cuda = cuda
        if cuda:
            import torch

            self.torch = torch
            torch.manual_seed(0)
            torch.backends.cuda.matmul.allow_tf32 = False  # the GEMM's reference in f32, not tf32
        self.rng = np.random.default_rng(0)

    def rand(self, shape, dtype: str, scale: float = 1.0):
        if self.cuda:
            t = self.torch
            return (t.randn(shape, device="cuda", dtype=t.float32) * scale).to(getattr(t, dtype))
        return (self.rng.standard_normal(shape) * scale).astype(np.float32).astype(dtype)

    def empty(self, shape, dtype: str):
        if self.cuda:
            return self.torch.empty(shape, device="cuda", dtype=getattr(self.torch, dtype))
        return np.full(shape, np.nan, dtype)

    def f32(self, a):
        return a.float() if self.cuda else a.astype(np.float32)

    def row(self, a, op: str):  # a row statistic, kept as a column
        return getattr(a, {"max": "amax", "sum": "sum", "mean": "mean"}[op])(dim=-1, keepdim=True) if self.cuda \
            else getattr(a, op)(axis=-1, keepdims=True)

    def exp(self, a):
        return a.exp() if self.cuda else np.exp(a)

    def rsqrt(self, a):
        return a.rsqrt() if self.cuda else 1 / np.sqrt(a)

    def relu(self, a):
        return a.clamp_min(0) if self.cuda else np.maximum(a, 0)


def workloads(arr: Arrays, sizes: dict) -> list[Work]:
    plain = {p.stem: tlc.load(str(p), target="cuda" if arr.cuda else "cpu") for p in PLAIN.glob("*.tl")}
    target = "cuda" if arr.cuda else "cpu"
    nn = tlc.load("std.nn", target=target)
    ops = tlc.load(str(ROOT / "bench" / "plain_ops.tl"), target=target)
    torch = arr.torch if arr.cuda else None
    F = torch.nn.functional if torch else None
    out: list[Work] = []

    M, N = sizes["rows"]
    x, w, b = arr.rand((M, N), "float16", 3.0), arr.rand(N, "float16"), arr.rand(N, "float16")
    y1, y2 = arr.empty((M, N), "float16"), arr.empty((M, N), "float16")
    row_bytes = 2 * M * N * 2
    xf = arr.f32(x)
    e = arr.exp(xf - arr.row(xf, "max"))
    out.append(Work("softmax", row_bytes, 0, lambda: plain["softmax"].softmax(x, y1), y1,
                    "std.nn.softmax", lambda: nn.softmax(x, y2), y2,
                    torch and (lambda: torch.softmax(x, dim=-1)), e / arr.row(e, "sum"), "float16"))
    ref = xf * arr.rsqrt(arr.row(xf * xf, "mean") + EPS_RMS) * arr.f32(w)
    out.append(Work("rms_norm", row_bytes, 0, lambda: plain["rms_norm"].rms_norm(x, w, y1), y1,
                    "std.nn.rms_norm", lambda: nn.rms_norm(x, w, y2, EPS_RMS), y2,
                    torch and (lambda: _torch_rms(torch, F, x, w)), ref, "float16"))
    centred = xf - arr.row(xf, "mean")
    ref = centred * arr.rsqrt(arr.row(centred * centred, "mean") + EPS_LN) * arr.f32(w) + arr.f32(b)
    out.append(Work("layer_norm", row_bytes, 0, lambda: plain["layer_norm"].layer_norm(x, w, b, y1), y1,
                    "std.nn.layer_norm", lambda: nn.layer_norm(x, w, b, y2, EPS_LN), y2,
                    torch and (lambda: F.layer_norm(x, (N,), w, b, EPS_LN)), ref, "float16"))
    z = arr.rand((M, N), "float16")
    out.append(Work("bias_relu", row_bytes, 0, lambda: plain["bias_relu"].bias_relu(z, b, y1), y1,
                    "tile op relu(x + b)", lambda: ops.bias_relu_op(z, b), None,
                    torch and (lambda: torch.relu(z + b)), arr.relu(arr.f32(z) + arr.f32(b)), "float16"))
    s = arr.rand((M, N), "float32")
    sums = arr.empty(N, "float32")
    out.append(Work("column_sums", M * N * 4 + N * 4, 0, lambda: plain["column_sums"].column_sums(s, sums), sums,
                    "tile op sum(x, axis=0)", lambda: ops.column_sums_op(s), None,
                    torch and (lambda: s.sum(dim=0)), arr.f32(s.double().sum(dim=0) if arr.cuda else s.sum(axis=0)),
                    "float32", M))

    R, C = sizes["square"]
    t = arr.rand((R, C), "float32")
    tt, tt_torch = arr.empty((C, R), "float32"), arr.empty((C, R), "float32")
    # PyTorch writes the transpose into a tensor made once, as the plain kernel does (a
    # .contiguous() inside the timed call would time its allocation too)
    out.append(Work("transpose", 2 * R * C * 4, 0, lambda: plain["transpose"].transpose(t, tt), tt,
                    "tile op x.T", lambda: ops.transpose_op(t), None,
                    torch and (lambda: tt_torch.copy_(t.t())), t.t() if arr.cuda else t.T, "float32"))

    n = sizes["vector"]
    u, v, o = arr.rand(n, "float32"), arr.rand(n, "float32"), arr.empty(n, "float32")
    out.append(Work("saxpy", 3 * n * 4, 0, lambda: plain["saxpy"].saxpy(u, v, o, ALPHA), o,
                    "tile op a * x + y", lambda: ops.saxpy_op(u, v, ALPHA), None,
                    torch and (lambda: torch.add(v, u, alpha=ALPHA)), ALPHA * u + v, "float32"))

    gm, gn, gk = sizes["gemm"]
    a, bm = arr.rand((gm, gk), "float16"), arr.rand((gk, gn), "float16")
    c = arr.empty((gm, gn), "float32")
    out.append(Work("gemm_f32", (gm * gk + gk * gn) * 2 + gm * gn * 4, 2 * gm * gn * gk,
                    lambda: plain["gemm"].gemm_f32(a, bm, c), c, "tile op a @ b (std.gemm's loop)",
                    lambda: ops.gemm_f32_op(a, bm), None, torch and (lambda: _torch_gemm_f32(torch, a, bm)),
                    arr.f32(a) @ arr.f32(bm), "float32", gk))
    return out


def _torch_rms(torch, F, x, w):
    """F.rms_norm, or where this PyTorch lacks it the same in eager operations."""
    if hasattr(F, "rms_norm"):
        return F.rms_norm(x, (x.shape[-1],), w, EPS_RMS)
    return x * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + EPS_RMS).half() * w


def _torch_gemm_f32(torch, a, b):
    """An f16 product with f32 output: torch.mm's out_dtype where this PyTorch has it, else
    cuBLAS's f16 product (f32 accumulation) converted (the same multiply, a smaller write)."""
    try:
        return torch.mm(a, b, out_dtype=torch.float32)
    except TypeError:
        return torch.mm(a, b).float()


def contenders(work: Work, tol: dict) -> dict:
    out = {"plain": Checked(work.plain, work.ref, out=work.plain_out, **tol),
           "tuned": Checked(work.tuned, work.ref, out=work.tuned_out, **tol)}
    if work.torch is not None:
        out["torch"] = Checked(work.torch, work.ref, **tol)
    return out


def dry_run() -> None:
    """Every contender on the interpreter at small sizes, checked against the reference."""
    bad = 0
    for work in workloads(Arrays(cuda=False), SMALL):
        tol = tolerance(work.out_dtype, work.ref, ULPS * math.sqrt(work.terms))
        for name, c in contenders(work, tol).items():
            v = verify(c)
            bad += not v.ok
            print(f"{work.name:12} {name:6} {'ok' if v.ok else v.why}  rel err {v.rel_err:.1e}")
    if bad:
        raise SystemExit(f"{bad} contender(s) wrong")


def measure(results: dict, work: Work, copy_gbs: float) -> None:
    from checks import ratio, timed, us

    record: dict = {"bytes": work.nbytes, "flops": work.flops, "tuned": work.tuned_name}
    ms = timed(record, contenders(work, tolerance(work.out_dtype, work.ref, ULPS * math.sqrt(work.terms))))
    for name, t in ms.items():
        entry = {"ms": t, "gbs": work.nbytes / t / 1e6, "of_copy": work.nbytes / t / 1e6 / copy_gbs}
        if work.flops:
            entry["tflops"] = work.flops / t / 1e9
        record[name] = entry
    record["plain_vs_torch"] = ratio(ms, "torch", "plain")  # > 1: the plain kernel is faster
    record["plain_vs_tuned"] = ratio(ms, "tuned", "plain")
    results[work.name] = record
    rate = (lambda n: f"{record[n]['tflops']:.0f} TFLOP/s") if work.flops else \
        (lambda n: f"{record[n]['gbs']:.0f} GB/s = {record[n]['of_copy']:.2f} of copy")
    shown = {n: f"{rate(n)}, {us(ms, n)}" if n in ms else us(ms, n) for n in ("plain", "tuned", "torch")}
    goals = []
    if "plain" in ms and not work.flops:
        goals.append(f"copy {'ok' if record['plain']['of_copy'] >= GOAL_OF_COPY else 'MISSED'}")
        goals.append(f"torch {'ok' if not record['plain_vs_torch'] < 1.0 else 'MISSED'}")
    goals.append(f"tuned {'ok' if not record['plain_vs_tuned'] < GOAL_VS_TUNED else 'MISSED'}")
    print(f"{work.name}: plain {shown['plain']}; {work.tuned_name} {shown['tuned']}; torch {shown['torch']}")
    print(f"  plain / torch {record['plain_vs_torch']:.2f}x, plain / tuned {record['plain_vs_tuned']:.2f}x "
          f"(goals: {', '.join(goals)})")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--json", help="also write the results here")
    ap.add_argument("--dry-run", action="store_true", help="check every contender on the interpreter, no GPU")
    ap.add_argument("--only", help="comma-separated workloads (softmax,column_sums,...); all by default")
    args = ap.parse_args()
    only = set(args.only.split(",")) if args.only else None
    if args.dry_run:
        dry_run()
        return
    from checks import save
    from rowwise import copy_bandwidth, gpu_name, short_name

    name = gpu_name()
    results: dict = {"gpu": name, "sizes": LARGE}
    copy_gbs = copy_bandwidth(results)
    print(f"GPU: {name}; device-to-device copy: {copy_gbs:.0f} GB/s")
    arr = Arrays(cuda=True)
    for work in workloads(arr, LARGE):
        if only is None or work.name in only:
            measure(results, work, copy_gbs)
    save(results, ROOT / "bench" / "results" / f"plain-{short_name(name)}.json", args.json)


if __name__ == "__main__":
    main()
