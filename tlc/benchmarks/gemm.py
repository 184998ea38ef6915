"""GEMM benchmark of std.gemm against the vendor library on the GPU, in one process (issue #5).

For each precision (f16, bf16, tf32, f8, f8 block-scaled, i8) and shape (4096^3, 8192^3, the
decode shapes M = 16..128 with N = K = 8192, 8192 x 8192 x 1024; f16 adds a few-tile split-K
shape) it runs std.gemm's kernels and the vendor's (torch.matmul / F.linear on cuBLAS,
torch._scaled_mm for fp8, torch._int_mm for int8) on the same random inputs and prints:
- the relative error of each against a float32 (int8: exact) reference; every element of each
  output (the vendor's too) is checked first (tlc.timing.verify), and a wrong one is reported
  as WRONG and never timed;
- TFLOP/s and the ratio to the vendor (> 1: std.gemm is faster);
- for the decode shapes, GB/s and the fraction of the device-to-device copy bandwidth measured
  in this process (goal: >= 85%; F.linear 87-89% on the H200 with the L2 flushed by a read, 72%
  when it was flushed by writes: see tlc/timing.py);
- SASS evidence of each std kernel as it ran (wgmma: HGMMA/QGMMA/IGMMA; local memory: LDL/STL)
  from cuobjdump, or "unknown" and why;
- a kernel that std.gemm lacks is reported as MISSING, in the output and the JSON;
plus, from bench/gemm.py in a source checkout, the compiler and launch costs of
bench/overheads.py.  Timing: tlc.timing (CUDA events, L2 flushed before each run, median over
>= 300 ms, contenders alternating).  Writes JSON (bench/results/gemm-<gpu>.json from the bench
script, gemm-<gpu>.json under `tlc bench --out DIR`, or --json) and a PNG chart beside it
(tlc/benchmarks/chart.py: ratio bars and a roofline against the copy bandwidth and cuBLAS's
f16 rate, both measured in the run: ceilings.py).  Not a test: it asserts nothing about time.
"""
from __future__ import annotations

import argparse
import re
import time
from pathlib import Path

import tlc
from tlc.timing import Checked, compare, tolerance, verify

from . import gemm_cases, sass
from . import ceilings
from .ceilings import copy_bandwidth, device_facts, gpu_slug  # noqa: F401  (bench/fusion.py's copy_bandwidth)
from .checks import write

SHAPES = [(4096, 4096, 4096), (8192, 8192, 8192), (16, 8192, 8192), (32, 8192, 8192), (64, 8192, 8192),
          (128, 8192, 8192), (8192, 8192, 1024)]
FEW_TILES = (512, 512, 16384)  # f16 only: what split-K is for
QUICK_SHAPES = [(8192, 8192, 8192), (16, 8192, 8192)]
TOO_SLOW_MS = 250.0  # one run slower than this is reported, not timed (it would eat the run's budget)


def main(argv=None, *, results_dir: Path | None = None, overheads=None) -> dict:
    """The benchmark, its options as `argv` (bench/gemm.py's command line); JSON and the chart
    are written under `results_dir` (default: the current folder); `overheads` is
    bench/overheads.py where the source checkout has it.  Returns the results."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="8192^3 and M=16 only, 100 ms per contender, no sweep")
    ap.add_argument("--precisions", default=",".join(gemm_cases.PRECISIONS))
    ap.add_argument("--json", help="where to write the results (default bench/results/gemm-<gpu>[-quick].json)")
    ap.add_argument("--skip-overheads", action="store_true")
    ap.add_argument("--no-chart", action="store_true", help="write no PNG chart (it needs matplotlib)")
    ap.add_argument("--no-sweep", action="store_true",
                    help="only the recorded configurations at the decode shapes (the sweep roughly doubles those rows)")
    args = ap.parse_args(argv)
    import torch

    started = time.perf_counter()
    results = {"suite": "gemm", **device_facts(torch), "quick": args.quick,
               "cuobjdump": sass.find_cuobjdump() or "not found"}
    arch = results["arch"]
    min_ms = 100.0 if args.quick else 300.0
    print(f"GPU: {results['gpu']} ({arch}, {results['sms']} SMs), PyTorch {torch.__version__}")
    ceilings.measure(torch, results, min_ms)
    results["read_128MiB_GBps"] = read_bandwidth(8192 * 8192 * 2, min_ms)
    print(f"a read-only kernel over 128 MiB (a decode GEMM's weight): {results['read_128MiB_GBps']:.0f} GB/s, "
          f"{results['read_128MiB_GBps'] / results['copy_GBps']:.2f} of the copy bandwidth: the ceiling of the decode rows")

    mod = tlc.load("std.gemm", target="cuda")
    shapes = QUICK_SHAPES if args.quick else SHAPES
    rows, missing = [], set()
    for precision in args.precisions.split(","):
        for shape in shapes + ([FEW_TILES] if precision == "f16" and not args.quick else []):
            try:
                case = gemm_cases.build(torch, mod, precision, shape, seed=len(rows), sweep=not (args.quick or args.no_sweep),
                                        sms=results["sms"])
            except Exception as e:  # inputs or references this PyTorch cannot make: said, and the run goes on
                print(f"!! {precision} {shape_text(shape)}: ERROR building the case: {type(e).__name__}: {e}")
                rows.append({"precision": precision, "shape": list(shape), "error": f"{type(e).__name__}: {e}"})
                continue
            for note in case.notes:
                print(f"!! {precision} {shape_text(shape)}: {note}")
                missing.update(re.findall(r"MISSING: std.gemm has no kernel '(\w+)'", note))
            case_rows = measure(torch, mod, arch, case, min_ms, results["copy_GBps"])
            for r in case_rows:
                print(row_text(r))
            rows.append({"precision": precision, "shape": list(shape), "bytes": case.bytes_moved,
                         "flops": 2.0 * shape[0] * shape[1] * shape[2], "notes": case.notes, "contenders": case_rows})
            del case
            torch.cuda.empty_cache()
    results["missing_kernels"] = sorted(missing)
    results["cases"] = rows
    results["summary"] = summary(rows)
    print("best std.gemm per case (ratio to the vendor; decode shapes: fraction of copy bandwidth, goal >= 85%):")
    for line in results["summary"]:
        print("  " + line)
    if missing:
        print(f"!! MISSING std.gemm kernels, not measured: {', '.join(sorted(missing))}")
    if overheads is not None and not args.skip_overheads:
        overheads.measure(results)
        overheads.report(results)
    results["wall_s"] = time.perf_counter() - started
    print(f"wall time {results['wall_s']:.0f} s")
    slug = gpu_slug(results["gpu"]) + ("-quick" if args.quick else "")
    write(results, args.json or Path(results_dir or ".") / f"gemm-{slug}.json", chart=not args.no_chart)
    return results


_READ_KERNEL = r"""
extern "C" __global__ void read_all(const uint4* __restrict__ p, long long n, unsigned* out) {
  unsigned acc = 0;
  const long long stride = 1ll * gridDim.x * blockDim.x;
  long long i = 1ll * blockIdx.x * blockDim.x + threadIdx.x;
  for (; i + 3 * stride < n; i += 4 * stride) {  // four 16-byte loads in flight per thread
    uint4 a = __ldg(p + i), b = __ldg(p + i + stride), c = __ldg(p + i + 2 * stride), d = __ldg(p + i + 3 * stride);
    acc ^= a.x ^ a.y ^ a.z ^ a.w ^ b.x ^ b.y ^ b.z ^ b.w ^ c.x ^ c.y ^ c.z ^ c.w ^ d.x ^ d.y ^ d.z ^ d.w;
  }
  for (; i < n; i += stride) { uint4 a = __ldg(p + i); acc ^= a.x ^ a.y ^ a.z ^ a.w; }
  if (acc == 0x12345678u) *out = acc;  // keeps the loads; practically never stores
}
"""


def read_bandwidth(nbytes: int, min_ms: float) -> float:
    """GB/s of a plain streaming read of `nbytes` (16-byte loads, every SM busy), timed like
    every kernel here: what any memory-bound kernel of that size can reach, launch included."""
    import cupy as cp

    kernel = cp.RawKernel(_READ_KERNEL, "read_all")
    buf, out = cp.ones(nbytes // 4, dtype=cp.uint32), cp.zeros(1, cp.uint32)
    blocks = cp.cuda.Device().attributes["MultiProcessorCount"] * 4
    n = cp.int64(nbytes // 16)
    ms = compare({"read": lambda: kernel((blocks,), (512,), (buf, n, out))}, min_ms=min_ms)["read"]
    return nbytes / ms / 1e6


def measure(torch, mod, arch: str, case, min_ms: float, copy_gbps: float) -> list:
    """One row per contender: its error, and (when it ran) its time against its vendor."""
    M, N, K = case.shape
    rows, timed = [], {}
    tol = tolerance(gemm_cases.UNIT[case.precision], case.ref, gemm_cases.ULPS.get(case.precision, 4))
    for c in case.contenders:
        row = {"contender": c.label, "vs": c.vs}
        rows.append(row)
        verdict = verify(Checked(c.run, case.ref, out=c.out, **tol))  # a wrong one is never timed
        row.update(rel_err=verdict.rel_err, ok=verdict.ok)
        if not verdict.ok:
            row["error"] = verdict.why
            continue
        try:
            single = time_once(torch, c.run)
            if c.kernel:
                row.update(std_facts(mod, arch, c))
        except Exception as e:  # a kernel that fails to launch again or to show its SASS is reported
            row["error"] = f"ERROR: {type(e).__name__}: {str(e).strip()[:400]}"
            continue
        if single > TOO_SLOW_MS:
            row["error"] = f"too slow to time: one run took {single:.0f} ms"
            row["ms"] = single
            continue
        timed[c.label] = c.run
    ms = compare(timed, min_ms=min_ms) if timed else {}
    for row in rows:
        t = ms.get(row["contender"])
        if t is None:
            continue
        row["ms"] = t
        row["tflops"] = 2.0 * M * N * K / t / 1e9
        if row["vs"] in ms:
            row["ratio"] = ms[row["vs"]] / t
        if M <= 128:
            row["GBps"] = case.bytes_moved / t / 1e6
            row["copy_fraction"] = row["GBps"] / copy_gbps
    for row in rows:
        row["case"] = f"{case.precision} {shape_text(case.shape)}"
    return rows


def time_once(torch, fn) -> float:
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    fn()
    end.record()
    end.synchronize()
    return start.elapsed_time(end)


_sass_cache: dict = {}


def std_facts(mod, arch: str, c) -> dict:
    """The constants a std call ran with (config.json's unless given) and its SASS evidence."""
    k = getattr(mod, c.kernel)
    values, consts = k.bind(c.args, dict(c.consts))
    consts = k.with_recorded(values, consts, arch)
    key = (c.kernel, tuple(sorted((n, str(v)) for n, v in consts.items())))
    if key not in _sass_cache:
        compiled = k.compiled(consts)
        found = sass.evidence(compiled.binary)
        if "unknown" in found:  # cuobjdump cannot read every NVRTC cubin: read nvcc's of the same source
            found = sass.evidence_of_source(compiled.generated.source, arch)
        _sass_cache[key] = found
    return {"kernel": c.kernel, "constants": {n: v if isinstance(v, (int, float, bool)) else str(v)
                                              for n, v in consts.items()}, "sass": _sass_cache[key]}


def summary(cases: list) -> list:
    """One line per case: its fastest correct std contender against the vendor."""
    out = []
    for case in cases:
        name = f"{case['precision']} {shape_text(case['shape'])}"
        best, vendor = best_std(case)
        if best is None:
            out.append(f"{name}: no correct std.gemm result" + (f" ({case['error']})" if "error" in case else ""))
            continue
        text = f"{name}: {best['contender']} {best['tflops']:.0f} TFLOP/s"
        if "ratio" in best:
            text += f", {best['ratio']:.2f}x {best['vs']}"
        if "copy_fraction" in best:
            text += f", {100 * best['copy_fraction']:.0f}% of copy"
            if vendor is not None and "copy_fraction" in vendor:
                text += f" (vendor {100 * vendor['copy_fraction']:.0f}%)"
        out.append(text)
    return out


def best_std(case: dict) -> tuple:
    """(the fastest correct std.gemm row of a case, the vendor's timed row), each None when
    there is none."""
    rows = case.get("contenders", [])
    good = [r for r in rows if (r["vs"] is not None or r.get("kernel")) and r.get("ok") and "tflops" in r]
    vendor = next((r for r in rows if r.get("kernel") is None and "tflops" in r), None)
    return (max(good, key=lambda r: r["tflops"]) if good else None), vendor


def shape_text(shape) -> str:
    M, N, K = shape
    return f"{M}^3" if M == N == K else f"M={M} N={N} K={K}"


def row_text(r: dict) -> str:
    head = f"{r['case']:<24} {r['contender']:<44}"
    if "error" in r:
        return f"{head} {r['error'][:300]}"
    parts = [f"{r['ms']:8.3f} ms", f"{r['tflops']:6.0f} TFLOP/s"]
    if "GBps" in r:
        parts.append(f"{r['GBps']:5.0f} GB/s = {100 * r['copy_fraction']:3.0f}% of copy")
    if "ratio" in r:
        parts.append(f"{r['ratio']:.2f}x {r['vs']}")
    parts.append(f"err {r['rel_err']:.1e} {'ok' if r['ok'] else 'WRONG'}")
    text = f"{head} " + "  ".join(parts)
    if "sass" in r:
        consts = ",".join(f"{n}={v}" for n, v in r["constants"].items() if n != "T")
        text += f"\n{'':<24} {'':<44} {sass.summary(r['sass'])}  [{consts}]"
    return text

