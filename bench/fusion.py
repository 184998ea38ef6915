"""Fusion benchmark of tile ops on the GPU, in one process (issue #6).

Three workloads, each timed against its references in the same run (tlc.timing: CUDA events,
L2 flushed before each run, median over >= 300 ms, contenders alternating); every contender's
output (each variant's, std.gemm's, PyTorch's) is first checked element by element against
PyTorch in float32, and a wrong one is reported and never timed (bench/checks.py):
(a) y = gelu(x @ w.T + b) as one @fuse tile op, against std.gemm's matmul_nt alone on the same
    shape (goal: at most 1.05x its time) and against PyTorch eager, F.linear + F.gelu(tanh)
    (goal: at least 1.3x faster); std.math's gelu runs on the hardware tanh (one MUFU an
    element), and the same op with gelu_precise (two) is timed beside it;
(b) a chain of 6 element-wise ops on 2^28 f16 elements, against the device-to-device copy
    bandwidth measured here (goal: at least 0.9x) and PyTorch eager (goal: at least 3x faster);
(c) row softmax of a (16384, 8192) f16 matrix, against the copy bandwidth (goal: at least 0.9x)
    and torch.softmax (goal: at least 1.0x).
"tile_op" is the tile op called as a user calls it (PyTorch tensors in, a new tensor out: its
time includes the call's host work and the result's allocation); "kernels [rules]" are its
kernels alone (`TileOp.prepare`), for each of a few scheduling variants (`TileOp.with_rules`)
timed in the same round, so that one run picks the best; the ratios are printed for the best
variant and every variant is in the JSON.  Writes bench/results/fusion-<gpu>.json (or --json).
Not a test: it asserts nothing about time.
"""
from __future__ import annotations

import argparse
import datetime
import json
import math
import re
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

sys.path.insert(0, str(ROOT / "bench"))

import tlc  # noqa: E402
from tlc.runtime import target_arch  # noqa: E402
from tlc.timing import Checked, tolerance  # noqa: E402

from checks import ratio, timed, us  # noqa: E402

from gemm import copy_bandwidth  # noqa: E402  (a 1 GiB device-to-device copy, bytes read + written)

SOURCE = """
from std.math import gelu, gelu_precise

@fuse
@tile_op
def linear_bias_gelu(x: f16[M, K], w: f16[N, K], b: f32[N]) -> f16[M, N]:
    return f16(gelu(x @ w.T + b))

@fuse
@tile_op
def linear_bias_gelu_precise(x: f16[M, K], w: f16[N, K], b: f32[N]) -> f16[M, N]:
    return f16(gelu_precise(x @ w.T + b))

@fuse
@tile_op
def chain6(x: f16[N], y: f16[N]) -> f16[N]:
    a = x * y
    c = a + x
    d = c * 0.5
    e = exp(d)
    f = e - y
    return f * f

@fuse
@tile_op
def row_softmax(x: f16[M, N]) -> f16[M, N]:
    return softmax(x, axis=1)
"""

LINEAR = (8192, 4096, 4096)  # M, N, K
CHAIN = 1 << 28
SOFTMAX = (16384, 8192)
SIZES = {"linear_bias_gelu": dict(zip("MNK", LINEAR)), "chain6": {"N": CHAIN}, "row_softmax": dict(zip("MN", SOFTMAX))}
# the scheduling variants timed per workload (tlc.schedule.tileops.Rules fields; {} = the defaults)
VARIANTS = {
    "linear_bias_gelu": [{}],
    # the default measured best (416 us = 0.92x copy): ew_runs=4 493, ew_threads=256 426, min_blocks=4 460
    "chain6": [{}, {"ew_runs": 4}, {"ew_threads": 256}, {"ew_threads": 512}, {"ew_runs": 1, "ew_threads": 256}],
    # the default asks for 4 blocks per SM (64 registers, no spills: 140 us = 0.91x copy); 3 (72
    # registers) 163 us; 2 (ptxas's own choice, 125 registers) 209 us; without kept exponentials 149 us
    "row_softmax": [{}, {"min_blocks": 3}, {"min_blocks": 2}, {"row_keep_exp": False}],
}


# Tolerances (tlc.timing.tolerance: units of f16's precision, atol against the reference's RMS).
# A kernel's f16 output is rounded once (half a unit) from f32 arithmetic; the hardware tanh
# of std.math's gelu adds 2^-11 relative; PyTorch eager rounds each operation's result to f16
# (F.linear, then F.gelu: two roundings).  4 units cover all of them; a wrong tile, row or
# element is off by far more.  The eager chain of 6 f16 operations needs more: exp and the
# subtraction amplify earlier roundings (4.7 units at worst over 2^22 elements, in NumPy).
ULPS = 4
CHAIN_ULPS = 8


def variant_name(rules: dict) -> str:
    return "kernels [" + (", ".join(f"{k}={v}" for k, v in rules.items()) or "default") + "]"


def variants(op, key: str, args: tuple, ref, tol: dict) -> dict:
    """name -> the kernels of `op` under each variant of `key`, launched into a result
    allocated once, checked against `ref`."""
    out = {}
    for r in VARIANTS[key]:
        try:
            launch, result = op.with_rules(**r).prepare(*args)
        except Exception as e:  # a variant that cannot be built is reported by its check, and the others run
            launch, result = (lambda e=e: _raise(e)), None
        out[variant_name(r)] = Checked(launch, ref, out=result, **tol)
    return out


def _raise(e: Exception):
    raise e


def best_variant(t: dict) -> str | None:
    """The fastest of the kernel variants that were timed (a wrong one never is)."""
    return min((k for k in t if k.startswith("kernels [")), key=t.__getitem__, default=None)


def chain_eager(x, y):
    a = x * y
    c = a + x
    d = c * 0.5
    e = d.exp()
    f = e - y
    return f * f


def bench_linear(torch, ops, gemm, min_ms: float) -> dict:
    import torch.nn.functional as F

    M, N, K = LINEAR
    g = torch.Generator(device="cuda").manual_seed(0)
    x = torch.randn(M, K, device="cuda", dtype=torch.float16, generator=g)
    w = torch.randn(N, K, device="cuda", dtype=torch.float16, generator=g) * K ** -0.5
    b = torch.randn(N, device="cuda", dtype=torch.float32, generator=g)
    b16 = b.half()  # F.linear takes the bias in x's dtype: cast once, outside the timed call
    c = torch.empty(M, N, device="cuda", dtype=torch.float16)
    matmul_ref = x.float() @ w.float().T
    ref = F.gelu(matmul_ref + b, approximate="tanh")
    tol, matmul_tol = tolerance(torch.float16, ref, ULPS), tolerance(torch.float16, matmul_ref, ULPS)
    precise, precise_y = ops.linear_bias_gelu_precise.prepare(x, w, b)
    out = {"shape": [M, N, K]}
    t = timed(out, {"tile_op": Checked(lambda: ops.linear_bias_gelu(x, w, b), ref, **tol),
                    **variants(ops.linear_bias_gelu, "linear_bias_gelu", (x, w, b), ref, tol),
                    "gelu_precise kernels": Checked(precise, ref, out=precise_y, **tol),
                    "std.gemm matmul_nt": Checked(lambda: gemm.matmul_nt(x, w, c), matmul_ref, out=c, **matmul_tol),
                    "torch eager": Checked(lambda: F.gelu(F.linear(x, w, b16), approximate="tanh"), ref, **tol)},
              min_ms=min_ms)
    flops = 2 * M * N * K
    best = best_variant(t)
    out.update({"ms": t, "tflops": {k: flops / v / 1e9 for k, v in t.items()}, "best": best,
                "vs_gemm": ratio(t, best, "std.gemm matmul_nt"), "speedup_vs_eager": ratio(t, "torch eager", best),
                "call_vs_gemm": ratio(t, "tile_op", "std.gemm matmul_nt"),
                "precise_vs_gemm": ratio(t, "gelu_precise kernels", "std.gemm matmul_nt")})
    err = out["rel_err"]
    print(f"(a) linear+bias+gelu {M}x{N}x{K} f16: {best} {us(t, best)} "
          f"({flops / t[best] / 1e9 if best else math.nan:.0f} TFLOP/s), called as a tile op {us(t, 'tile_op')}, "
          f"std.gemm alone {us(t, 'std.gemm matmul_nt')}, eager {us(t, 'torch eager')}")
    print(f"    time vs std.gemm alone: {out['vs_gemm']:.3f}x (goal <= 1.05; the call {out['call_vs_gemm']:.3f}x); "
          f"speed-up vs eager: {out['speedup_vs_eager']:.2f}x (goal >= 1.3); error {err['tile_op']:.2e} "
          f"(eager {err['torch eager']:.2e})")
    print(f"    with gelu_precise: {us(t, 'gelu_precise kernels')} = {out['precise_vs_gemm']:.3f}x std.gemm "
          f"alone; error {err['gelu_precise kernels']:.2e}")
    return out


def bandwidth(out: dict, t: dict, moved: int, copy_gbps: float) -> str | None:
    """Records the times, GB/s and fractions of the copy bandwidth of a memory-bound workload
    in `out`; returns the best variant."""
    best = best_variant(t)
    gbps = {k: moved / v / 1e6 for k, v in t.items()}
    out.update({"ms": t, "GBps": gbps, "best": best, "of_copy": gbps.get(best, math.nan) / copy_gbps,
                "call_of_copy": gbps.get("tile_op", math.nan) / copy_gbps})
    out["summary"] = (f"{best} {us(t, best)} = {gbps.get(best, math.nan):.0f} GB/s = {out['of_copy']:.2f}x copy "
                      f"(goal >= 0.9; the call {out['call_of_copy']:.2f}x)")
    return best


def bench_chain(torch, ops, copy_gbps: float, min_ms: float) -> dict:
    g = torch.Generator(device="cuda").manual_seed(1)
    # uniform in [-2, 2): every intermediate stays well inside f16 (f * f < 500), so the error
    # against the float32 reference measures rounding, not overflow
    x = torch.rand(CHAIN, device="cuda", generator=g).mul_(4).sub_(2).half()
    y = torch.rand(CHAIN, device="cuda", generator=g).mul_(4).sub_(2).half()
    ref = chain_eager(x.float(), y.float())
    tol = tolerance(torch.float16, ref, CHAIN_ULPS)
    out = {"elements": CHAIN}
    t = timed(out, {"tile_op": Checked(lambda: ops.chain6(x, y), ref, **tol),
                    **variants(ops.chain6, "chain6", (x, y), ref, tol),
                    "torch eager": Checked(lambda: chain_eager(x, y), ref, **tol)}, min_ms=min_ms)
    del ref
    best = bandwidth(out, t, 3 * CHAIN * 2, copy_gbps)  # two inputs read, one output written
    out["speedup_vs_eager"] = ratio(t, "torch eager", best)
    print(f"(b) 6 element-wise ops on 2^28 f16: {out['summary']}; eager {us(t, 'torch eager')}, "
          f"speed-up {out['speedup_vs_eager']:.2f}x (goal >= 3); error {out['rel_err']['tile_op']:.2e} "
          f"(eager {out['rel_err']['torch eager']:.2e})")
    return out


def bench_softmax(torch, ops, copy_gbps: float, min_ms: float) -> dict:
    M, N = SOFTMAX
    g = torch.Generator(device="cuda").manual_seed(2)
    x = torch.randn(M, N, device="cuda", dtype=torch.float16, generator=g) * 3
    ref = torch.softmax(x.float(), dim=1)
    tol = tolerance(torch.float16, ref, ULPS)
    out = {"shape": [M, N]}
    t = timed(out, {"tile_op": Checked(lambda: ops.row_softmax(x), ref, **tol),
                    **variants(ops.row_softmax, "row_softmax", (x,), ref, tol),
                    "torch.softmax": Checked(lambda: torch.softmax(x, dim=1), ref, **tol)}, min_ms=min_ms)
    best = bandwidth(out, t, 2 * M * N * 2, copy_gbps)
    out["vs_torch"] = ratio(t, "torch.softmax", best)
    print(f"(c) row softmax ({M}, {N}) f16: {out['summary']}; torch.softmax {us(t, 'torch.softmax')}, "
          f"ratio {out['vs_torch']:.2f}x (goal >= 1.0); error {out['rel_err']['tile_op']:.2e}")
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="100 ms per contender instead of 300")
    ap.add_argument("--json", help="where to write the results (default bench/results/fusion-<gpu>.json)")
    args = ap.parse_args()
    import torch

    started = time.perf_counter()
    props = torch.cuda.get_device_properties(0)
    arch = target_arch()
    min_ms = 100.0 if args.quick else 300.0
    results = {"gpu": props.name, "arch": arch, "torch": torch.__version__, "quick": args.quick,
               "date": datetime.datetime.now().isoformat(timespec="seconds")}
    print(f"GPU: {props.name} ({arch}), PyTorch {torch.__version__}")
    results["copy_GBps"] = copy_gbps = copy_bandwidth(torch, min_ms)
    print(f"device-to-device copy: {copy_gbps:.0f} GB/s (read + write)")
    ops = tlc.compile_source(SOURCE, target="cuda", path="bench/fusion.tl")
    gemm = tlc.load("std.gemm", target="cuda")
    for key, run in (("linear_bias_gelu", lambda: bench_linear(torch, ops, gemm, min_ms)),
                     ("chain6", lambda: bench_chain(torch, ops, copy_gbps, min_ms)),
                     ("row_softmax", lambda: bench_softmax(torch, ops, copy_gbps, min_ms))):
        try:
            results[key] = run()
            print("    every variant: " + ", ".join(f"{k} {v * 1e3:.0f} us" for k, v in results[key]["ms"].items()))
            results[key]["plan"] = getattr(ops, key).program({}, arch, SIZES[key]).describe()
        except Exception as e:  # one workload's failure is reported, and the others still run
            print(f"!! {key}: {type(e).__name__}: {e}")
            results[key] = {"error": f"{type(e).__name__}: {e}"}
        torch.cuda.empty_cache()
    results["seconds"] = round(time.perf_counter() - started, 1)
    slug = re.sub(r"[^a-z0-9]+", "-", props.name.lower().replace("nvidia", "")).strip("-")
    path = Path(args.json) if args.json else ROOT / "bench" / "results" / f"fusion-{slug}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(results, indent=1) + "\n")
    print(f"wrote {path} ({results['seconds']} s)")


if __name__ == "__main__":
    main()
