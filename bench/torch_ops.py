"""The host cost of a tlc operator call from PyTorch (tlc.torch.op) against the kernel's direct
call and PyTorch's own operator, on a tiny std.nn.rms_norm (8 x 256 f16: the GPU's time is a
few microseconds, so the loop's time per call is the host's).

    python bench/torch_ops.py [--calls 5000]

Each contender runs `--calls` times back to back after a warm-up, then the stream is synchronized;
the time per call is the median of 5 such loops.  Outputs are checked against each other first.
"""
from __future__ import annotations

import argparse
import statistics
import time

import torch

import tlc
import tlc.torch


def per_call_us(fn, calls: int) -> float:
    for _ in range(50):
        fn()
    torch.cuda.synchronize()
    runs = []
    for _ in range(5):
        t = time.perf_counter()
        for _ in range(calls):
            fn()
        torch.cuda.synchronize()
        runs.append((time.perf_counter() - t) / calls * 1e6)
    return statistics.median(runs)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--calls", type=int, default=5000)
    args = ap.parse_args(argv)
    nn = tlc.load("std.nn", target="cuda")
    functional = tlc.torch.op("tlc_bench::rms_norm", nn.rms_norm, outputs="y")
    mutating = tlc.torch.op("tlc_bench::rms_norm_", nn.rms_norm)
    x = torch.randn(8, 256, device="cuda", dtype=torch.float16)
    w = torch.randn(256, device="cuda", dtype=torch.float16)
    y = torch.empty_like(x)
    contenders = {
        "tlc kernel, direct call": lambda: nn.rms_norm(x, w, y, 1e-6),
        "tlc.torch.op, mutating (y given)": lambda: mutating(x, w, y, 1e-6),
        "tlc.torch.op, outputs=y (allocates)": lambda: functional(x, w, 1e-6),
        "torch.nn.functional.rms_norm": lambda: torch.nn.functional.rms_norm(x, (256,), w, 1e-6),
    }
    nn.rms_norm(x, w, y, 1e-6)
    torch.testing.assert_close(functional(x, w, 1e-6), y)
    torch.testing.assert_close(torch.nn.functional.rms_norm(x, (256,), w, 1e-6), y, atol=2e-3, rtol=2e-3)
    print(f"{'contender':40} us per call ({args.calls} calls, median of 5)")
    for name, fn in contenders.items():
        print(f"{name:40} {per_call_us(fn, args.calls):8.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
