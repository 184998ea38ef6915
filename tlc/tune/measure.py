"""Running, checking and timing one candidate of `tlc tune` on its executor: the GPU (arrays
uploaded once, CUDA events through `tlc.timing`) or the interpreter (`--target cpu`, with a
wall-clock timer or a stand-in one for tests).

A candidate's outputs are poisoned (NaN) before its checked run, so that an element it never
writes shows, and compared with the reference's at every element within a few units of the
output dtype's precision (`tlc.timing.tolerance`); a wrong candidate is never timed.
"""
from __future__ import annotations

import hashlib
import statistics
import time

import numpy as np

from .. import timing

# units of the output dtype's precision a candidate may differ by (the order of a reduction
# changes with the tiles); f32 results of long sums differ by more ulps than f16 ones
ULPS = {"float64": 2.0 ** 20, "float32": 2.0 ** 10}
DEFAULT_ULPS = 8.0


class Executor:
    """The arrays of one bucket on one executor, and a run of the kernel with a configuration."""

    def __init__(self, kernel, values: dict, outputs: list, on_gpu: bool, arch: str):
        self.kernel, self.outputs, self.on_gpu, self.arch = kernel, outputs, on_gpu, arch
        if on_gpu:
            from ..runtime.device_array import DeviceArray

            values = {k: DeviceArray.from_numpy(v) if isinstance(v, np.ndarray) else v for k, v in values.items()}
        self.values = values

    def runner(self, constants: dict):
        """A callable running the kernel once with `constants` on this bucket's arrays; on the
        GPU, a kernel of one grid straight through its compiled launcher (the host's time to
        bind a call must not show in the GPU's)."""
        kernel, values = self.kernel, self.values
        if self.on_gpu and not kernel._grouped:
            bound, full = kernel.bind((), {**values, **constants})
            compiled = kernel.compiled(full)
            return lambda: compiled(values)
        if self.on_gpu:
            return lambda: kernel(**values, **constants)
        # the interpreter runs the kernel as scheduled for the arch tuned for (a call's own
        # schedule is sm_80's, whose shared memory is not every target's)
        from ..interp import run_kernel

        bound, full = kernel.bind((), {**values, **constants})
        kernels = kernel.scheduled_grids(full, self.arch)

        def run():
            args = kernel.with_workspaces(bound, kernels[0], on_gpu=False)
            for k in kernels:
                run_kernel(k, args)
        return run

    def outputs_of(self, constants: dict) -> dict:
        """The written arrays after one run with `constants` (poisoned first), as NumPy arrays."""
        for name in self.outputs:
            self._poison(name)
        self.runner(constants)()
        return {name: self._host(self.values[name]) for name in self.outputs}

    def _poison(self, name: str) -> None:
        host = self._host(self.values[name])
        poisoned = np.full_like(host, np.nan if host.dtype.kind not in "iub" else _int_extreme(host.dtype))
        if self.on_gpu:
            from ..runtime.device_array import DeviceArray

            self.values[name] = DeviceArray.from_numpy(poisoned)
        else:
            self.values[name][...] = poisoned

    def _host(self, x):
        return x.numpy() if self.on_gpu else x


def _int_extreme(dtype):
    info = np.iinfo(dtype)
    return info.min if info.min < 0 else info.max


def check(got: dict, reference: dict) -> timing.Verdict:
    """The first wrong output of `got` against `reference`, or a passing verdict."""
    worst = timing.Verdict(True, "", 0.0)
    for name, want in reference.items():
        dtype = np.dtype(want.dtype).name
        tol = timing.tolerance(dtype, want, ULPS.get(dtype, DEFAULT_ULPS))
        verdict = timing.verify(timing.Checked(run=lambda g=got[name]: g, reference=want, **tol))
        if not verdict.ok:
            return timing.Verdict(False, f"{verdict.why} (in {name})", verdict.rel_err)
        if verdict.rel_err > worst.rel_err:
            worst = verdict
    return worst


# --- timers: runs (label -> callable) -> milliseconds of each --------------------------------

def gpu_timer(min_ms: float):
    """`tlc.timing.compare`: alternating runs, L2 flushed before each, the median of each."""
    return lambda runs: timing.compare(runs, min_ms=min_ms)


def wall_timer(runs: dict, repeats: int = 3) -> dict:
    """The interpreter's wall-clock time, the median of `repeats` runs (what the CPU target can
    measure: it says which configuration the interpreter runs fastest, not the GPU)."""
    out = {}
    for label, fn in runs.items():
        times = []
        for _ in range(repeats):
            t0 = time.perf_counter()
            fn()
            times.append((time.perf_counter() - t0) * 1e3)
        out[label] = statistics.median(times)
    return out


def fake_timer(runs: dict) -> dict:
    """A stand-in for tests (`tlc tune --timer fake`): each configuration's time is a fixed
    function of its label, 1 to 2 ms (`fake_ms`), and nothing runs."""
    return {label: fake_ms(label) for label in runs}


def fake_ms(label: str) -> float:
    return 1.0 + int(hashlib.sha256(label.encode()).hexdigest()[:8], 16) % 1000 / 1000
