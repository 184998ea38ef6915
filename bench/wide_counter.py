"""sm80.WIDE_STEPPED_COUNTER on the GPU: `python3 bench/wide_counter.py [--end]`.

A user-style grid-stride kernel, `for k in range(bx * 256 + i, N, BLOCKS * 256)` (its start reads
a block index, so neither the sizes nor a launch check prove its i32 counter stays in range),
generated with an i32 counter (today's default) and with the 64-bit counter the switch gives it,
each compiled in a module of its own.  Both are checked (y = 2x) and then timed alternately
(tlc.timing.compare_checked: CUDA events, L2 flushed, medians) at N = 2**24 and 2**28.
--end: the switch's reason, at N = 2**31 - 1 (8 GiB an array), where each thread's last step
takes an i32 counter past 2**31: with the 64-bit counter the kernel ends and y = 2x at the first,
the last and 2**20 random elements (the i32 counter's overflow is undefined: it is not run).
"""
from __future__ import annotations

import argparse

import tlc
from tlc.codegen import sm80

SOURCE = """
@kernel
def grid_stride(x: f32[N], y: f32[N], BLOCKS: const = 528):
    with grid(BLOCKS, threads=256) as bx:
        for i in parallel(256):
            for k in range(bx * 256 + i, N, BLOCKS * 256):
                y[k] = 2.0 * x[k]
"""


def kernel(wide: bool, x, y):
    """The kernel generated with the switch at `wide`, run once on (x, y) so that it is generated
    and compiled now: the module keeps that build for its later calls."""
    saved = sm80.WIDE_STEPPED_COUNTER
    sm80.WIDE_STEPPED_COUNTER = wide
    try:
        mod = tlc.compile_source(SOURCE, target="cuda", path=f"grid_stride_{'wide' if wide else 'i32'}.tl")
        mod.grid_stride(x, y)
        text = mod.grid_stride.generated({}, "sm_90a").source
        assert ("long long tl_k_k" in text) == wide, "the switch did not reach the generated kernel"
    finally:
        sm80.WIDE_STEPPED_COUNTER = saved
    return mod.grid_stride


def main() -> None:
    import cupy as cp

    from tlc.timing import Checked, compare_checked

    ap = argparse.ArgumentParser()
    ap.add_argument("--end", action="store_true", help="the 64-bit counter at N = 2**31 - 1")
    a = ap.parse_args()
    if a.end:
        n = 2**31 - 1
        x = cp.arange(n, dtype=cp.float32) % 1000
        y = cp.zeros(n, dtype=cp.float32)
        kernel(True, x, y)
        cp.cuda.runtime.deviceSynchronize()
        at = cp.concatenate([cp.array([0, n - 1]), cp.random.randint(0, n, 2**20)])
        bad = int((y[at] != 2 * x[at]).sum())
        print(f"N = 2**31 - 1, 64-bit counter: ended, {bad} wrong of {at.size} checked")
        return
    for n in (2**24, 2**28):
        x = cp.random.standard_normal(n, dtype=cp.float32)
        outs = {w: cp.zeros(n, dtype=cp.float32) for w in (False, True)}
        runs = {w: kernel(w, x, outs[w]) for w in (False, True)}
        contenders = {("wide" if w else "i32"): Checked(lambda w=w: runs[w](x, outs[w]), 2 * x, 0.0, 0.0, outs[w])
                      for w in (False, True)}
        times, verdicts = compare_checked(contenders)
        line = ", ".join(f"{name} {times[name] * 1e3:.1f} us" if name in times else f"{name} WRONG"
                         for name in ("i32", "wide"))
        ratio = times["wide"] / times["i32"] if {"i32", "wide"} <= set(times) else float("nan")
        print(f"N = 2**{n.bit_length() - 1}: {line}, wide / i32 = {ratio:.3f}", flush=True)


if __name__ == "__main__":
    main()
