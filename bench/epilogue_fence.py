"""std.gemm matmul_epilogue with and without schedule/epilogue_fences.py's fence (EPILOGUE_FENCE,
off until this has run):

    python3 bench/epilogue_fence.py [--shapes 4096,8192] [--min-ms 100]

At its default tile the epilogue (alpha * acc + bias, + beta * C) spills: sm_90a 60-96 B by
build, sm_80 424 B; fenced every 32 registers it spills none (nvcc 13.0, ptxas -v).  The fence
takes away ptxas's hoisting of the epilogue's loads above one another, which is what it may cost.
For f16 at M = N = K = each shape, beta 0 (bias only) and beta 1 (bias and C), both builds are
scheduled and generated in this process, compiled by NVRTC, launched and their C checked
against CuPy's, then timed alternately (tlc.runtime.benchmark: L2 flushed, median of at least
--min-ms).  A row is `shape beta: off ms, fenced ms, ratio`; the answer flips EPILOGUE_FENCE to
32 where no ratio is above 1.01."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def build(fence: int, arch: str):
    from tlc.codegen import generate
    from tlc.driver import check_file
    from tlc.runtime import compile_kernel
    from tlc.schedule import epilogue_fences, schedule

    epilogue_fences.EPILOGUE_FENCE = fence
    try:
        kernel = schedule(check_file(str(ROOT / "stdlib" / "gemm.tl")).program, "matmul_epilogue", {}, target=arch)
        gen = generate(kernel, arch)
    finally:
        epilogue_fences.EPILOGUE_FENCE = 0
    assert (fence != 0) == ('asm volatile("" ::: "memory")' in gen.source), "the switch did not take"
    return compile_kernel(kernel, gen)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--shapes", default="4096,8192")
    ap.add_argument("--min-ms", type=float, default=100.0)
    args = ap.parse_args()
    import cupy as cp

    import tlc
    from tlc.runtime import benchmark

    arch = tlc.runtime.target_arch(0)
    builds = {f: build(f, arch) for f in (0, 32)}
    for s in (int(x) for x in args.shapes.split(",")):
        a = (cp.random.rand(s, s, dtype=cp.float32) - 0.5).astype(cp.float16)
        b = (cp.random.rand(s, s, dtype=cp.float32) - 0.5).astype(cp.float16)
        bias = cp.random.rand(s, dtype=cp.float32) - 0.5
        c0 = (cp.random.rand(s, s, dtype=cp.float32) - 0.5).astype(cp.float16)
        prod = a.astype(cp.float32) @ b.astype(cp.float32)
        for beta in (0.0, 1.0):
            want = 0.5 * prod + bias + beta * c0.astype(cp.float32)
            ops = {"A": a, "B": b, "C": c0.copy(), "bias": bias, "alpha": 0.5, "beta": beta}
            for f, compiled in builds.items():
                ops["C"][...] = c0
                compiled(ops)
                cp.cuda.runtime.deviceSynchronize()
                err = float(cp.abs(ops["C"].astype(cp.float32) - want).max())
                bound = 0.02 * float(cp.abs(want).max()) + 0.05
                if not err <= bound:
                    raise SystemExit(f"{s}^3 beta {beta} fence {f}: C differs from CuPy's by {err}: not timed")
            times = {}
            for f in (0, 32, 0, 32):  # C is read with beta 1: each run reads the last run's output, same cost
                times.setdefault(f, []).append(benchmark(builds[f], ops, min_ms=args.min_ms))
            off, on = min(times[0]), min(times[32])
            print(f"matmul_epilogue f16 {s}^3 beta {beta:g}: off {off:.4f} ms, fenced {on:.4f} ms, "
                  f"ratio {on / off:.4f} (runs {times})", flush=True)


if __name__ == "__main__":
    main()
