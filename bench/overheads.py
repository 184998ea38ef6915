"""Compiler and runtime costs, measured by bench/gemm.py in the same process on the GPU:
- the transpile time of examples/gemm.tl (parse -> CUDA C; goal < 20 ms), the cold compile
  (transpile + NVRTC; goal < 0.8 s), the cache-hit load (goal < 5 ms);
- the per-launch host overhead of a tiny kernel with 3 arrays and 3 scalars through the tlc
  API against a bare CuPy RawKernel launch with the same arguments (goal: within 1 us), each
  launch's result checked first.
"""
from __future__ import annotations

import os
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

import tlc
from tlc.timing import Checked, verify

ROOT = Path(__file__).resolve().parents[1]
GEMM = str(ROOT / "examples" / "gemm.tl")


def measure(results: dict) -> None:
    """Both figures into `results`; the cold compiles use a fresh cache, restored after."""
    saved = os.environ.get("TLC_CACHE_DIR")
    try:
        transpile_and_compile(results)
    finally:
        if saved is None:
            os.environ.pop("TLC_CACHE_DIR", None)
        else:
            os.environ["TLC_CACHE_DIR"] = saved
    launch_overhead(results)


def report(results: dict) -> None:
    print(f"transpile gemm.tl (parse -> CUDA C): {results['transpile_ms']:.1f} ms (goal < 20)")
    print(f"cold compile (transpile + NVRTC): {results['cold_compile_ms']:.0f} ms (goal < 800); "
          f"the default (wgmma) kernel: {results['cold_compile_default_ms']:.0f} ms more")
    print(f"cache-hit load: {results['cache_hit_load_ms']:.1f} ms (goal < 5): parse + check "
          f"{results['load_check_ms']:.1f} ms, the compiled kernel from the cache {results['cache_hit_kernel_ms']:.1f} ms")
    if "launch_wrong" in results:
        print(f"launch: not timed, a launch computed the wrong result: {results['launch_wrong']}")
        return
    print(f"launch: tlc {results['launch_us_tlc']:.2f} us, RawKernel {results['launch_us_rawkernel']:.2f} us, "
          f"overhead {results['launch_overhead_us']:+.2f} us (goal within 1)")


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
    # both launches must compute z = x + 2y + 3 (= 6): a launch whose arguments do not match
    # the kernel's parameters would time something else
    for name, launch in (("tlc", lambda: mod.tiny(x, y, z, 1.0, 2.0, 3)), ("RawKernel", lambda: raw((1,), (32,), args))):
        verdict = verify(Checked(launch, cp.full(32, 6.0, cp.float32), 0.0, 0.0, out=z[:32]))
        if not verdict.ok:
            results["launch_wrong"] = f"{name}: {verdict.why}"
            return
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
