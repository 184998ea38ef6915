"""What the fast path's shared-memory check (runtime/overlap.py, fastpath._overlap_checks) costs a
launch: `python3 bench/overlap_check.py [--gpu] [--reps N]`.

The same kernel's positional fast path built twice, with its tensor pairs (the check: per pair
two integer compares of address and end, per tensor one end computed from the sizes) and with
none (as before the check), timed alternately, min of rounds, per call.  Two kernels: bench/tiny.tl's
tiny (3 tensors, z written: 2 pairs, the launch bench/overheads.py measures against a bare
RawKernel) and SIX below (6 tensors, 2 written: 9 pairs, more than any std kernel's).
Without --gpu CuPy is stood in (an array type with what the fast path reads, a launch that does
nothing): the difference is the check's CPU cost alone.  With --gpu, real CuPy arrays on the
GPU, the launches included, a bare RawKernel beside them; every variant's result is checked
first (z = x + 2y + 3, and SIX's two outputs).
"""
from __future__ import annotations

import argparse
import sys
import time
import types
from pathlib import Path
from types import SimpleNamespace

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
SIX = """
@kernel
def six(a: f32[N], b: f32[N], c: f32[N], d: f32[N], u: f32[N], v: f32[N], s: f32):
    with grid(1, threads=32) as bx:
        for i in parallel(32):
            u[i] = a[i] + b[i] * s
            v[i] = c[i] - d[i]
"""


class WithoutCheck:
    """A compiled kernel whose fast path compares no pairs: the launch as before the check."""

    overlap_pairs = ()

    def __init__(self, compiled):
        self._compiled = compiled

    def __getattr__(self, name):
        return getattr(self._compiled, name)


def stand_in_cupy():
    class ndarray:  # what the fast path reads of a CuPy array
        __slots__ = ("shape", "dtype", "_c_contiguous", "data")

        def __init__(self, n, ptr):
            self.shape, self.dtype, self._c_contiguous = (n,), np.dtype(np.float32), True
            self.data = SimpleNamespace(device_id=0, ptr=ptr)
    cupy = types.ModuleType("cupy")
    cupy.ndarray = ndarray
    cupy.cuda = SimpleNamespace(runtime=SimpleNamespace(getDeviceCount=lambda: 1, getDevice=lambda: 0))
    sys.modules["cupy"] = cupy
    return ndarray


def timed(calls: dict, reps: int, rounds: int = 15, clock=time.perf_counter) -> dict:
    """ns per call of each `calls[name](reps)`, min of `rounds` rounds of `reps` calls,
    alternating; `clock` the thread's CPU time on a shared CPU (a wall clock counts the others)."""
    best = {name: float("inf") for name in calls}
    for _ in range(rounds):
        for name, call in calls.items():
            t = clock()
            call(reps)
            best[name] = min(best[name], (clock() - t) / reps * 1e9)
    return best


def loop(fast, args):
    def run(reps):
        for _ in range(reps):
            fast(args)
    return run


def stood_in(reps: int) -> None:
    import tlc
    from tlc.runtime import fastpath

    array = stand_in_cupy()
    for path, source, name, nt, scalars in (("bench/tiny.tl", None, "tiny", 3, (1.0, 2.0, 3)),
                                            (None, SIX, "six", 6, (1.0,))):
        mod = tlc.load(str(ROOT / path), target="cpu") if path else tlc.compile_source(source, target="cpu", path="six.tl")
        kernel = getattr(mod, name)
        ir, gen = kernel.scheduled({}, "sm_80"), kernel.generated({}, "sm_80")
        from tlc.runtime.args import Binder

        binder = Binder(ir, gen)
        launched = []
        compiled = SimpleNamespace(params=ir.params, launch_fields=gen, overlap_pairs=binder.overlap_pairs,
                                   block=(gen.threads, 1, 1), smem=gen.smem_bytes,
                                   _functions={0: lambda *a: launched.append(1)})
        args = tuple(array(1024, 0x7000_0000_0000 + (i << 32)) for i in range(nt)) + scalars
        with_check = fastpath.build(compiled, fallback=lambda a: "general path", positional=True)
        without = fastpath.build(WithoutCheck(compiled), fallback=lambda a: "general path", positional=True)
        assert with_check(args) is True and without(args) is True and len(launched) == 2, "not launched"
        shared = (args[nt - 1],) + args[1:]  # the written tensor passed as the first too
        assert with_check(shared) == "general path" and without(shared) is True
        ns = timed({"with": loop(with_check, args), "without": loop(without, args)}, reps, clock=time.thread_time)
        print(f"{name} ({nt} tensors, {len(binder.overlap_pairs)} pairs), CuPy stood in, thread CPU time: with the check "
              f"{ns['with']:.0f} ns a call, without {ns['without']:.0f} ns: {ns['with'] - ns['without']:+.0f} ns")


def on_gpu(reps: int) -> None:
    import cupy as cp

    import tlc
    from tlc.runtime import fastpath

    n = 1024
    tiny = tlc.load(str(ROOT / "bench" / "tiny.tl"), target="cuda").tiny
    six = tlc.compile_source(SIX, target="cuda", path="six.tl").six
    x, y, z = (cp.ones(n, cp.float32) for _ in range(3))
    a, b, c, d, u, v = (cp.full(n, float(k), cp.float32) for k in range(6))
    tiny(x, y, z, 1.0, 2.0, 3)
    six(a, b, c, d, u, v, 2.0)
    src = tiny.cuda_source(arch="sm_80")
    raw = cp.RawKernel(src, "tiny", options=("--std=c++17",))
    raw_args = (x, y, z, np.float32(1.0), np.float32(2.0), np.int32(3), np.int32(n))
    for name, kernel, args, outs, want in (("tiny", tiny, (x, y, z, 1.0, 2.0, 3), (z,), (6.0,)),
                                           ("six", six, (a, b, c, d, u, v, 2.0), (u, v), (0.0 + 1 * 2.0, 2.0 - 3.0))):
        compiled = kernel.compiled({})
        variants = {"with": fastpath.build(compiled, fallback=compiled.launch, positional=True),
                    "without": fastpath.build(WithoutCheck(compiled), fallback=compiled.launch, positional=True)}
        calls = {}
        for label, fast in variants.items():  # each must launch (not fall back) and compute the outputs
            for o in outs:
                o.fill(-1)
            if fast(args) is not True:
                print(f"{name} {label}: the fast path did not launch; not timed")
                return
            got = [float(o[:32].get().min()) for o in outs] + [float(o[:32].get().max()) for o in outs]
            if got != list(want) * 2:
                print(f"{name} {label}: wrong result {got}, expected {list(want)}; not timed")
                return

            def run(reps, fast=fast):
                for _ in range(reps):
                    fast(args)
                cp.cuda.Device().synchronize()
            calls[label] = run
        if name == "tiny":
            def bare(reps):
                for _ in range(reps):
                    raw((1,), (32,), raw_args)
                cp.cuda.Device().synchronize()
            z.fill(-1)
            bare(1)
            if float(z[:32].get().min()) != 6.0:
                print("RawKernel: wrong result; not timed")
                return
            calls["RawKernel"] = bare
        ns = timed(calls, reps)
        extra = f", RawKernel {ns['RawKernel']:.0f} ns (overhead with the check {ns['with'] - ns['RawKernel']:+.0f})" \
            if "RawKernel" in ns else ""
        print(f"{name} ({len(compiled.overlap_pairs)} pairs), H200 launches: with the check {ns['with']:.0f} ns a call, "
              f"without {ns['without']:.0f} ns: {ns['with'] - ns['without']:+.0f} ns{extra}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--gpu", action="store_true", help="real CuPy arrays and launches")
    parser.add_argument("--reps", type=int, default=None, help="calls a round (default 200000 stood in, 20000 on the GPU)")
    opts = parser.parse_args()
    if opts.gpu:
        on_gpu(opts.reps or 20000)
    else:
        stood_in(opts.reps or 200000)


if __name__ == "__main__":
    main()
