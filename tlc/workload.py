"""The work a kernel launch does, for `--bench` to report TFLOP/s and GB/s: floating-point
operations of its gemms (2*m*n*k each, times the loop trips and the blocks) and the bytes of
its tensor parameters (each read or written once: the least any implementation moves)."""
from __future__ import annotations

import math

from . import ir
from .runtime.grid import evaluate_int


def flops(kernel: ir.Kernel, values: dict) -> float:
    blocks = math.prod(max(0, evaluate_int(g, values)) for g in kernel.grid)
    buffers = {b.name: b for b in kernel.buffers}

    def walk(stmts, trips: float) -> float:
        total = 0.0
        for s in stmts:
            if isinstance(s, ir.Gemm):
                a = buffers[s.a].shape
                m, k = (a[1], a[0]) if s.trans_a else a
                b = buffers[s.b].shape
                nn = b[0] if s.trans_b else b[1]
                total += 2.0 * m * nn * k * trips
            elif isinstance(s, ir.For):
                lo, hi, st = (evaluate_int(x, values) for x in (s.start, s.stop, s.step))
                count = max(0, -(-(hi - lo) // st)) if st > 0 else max(0, -(-(lo - hi) // -st)) if st < 0 else 0
                total += walk(s.body, trips * count)
            elif isinstance(s, ir.If):
                total += max(walk(s.then, trips), walk(s.orelse, trips))
        return total

    return blocks * walk(kernel.body, 1.0)


def traffic_bytes(kernel: ir.Kernel, arrays: dict) -> int:
    return sum(int(getattr(arrays[p.name], "nbytes", 0)) for p in kernel.params if p.kind == "tensor" and p.name in arrays)
