"""Timing GPU work the way every tlc benchmark does: CUDA events around each run, warm-up
first, the L2 cache flushed (by reading a larger buffer) before each run, the median over
at least `min_ms` of runs; and several contenders timed alternately in one process, so that
clocks and power caps hit them alike (only same-run ratios mean anything on a power-capped
GPU).

Needs CuPy; imported only by benchmarks and `tlc run --bench`.
"""
from __future__ import annotations

import statistics


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
