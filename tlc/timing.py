"""Timing GPU work the way every tlc benchmark does: CUDA events around each run, warm-up
first, the L2 cache flushed before each run, the median over at least `min_ms` of runs; and
several contenders timed alternately in one process, so that clocks and power caps hit them
alike (only same-run ratios mean anything on a power-capped GPU).

Needs CuPy; imported only by benchmarks and `tlc run --bench`.
"""
from __future__ import annotations

import statistics


class _Flusher:
    """Writes a buffer larger than the L2 cache before each timed run."""

    def __init__(self, cp, nbytes: int):
        self.buf = cp.empty(nbytes // 4, dtype=cp.int32)

    def __call__(self):
        self.buf.fill(0)


def _l2_bytes(cp) -> int:
    try:
        attr = cp.cuda.runtime.deviceGetAttribute(cp.cuda.runtime.cudaDevAttrL2CacheSize, cp.cuda.Device().id)
    except Exception:  # an old CuPy without the attribute: assume a large L2
        attr = 64 << 20
    return max(4 * attr, 256 << 20)


def compare(contenders: dict, *, min_ms: float = 300.0, warmup_ms: float = 25.0, flush_l2: bool = True,
            max_runs: int = 100_000) -> dict:
    """Median milliseconds of each callable in `contenders` (name -> fn), timed alternately."""
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
    while any(sum(t) < min_ms for t in times.values()) and max(len(t) for t in times.values()) < max_runs:
        for name, fn in contenders.items():
            flush()
            start.record()
            fn()
            end.record()
            end.synchronize()
            times[name].append(cp.cuda.get_elapsed_time(start, end))
    return {name: statistics.median(t) for name, t in times.items()}


def bench(fn, **kw) -> float:
    """Median milliseconds of one callable."""
    return compare({"fn": fn}, **kw)["fn"]
