"""The one-part build of a split-K GEMM on the GPU (#15, time to first result;
tlc/runtime/one_part.py, the switch ONE_PART_BUILD off until this has run):

    python3 bench/one_part.py [--shapes 4096,8192] [--min-ms 100]

For std.gemm's matmul and matmul_nt (f16) at M = N = K = each shape (launches that
take K in one part), both builds compiled in this process (`compile_kernel(..., one_part=...)`:
the runtime's first build with TL_ONE_PART and without), each launched and its C checked against
CuPy's matmul, then timed alternately (tlc.runtime.benchmark: L2 flushed, median of at least
--min-ms).  Then NVRTC's wall time of each build of matmul f16 (after a warm-up compile, the two
alternating, 2 each) and a launch in parts of K (256 x 256 x 16384: the build without
TL_ONE_PART, compiled at that launch) checked.  A row is `kernel shape: general ms, one-part ms,
ratio`; the answer flips ONE_PART_BUILD where no ratio is above 1.01."""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

KERNELS = (("matmul", False), ("matmul_nt", True))


def operands(cp, m, n, k, dtype, nt: bool):
    a = (cp.random.rand(m, k, dtype=cp.float32) - 0.5).astype(dtype)
    b = (cp.random.rand(n, k, dtype=cp.float32) - 0.5).astype(dtype) if nt else \
        (cp.random.rand(k, n, dtype=cp.float32) - 0.5).astype(dtype)
    want = a.astype(cp.float32) @ (b.T if nt else b).astype(cp.float32)
    return {"A": a, "B": b, "C": cp.zeros((m, n), dtype)}, want


def check(cp, args, want, label):
    err = float(cp.abs(args["C"].astype(cp.float32) - want).max())
    bound = 0.02 * float(cp.abs(want).max()) + 0.05
    if not err <= bound:
        raise SystemExit(f"{label}: C differs from CuPy's by {err} (allowed {bound}): not timed")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--shapes", default="4096,8192")
    ap.add_argument("--min-ms", type=float, default=100.0)
    args = ap.parse_args()
    import cupy as cp

    import tlc
    from tlc.runtime import benchmark, built_source, compile_kernel
    from tlc.runtime import compile as rc
    from tlc.runtime.args import LaunchFacts

    gemm = tlc.load("std.gemm")
    arch = tlc.runtime.target_arch(0)
    for name, nt in KERNELS:
        k = getattr(gemm, name)
        kernel, gen = k.scheduled({}, arch), k.generated({}, arch)
        builds = {b: compile_kernel(kernel, gen, one_part=b) for b in (False, True)}
        assert builds[True].one_part and not builds[False].one_part, "matmul has no one-part build"
        for s in (int(x) for x in args.shapes.split(",")):
            ops, want = operands(cp, s, s, s, cp.float16, nt)
            times = {}
            for b, compiled in builds.items():
                ops["C"].fill(0)
                compiled(ops)
                cp.cuda.runtime.deviceSynchronize()
                check(cp, ops, want, f"{name} {s}^3 one_part={b}")
            for b in (False, True, False, True):
                times.setdefault(b, []).append(benchmark(builds[b], ops, min_ms=args.min_ms))
            g, o = min(times[False]), min(times[True])
            print(f"{name} f16 {s}^3: general {g:.4f} ms, one-part {o:.4f} ms, ratio {o / g:.4f} "
                  f"(runs {times})", flush=True)
    k = gemm.matmul
    kernel, gen = k.scheduled({}, arch), k.generated({}, arch)
    nvrtc_arch = rc.nvrtc_arch(arch, rc.device_capability(0), rc.nvrtc_supported_archs())
    asserts = LaunchFacts.of(kernel).asserts
    sources = {b: built_source(gen, asserts, one_part=b) for b in (False, True)}
    rc.nvrtc_compile(sources[False], nvrtc_arch, gen.name)  # NVRTC's first compile in the process
    walls = {False: [], True: []}
    for b in (False, True, False, True):
        t0 = time.perf_counter()
        rc.nvrtc_compile(sources[b], nvrtc_arch, gen.name)
        walls[b].append((time.perf_counter() - t0) * 1e3)
    print(f"NVRTC matmul f16 (after a warm-up compile): general {statistics.median(walls[False]):.0f} ms, "
          f"one-part {statistics.median(walls[True]):.0f} ms (runs {walls})", flush=True)
    ops, want = operands(cp, 256, 256, 16384, cp.float16, False)
    on = compile_kernel(kernel, gen, one_part=True)
    on(ops)
    cp.cuda.runtime.deviceSynchronize()
    check(cp, ops, want, "matmul f16 256 x 256 x 16384 (in parts) through the one-part kernel")
    print(f"in parts (256 x 256 x 16384): checked, split build launched: {on._split is not None}", flush=True)


if __name__ == "__main__":
    main()
