"""Timing GPU work the way every tlc benchmark does: CUDA events around each run, warm-up
first, the L2 cache flushed (by reading a larger buffer) before each run, the median over
at least `min_ms` of runs; and several contenders timed alternately in one process, so that
clocks and power caps hit them alike (only same-run ratios mean anything on a power-capped
GPU).

Needs CuPy; imported only by benchmarks and `tlc run --bench`.  `compare_checked` first runs
each contender once and checks its output against a reference: a wrong one is never timed.
"""
from __future__ import annotations

import statistics
from typing import Any, Callable

import numpy as np

from .frozen import frozen


class _Flusher:
    """Reads a buffer larger than the L2 cache before each timed run, leaving it holding only
    clean lines of that buffer.  Why a read: a flush that writes (Triton's `cache.zero_()`)
    leaves the L2 full of dirty lines, and the timed kernel then pays their write-back to
    DRAM as it reads.  On the H200 a streaming read of 128 MiB reached 0.76 of the copy
    bandwidth after a written flush and 0.956 after a read one (F.linear's decode step
    0.72 and 0.89): the written flush measures the flush as much as the kernel."""

    def __init__(self, cp, nbytes: int):
        self.cp = cp
        self.buf = cp.ones(nbytes // 4, dtype=cp.int32)
        self.out = cp.zeros((), dtype=cp.int32)

    def __call__(self):
        self.cp.sum(self.buf, out=self.out)


_SPIN = r"""
extern "C" __global__ void tl_spin(unsigned long long ns) {
  unsigned long long t0, t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
  do { asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t)); } while (t - t0 < ns);
}
"""


class _Delay:
    """One thread spinning on the GPU for `us` microseconds."""

    def __init__(self, cp, us: float):
        self.kernel = cp.RawKernel(_SPIN, "tl_spin") if us > 0 else None
        self.ns = cp.uint64(int(us * 1000))

    def __call__(self):
        if self.kernel is not None:
            self.kernel((1,), (1,), (self.ns,))


def _l2_bytes(cp) -> int:
    try:
        attr = cp.cuda.runtime.deviceGetAttribute(cp.cuda.runtime.cudaDevAttrL2CacheSize, cp.cuda.Device().id)
    except Exception:  # an old CuPy without the attribute: assume a large L2
        attr = 64 << 20
    return max(4 * attr, 256 << 20)


def compare(contenders: dict, *, min_ms: float = 300.0, warmup_ms: float = 25.0, flush_l2: bool = True,
            max_runs: int = 100_000, delay_us: float = 50.0) -> dict:
    """Median milliseconds of each callable in `contenders` (name -> fn), timed alternately;
    before each run the L2 flush and then `delay_us` of GPU spinning, so that the host's work
    to launch the run (a Python call's binding, PyTorch's dispatch) happens while the GPU is
    still busy: the events time the GPU's work, not the host's."""
    import cupy as cp

    flush = _Flusher(cp, _l2_bytes(cp)) if flush_l2 else (lambda: None)
    start, end = cp.cuda.Event(), cp.cuda.Event()
    times: dict = {name: [] for name in contenders}
    # Warm-up: compile, load, allocate; then estimate one run to size the rounds.
    for name, fn in contenders.items():
        fn()
    cp.cuda.Device().synchronize()
    estimate = {}
    for name, fn in contenders.items():
        start.record()
        fn()
        end.record()
        end.synchronize()
        estimate[name] = max(cp.cuda.get_elapsed_time(start, end), 1e-3)
        for _ in range(int(warmup_ms / estimate[name])):
            fn()
    cp.cuda.Device().synchronize()
    delay = _Delay(cp, delay_us)
    order = list(contenders.items())
    spent = {name: 0.0 for name in contenders}
    rounds = 0
    while min(spent.values()) < min_ms and rounds < max_runs:
        # each round starts one contender later, so that no contender always runs first
        for name, fn in order[rounds % len(order):] + order[:rounds % len(order)]:
            flush()
            delay()
            start.record()
            fn()
            end.record()
            end.synchronize()
            ms = cp.cuda.get_elapsed_time(start, end)
            times[name].append(ms)
            spent[name] += ms
        rounds += 1
    return {name: statistics.median(t) for name, t in times.items()}


def bench(fn, **kw) -> float:
    """Median milliseconds of one callable."""
    return compare({"fn": fn}, **kw)["fn"]


# --- checked contenders: a time counts only for a result that matched its reference ---------

# the spacing of each floating dtype's values just above 1 (2^-mantissa bits): one "ulp"
# relative; tf32 is the tensor cores' f32 with 10 mantissa bits
_EPS = {"float64": 2.0 ** -52, "float32": 2.0 ** -23, "tf32": 2.0 ** -10, "float16": 2.0 ** -10,
        "bfloat16": 2.0 ** -7, "float8_e4m3fn": 2.0 ** -3, "float8_e5m2": 2.0 ** -2}


@frozen
class Checked:
    """A contender of `compare_checked`: `run()` once, then its output (`out`, the array it
    writes, poisoned with NaN or the integer minimum first, so that an element never written
    shows; or, when `out` is None, what `run` returned) must satisfy, at every element,
    |got - reference| <= atol + rtol * |reference|, in float64 (NumPy's `allclose` rule; NaN
    never passes).  Arrays are NumPy, CuPy or PyTorch, compared on their own device."""
    run: Callable[[], Any]
    reference: Any
    rtol: float
    atol: float
    out: Any = None


@frozen
class Verdict:
    ok: bool
    why: str = ""                      # for a wrong one: "WRONG: ..." or "ERROR: ..."
    rel_err: float = float("nan")      # ||got - ref|| / ||ref|| (Frobenius), where there was a result


def tolerance(dtype, reference, ulps: float) -> dict:
    """rtol and atol of `ulps` units of `dtype`'s precision (its name: "float16", "tf32", a
    NumPy, CuPy or PyTorch dtype); atol is relative to the reference's RMS, since an element
    near zero is a sum of terms about that size whose rounding does not shrink with it.
    Integers: exact."""
    name = _dtype_name(dtype)
    if name not in _EPS:
        if "int" in name or name == "bool":
            return {"rtol": 0.0, "atol": 0.0}
        raise ValueError(f"no precision known for dtype {name}")
    rms = float((_float64(reference) ** 2).mean() ** 0.5)
    return {"rtol": ulps * _EPS[name], "atol": ulps * _EPS[name] * rms}


def verify(c: Checked) -> Verdict:
    """Runs `c` once and compares its output with its reference (see `Checked`)."""
    try:
        if c.out is not None:
            _poison(c.out)
        got = c.run() if c.out is None else (c.run(), c.out)[1]
        got, want = _float64(got), _float64(c.reference)
    except Exception as e:  # a contender that cannot run is reported, never timed
        return Verdict(False, f"ERROR: {type(e).__name__}: {str(e).strip()[:300]}")
    if tuple(got.shape) != tuple(want.shape):
        return Verdict(False, f"WRONG: shape {tuple(got.shape)}, the reference's {tuple(want.shape)}")
    diff = abs(got - want)
    bad = ~(diff <= c.atol + c.rtol * abs(want))  # written so that NaN is bad
    finite = diff < float("inf")
    rel = float(((diff[finite] ** 2).sum() / max(float((want ** 2).sum()), 1e-300)) ** 0.5)
    nbad, lost = int(bad.sum()), int((~finite).sum())
    if nbad:
        worst = float(diff[finite].max()) if lost < _count(diff) else float("nan")
        return Verdict(False, f"WRONG: {nbad} of {_count(diff)} elements outside rtol {c.rtol:.3g}, atol "
                              f"{c.atol:.3g} ({lost} not finite; largest finite |error| {worst:.3g}, relative "
                              f"error of the finite ones {rel:.3g})", rel)
    return Verdict(True, "", rel)


def compare_checked(contenders: dict, **timing) -> tuple[dict, dict]:
    """(milliseconds of each contender that matched its reference, timed with `compare`;
    name -> `Verdict` of every contender).  `contenders`: name -> `Checked`.  A wrong one is
    never timed, so it can never be the fastest."""
    verdicts = {name: verify(c) for name, c in contenders.items()}
    right = {name: c.run for name, c in contenders.items() if verdicts[name].ok}
    return (compare(right, **timing) if right else {}), verdicts


def _float64(x):
    return x.double() if hasattr(x, "double") and not hasattr(x, "astype") else x.astype("float64")


def _dtype_name(dtype) -> str:
    """"float16" for torch.float16, np.float16, numpy.dtype("float16") or "float16"."""
    if str(dtype).startswith("torch."):
        return str(dtype)[len("torch."):]
    try:
        return np.dtype(dtype).name
    except TypeError:  # "tf32": a name of our own
        return str(dtype)


def _count(x) -> int:
    return int(x.numel()) if hasattr(x, "numel") else int(x.size)


def _poison(x) -> None:
    """NaN in a floating array, the extreme of an integer one (a value no benchmark's result has)."""
    name = _dtype_name(x.dtype)
    if name.startswith(("int", "uint")):
        info = np.iinfo(name)
        value = int(info.min if info.min < 0 else info.max)
    else:
        value = float("nan")
    if hasattr(x, "fill_"):
        x.fill_(value)
    else:
        x.fill(value)
