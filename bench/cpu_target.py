"""The cpu target (C++ with OpenMP) against the NumPy reference interpreter, on this machine: a
1024^3 f32 GEMM (examples/gemm.tl) and a (4096, 4096) f16 softmax (examples/softmax.tl), each
with its default constants, checked against each other before being timed.

    python bench/cpu_target.py [--size 1024] [--rows 4096] [--repeat 3]

Prints each kernel's times (the best of --repeat runs; the interpreter runs once, it takes
seconds), the ratio interpreter / cpu target (issue 15's goal: 10x or more), the same for the
CPU time the process's threads spent (what the work costs on cores others share), the
machine's cores and its load average when measured (other processes share the cores).  The first call of
the cpu target compiles the kernel (cached on disk afterwards); it is not timed.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import tlc  # noqa: E402
from tlc.dtypes import F32  # noqa: E402


def best(fn, repeat: int) -> tuple[float, float]:
    """The least wall time and the least CPU time (the process's threads together) of `repeat`
    runs: on a machine others share, the CPU time is the work, whatever the waits."""
    wall, cpu = [], []
    for _ in range(repeat):
        start, start_cpu = time.perf_counter(), time.process_time()
        fn()
        wall.append(time.perf_counter() - start)
        cpu.append(time.process_time() - start_cpu)
    return min(wall), min(cpu)


def measure(name: str, example: str, kernel: str, make, repeat: int, **constants) -> tuple[float, float]:
    cpp = getattr(tlc.load(str(ROOT / "examples" / example), target="cpp"), kernel)
    interp = getattr(tlc.load(str(ROOT / "examples" / example), target="interp"), kernel)
    args_cpp, args_interp = make(), make()
    cpp(*args_cpp, **constants)  # compiles (or loads from the cache), and the result to check
    t_interp, c_interp = best(lambda: interp(*args_interp, **constants), 1)
    out_cpp, out_interp = args_cpp[-1].astype(np.float64), args_interp[-1].astype(np.float64)
    err = float(np.abs(out_cpp - out_interp).max() / max(np.abs(out_interp).max(), 1e-30))
    if not err < 1e-3:
        raise SystemExit(f"{name}: the cpu target differs from the interpreter by {err:.3g}")
    t_cpp, c_cpp = best(lambda: cpp(*args_cpp, **constants), repeat)
    print(f"{name:28s} interpreter {t_interp * 1e3:10.1f} ms   cpu target {t_cpp * 1e3:8.2f} ms   "
          f"{t_interp / t_cpp:7.1f}x   (largest relative difference {err:.2g})")
    print(f"{'':28s} CPU time    {c_interp * 1e3:10.1f} ms              {c_cpp * 1e3:8.2f} ms   "
          f"{c_interp / c_cpp:7.1f}x")
    return t_interp, t_cpp


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--size", type=int, default=1024, help="M = N = K of the GEMM")
    ap.add_argument("--rows", type=int, default=4096, help="rows and columns of the softmax")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args(argv)
    rng = np.random.default_rng(0)
    n, r = args.size, args.rows
    a, b = rng.standard_normal((n, n), np.float32), rng.standard_normal((n, n), np.float32)
    x = rng.standard_normal((r, r)).astype(np.float16)
    print(f"{os.cpu_count()} cores, load average {' '.join(f'{v:.2f}' for v in os.getloadavg())} (before), "
          f"OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS', 'unset')}")
    measure(f"gemm f32 {n}^3", "gemm.tl", "matmul", lambda: [a, b, np.zeros((n, n), np.float32)], args.repeat, T=F32)
    measure(f"softmax f16 ({r}, {r})", "softmax.tl", "softmax", lambda: [x, np.zeros_like(x)], args.repeat)
    print(f"load average {' '.join(f'{v:.2f}' for v in os.getloadavg())} (after)")


if __name__ == "__main__":
    main()
