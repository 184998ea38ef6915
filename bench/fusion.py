"""Fusion benchmark of tile ops on the GPU, in one process (issue #6).

Three workloads, each timed against its references in the same run (tlc.timing: CUDA events,
L2 flushed before each run, median over >= 300 ms, contenders alternating), after checking
each result against PyTorch in float32:
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
import re
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

sys.path.insert(0, str(ROOT / "bench"))

import tlc  # noqa: E402
from tlc.runtime import target_arch  # noqa: E402
from tlc.timing import compare  # noqa: E402

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


def variant_name(rules: dict) -> str:
    return "kernels [" + (", ".join(f"{k}={v}" for k, v in rules.items()) or "default") + "]"


def variants(op, key: str, *args) -> dict:
    """name -> the kernels of `op` under each variant of `key`, launched into a result
    allocated once."""
    return {variant_name(r): op.with_rules(**r).prepare(*args)[0] for r in VARIANTS[key]}


def best_variant(t: dict) -> str:
    return min((k for k in t if k.startswith("kernels [")), key=t.__getitem__)


def rel_err(torch, got, want) -> float:
    got, want = got.float(), want.float()
    return float(torch.linalg.vector_norm(got - want) / torch.linalg.vector_norm(want))


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
    c = torch.empty(M, N, device="cuda", dtype=torch.float16)
    ref = F.gelu(x.float() @ w.float().T + b, approximate="tanh")
    precise, precise_y = ops.linear_bias_gelu_precise.prepare(x, w, b)
    precise()
    out = {"shape": [M, N, K], "error": rel_err(torch, ops.linear_bias_gelu(x, w, b), ref),
           "precise_error": rel_err(torch, precise_y, ref),
           "eager_error": rel_err(torch, F.gelu(F.linear(x, w, b.half()), approximate="tanh"), ref)}
    t = compare({"tile_op": lambda: ops.linear_bias_gelu(x, w, b),
                 **variants(ops.linear_bias_gelu, "linear_bias_gelu", x, w, b),
                 "gelu_precise kernels": precise,
                 "std.gemm matmul_nt": lambda: gemm.matmul_nt(x, w, c),
                 "torch eager": lambda: F.gelu(F.linear(x, w, b.half()), approximate="tanh")}, min_ms=min_ms)
    flops = 2 * M * N * K
    best = best_variant(t)
    out.update({"ms": t, "tflops": {k: flops / v / 1e9 for k, v in t.items()}, "best": best,
                "vs_gemm": t[best] / t["std.gemm matmul_nt"], "speedup_vs_eager": t["torch eager"] / t[best],
                "call_vs_gemm": t["tile_op"] / t["std.gemm matmul_nt"],
                "precise_vs_gemm": t["gelu_precise kernels"] / t["std.gemm matmul_nt"]})
    print(f"(a) linear+bias+gelu {M}x{N}x{K} f16: {best} {t[best] * 1e3:.0f} us "
          f"({out['tflops'][best]:.0f} TFLOP/s), called as a tile op {t['tile_op'] * 1e3:.0f} us, "
          f"std.gemm alone {t['std.gemm matmul_nt'] * 1e3:.0f} us, eager {t['torch eager'] * 1e3:.0f} us")
    print(f"    time vs std.gemm alone: {out['vs_gemm']:.3f}x (goal <= 1.05; the call {out['call_vs_gemm']:.3f}x); "
          f"speed-up vs eager: {out['speedup_vs_eager']:.2f}x (goal >= 1.3); error {out['error']:.2e} "
          f"(eager {out['eager_error']:.2e})")
    print(f"    with gelu_precise: {t['gelu_precise kernels'] * 1e3:.0f} us = {out['precise_vs_gemm']:.3f}x std.gemm "
          f"alone; error {out['precise_error']:.2e}")
    return out


def bandwidth(out: dict, t: dict, moved: int, copy_gbps: float) -> str:
    """Records the times, GB/s and fractions of the copy bandwidth of a memory-bound workload
    in `out`; returns the best variant."""
    best = best_variant(t)
    gbps = {k: moved / v / 1e6 for k, v in t.items()}
    out.update({"ms": t, "GBps": gbps, "best": best, "of_copy": gbps[best] / copy_gbps,
                "call_of_copy": gbps["tile_op"] / copy_gbps})
    out["summary"] = (f"{best} {t[best] * 1e3:.0f} us = {gbps[best]:.0f} GB/s = {out['of_copy']:.2f}x copy "
                      f"(goal >= 0.9; the call {out['call_of_copy']:.2f}x)")
    return best


def bench_chain(torch, ops, copy_gbps: float, min_ms: float) -> dict:
    g = torch.Generator(device="cuda").manual_seed(1)
    # uniform in [-2, 2): every intermediate stays well inside f16 (f * f < 500), so the error
    # against the float32 reference measures rounding, not overflow
    x = torch.rand(CHAIN, device="cuda", generator=g).mul_(4).sub_(2).half()
    y = torch.rand(CHAIN, device="cuda", generator=g).mul_(4).sub_(2).half()
    out = {"elements": CHAIN, "error": rel_err(torch, ops.chain6(x, y), chain_eager(x.float(), y.float())),
           "eager_error": rel_err(torch, chain_eager(x, y), chain_eager(x.float(), y.float()))}
    t = compare({"tile_op": lambda: ops.chain6(x, y), **variants(ops.chain6, "chain6", x, y),
                 "torch eager": lambda: chain_eager(x, y)}, min_ms=min_ms)
    best = bandwidth(out, t, 3 * CHAIN * 2, copy_gbps)  # two inputs read, one output written
    out["speedup_vs_eager"] = t["torch eager"] / t[best]
    print(f"(b) 6 element-wise ops on 2^28 f16: {out['summary']}; eager {t['torch eager'] * 1e3:.0f} us, "
          f"speed-up {out['speedup_vs_eager']:.2f}x (goal >= 3); error {out['error']:.2e} "
          f"(eager {out['eager_error']:.2e})")
    return out


def bench_softmax(torch, ops, copy_gbps: float, min_ms: float) -> dict:
    M, N = SOFTMAX
    g = torch.Generator(device="cuda").manual_seed(2)
    x = torch.randn(M, N, device="cuda", dtype=torch.float16, generator=g) * 3
    out = {"shape": [M, N], "error": rel_err(torch, ops.row_softmax(x), torch.softmax(x.float(), dim=1))}
    t = compare({"tile_op": lambda: ops.row_softmax(x), **variants(ops.row_softmax, "row_softmax", x),
                 "torch.softmax": lambda: torch.softmax(x, dim=1)}, min_ms=min_ms)
    best = bandwidth(out, t, 2 * M * N * 2, copy_gbps)
    out["vs_torch"] = t["torch.softmax"] / t[best]
    print(f"(c) row softmax ({M}, {N}) f16: {out['summary']}; torch.softmax {t['torch.softmax'] * 1e3:.0f} us, "
          f"ratio {out['vs_torch']:.2f}x (goal >= 1.0); error {out['error']:.2e}")
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
