"""GEMM and compiler-speed benchmark of examples/gemm.tl on the GPU (one process).

Prints, against cuBLAS (torch.matmul) timed in the same run by the same method (tlc.timing:
CUDA events, warm-up, L2 flushed, median over >= 300 ms, alternating):
- f16 GEMM TFLOP/s at 4096^3 and 8192^3 for a few tile configurations, and the ratio of the
  best to cuBLAS (goal for the sm_80 path: >= 0.6x at 8192^3);
- the transpile time of gemm.tl (parse -> CUDA C; goal < 20 ms), the cold compile (transpile
  + NVRTC; goal < 0.8 s), the cache-hit load (goal < 5 ms);
- the per-launch host overhead of a tiny kernel with 3 arrays and 3 scalars through the tlc
  API against a bare CuPy RawKernel launch with the same arguments (goal: within 1 us).
Writes the numbers as JSON with --json.  Not a test: it asserts nothing about time.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import tlc  # noqa: E402
from tlc.timing import compare  # noqa: E402

GEMM = str(ROOT / "examples" / "gemm.tl")
# The first two take the sm_80 path (mma.sync) also on Hopper; the rest fit wgmma on sm_90a.
CONFIGS = [dict(BM=128, BN=128, BK=32, stages=4, THREADS=128), dict(BM=128, BN=256, BK=32, stages=3, THREADS=256),
           dict(BM=64, BN=256, BK=64, stages=4, THREADS=128),
           dict(BM=128, BN=128, BK=64, stages=4, THREADS=256), dict(BM=128, BN=256, BK=64, stages=3, THREADS=256),
           dict(BM=128, BN=256, BK=64, stages=4, THREADS=256)]


def median_ms(fn, repeats=20) -> float:
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t) * 1e3)
    return statistics.median(times)


def transpile_and_compile(results: dict) -> None:
    from tlc.codegen import generate
    from tlc.driver import check_file
    from tlc.schedule import schedule

    def transpile():
        r = check_file(GEMM)
        generate(schedule(r.program, "matmul", {}), "sm_90a", sources=r.sources)

    transpile()
    results["transpile_ms"] = median_ms(transpile)
    cache = tempfile.mkdtemp(prefix="tlc-bench-cache-")
    os.environ["TLC_CACHE_DIR"] = cache
    t = time.perf_counter()
    mod = tlc.load(GEMM, target="cuda")
    mod.matmul.compiled({"BM": 64, "stages": 2})
    results["cold_compile_ms"] = (time.perf_counter() - t) * 1e3
    t = time.perf_counter()
    mod.matmul.compiled({})
    results["cold_compile_default_ms"] = (time.perf_counter() - t) * 1e3

    def hit():
        m = tlc.load(GEMM, target="cuda")
        m.matmul.compiled({"BM": 64, "stages": 2})

    results["cache_hit_load_ms"] = median_ms(hit, 10)
    # The same without parsing and checking the file again: the kernel cache's own part.
    program = tlc.load(GEMM, target="cuda").program
    results["cache_hit_kernel_ms"] = median_ms(
        lambda: tlc.api.Module(program, "cuda").matmul.compiled({"BM": 64, "stages": 2}), 10)
    results["load_check_ms"] = median_ms(lambda: tlc.load(GEMM, target="cuda"), 10)


def launch_overhead(results: dict) -> None:
    import cupy as cp

    mod = tlc.load(str(ROOT / "bench" / "tiny.tl"), target="cuda")
    n = 1024
    x, y, z = (cp.ones(n, cp.float32) for _ in range(3))
    mod.tiny(x, y, z, 1.0, 2.0, 3)
    src = mod.tiny.cuda_source(arch="sm_80")
    raw = cp.RawKernel(src, "tiny", options=("--std=c++17",))
    args = (x, y, z, np.float32(1.0), np.float32(2.0), np.int32(3), np.int32(n))
    raw((1,), (32,), args)
    cp.cuda.Device().synchronize()
    reps = 20000

    def loop_tlc():
        for _ in range(reps):
            mod.tiny(x, y, z, 1.0, 2.0, 3)
        cp.cuda.Device().synchronize()

    def loop_raw():
        for _ in range(reps):
            raw((1,), (32,), (x, y, z, np.float32(1.0), np.float32(2.0), np.int32(3), np.int32(n)))
        cp.cuda.Device().synchronize()

    tl, rw = [], []
    for _ in range(5):
        for fn, sink in ((loop_tlc, tl), (loop_raw, rw)):
            t = time.perf_counter()
            fn()
            sink.append((time.perf_counter() - t) / reps * 1e6)
    results["launch_us_tlc"] = min(tl)
    results["launch_us_rawkernel"] = min(rw)
    results["launch_overhead_us"] = min(tl) - min(rw)


def gemm(results: dict, sizes) -> None:
    import torch

    mod = tlc.load(GEMM, target="cuda")
    rows = []
    for s in sizes:
        torch.manual_seed(s)
        A = torch.randn(s, s, device="cuda", dtype=torch.float16)
        B = torch.randn(s, s, device="cuda", dtype=torch.float16)
        C = torch.empty(s, s, device="cuda", dtype=torch.float16)
        ref = torch.matmul(A, B)
        contenders = {"cublas": lambda: torch.matmul(A, B)}
        for cfg in CONFIGS:
            try:
                C.fill_(float("nan"))
                mod.matmul(A, B, C, **cfg)
                torch.cuda.synchronize()
                err = float((C.float() - ref.float()).norm() / ref.float().norm())
            except tlc.TlcError as e:
                rows.append({"size": s, "config": cfg, "error": str(e)})
                continue
            name = "tlc " + ",".join(f"{k}={v}" for k, v in cfg.items())
            contenders[name] = (lambda cfg=cfg: mod.matmul(A, B, C, **cfg))
            rows.append({"size": s, "config": cfg, "rel_err": err})
        ms = compare(contenders)
        flop = 2.0 * s ** 3
        for r in rows:
            if r["size"] == s and "rel_err" in r:
                name = "tlc " + ",".join(f"{k}={v}" for k, v in r["config"].items())
                r["ms"] = ms[name]
                r["tflops"] = flop / ms[name] / 1e9
                r["ratio"] = ms["cublas"] / ms[name]
        rows.append({"size": s, "config": "cublas", "ms": ms["cublas"], "tflops": flop / ms["cublas"] / 1e9})
    results["gemm"] = rows


def sass_evidence(results: dict) -> None:
    """Tensor-core instructions and local-memory traffic in the machine code of the best
    configuration (nvcc + cuobjdump on this machine): HGMMA means wgmma, HMMA mma.sync;
    LDL/STL would mean spills."""
    import re
    import shutil
    import subprocess

    best = max((r for r in results.get("gemm", []) if "tflops" in r and r["config"] != "cublas"),
               key=lambda r: r["tflops"], default=None)
    if best is None or not shutil.which("nvcc") or not shutil.which("cuobjdump"):
        return
    from tlc.runtime import target_arch

    arch = target_arch()
    src = tlc.load(GEMM, target="cuda").matmul.cuda_source(arch=arch, **best["config"])
    with tempfile.TemporaryDirectory() as d:
        cu, cubin = Path(d) / "gemm.cu", Path(d) / "gemm.cubin"
        cu.write_text(src)
        flags = ["-gencode=arch=compute_90a,code=sm_90a"] if arch == "sm_90a" else ["-arch=sm_80"]
        subprocess.run(["nvcc", "-std=c++17", *flags, "-cubin", "-o", str(cubin), str(cu)], check=True,
                       capture_output=True)
        sass = subprocess.run(["cuobjdump", "-sass", str(cubin)], check=True, capture_output=True, text=True).stdout
    results["sass"] = {"config": best["config"], "arch": arch,
                       "HGMMA": len(re.findall(r"\bHGMMA", sass)), "HMMA": len(re.findall(r"\bHMMA", sass)),
                       "LDL/STL": len(re.findall(r"\b(LDL|STL)\b", sass))}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="4096,8192")
    ap.add_argument("--json")
    ap.add_argument("--skip-gemm", action="store_true")
    args = ap.parse_args()
    import cupy as cp

    props = cp.cuda.runtime.getDeviceProperties(cp.cuda.Device().id)
    results = {"gpu": props["name"].decode() if isinstance(props["name"], bytes) else props["name"]}
    transpile_and_compile(results)
    launch_overhead(results)
    if not args.skip_gemm:
        gemm(results, [int(x) for x in args.sizes.split(",")])
        sass_evidence(results)
    print(f"GPU: {results['gpu']}")
    print(f"transpile gemm.tl (parse -> CUDA C): {results['transpile_ms']:.1f} ms (goal < 20)")
    print(f"cold compile (transpile + NVRTC): {results['cold_compile_ms']:.0f} ms (goal < 800); "
          f"the default (wgmma) kernel: {results['cold_compile_default_ms']:.0f} ms more")
    print(f"cache-hit load: {results['cache_hit_load_ms']:.1f} ms (goal < 5): parse + check "
          f"{results['load_check_ms']:.1f} ms, the compiled kernel from the cache {results['cache_hit_kernel_ms']:.1f} ms")
    print(f"launch: tlc {results['launch_us_tlc']:.2f} us, RawKernel {results['launch_us_rawkernel']:.2f} us, "
          f"overhead {results['launch_overhead_us']:+.2f} us (goal within 1)")
    for r in results.get("gemm", []):
        if "error" in r:
            print(f"{r['size']}^3 {r['config']}: ERROR {r['error'][:200]}")
        elif r["config"] == "cublas":
            print(f"{r['size']}^3 cuBLAS: {r['tflops']:.0f} TFLOP/s ({r['ms']:.3f} ms)")
        else:
            print(f"{r['size']}^3 tlc {r['config']}: {r['tflops']:.0f} TFLOP/s, {r['ratio']:.2f}x cuBLAS, "
                  f"rel err {r['rel_err']:.1e}")
    if "sass" in results:
        e = results["sass"]
        print(f"SASS of the best ({e['arch']}, {e['config']}): {e['HGMMA']} HGMMA, {e['HMMA']} HMMA, "
              f"{e['LDL/STL']} LDL/STL")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
