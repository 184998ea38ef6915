"""Each thread's own work: its share of every fragment and the whole of every local buffer
(E153), and the iterations of each parallel loop it runs (E156), against what a thread can
hold and nvcc can compile; the sibling of the shared-memory limit (smem.py).

A thread has at most 255 32-bit registers (1020 bytes); what does not fit spills to its local
memory, which is slow but correct (up to 512 KiB a thread), so the register file is not the
limit.  Compilation is: the code generator unrolls every operation on a fragment and every
parallel loop over the thread's elements, and nvcc's time grows faster than their number
(vector_add, two f32 fragments, sm_80, measured on the 2-core CI machine: 2 KiB a thread 9 s,
8 KiB 112 s, 64 KiB not done in 10 minutes).  So a thread holds at most `LIMIT`, 8 KiB: eight
times the register file and sixteen times the largest std kernel or example (512 bytes), and
runs at most `MAX_ROUNDS` iterations of a parallel loop, as many as the f32 elements it may
hold.  A larger tile is almost always a constant off by some digits: -D BLOCK=100000000 built
a 9.5 MB stack frame, and BM=65536 took the code generator 75 s to a MemoryError.
"""
from __future__ import annotations

import math

from .. import ir
from ..diagnostics import Diagnostic, DiagnosticError
from ..ir.walk import statements
from .layout import parallel_layout, thread_registers

REGISTER_FILE = 255 * 4  # bytes of registers one thread may have
LIMIT = 8 * 1024  # bytes a thread may hold in registers and local memory together
MAX_ROUNDS = LIMIT // 4  # iterations of one parallel loop a thread runs (unrolled)


def per_thread_bytes(b: ir.Buffer) -> int:
    """Bytes one thread holds of buffer `b` (a fragment is spread over the threads, a local
    buffer is every thread's own)."""
    if b.scope == "fragment":
        return thread_registers(b) * 4
    return math.prod(b.shape) * b.dtype.itemsize


def check_thread_storage(kernel: ir.Kernel, sources: dict | None = None) -> ir.Kernel:
    """`kernel` unchanged, or E153 naming its buffers when a thread cannot hold them, or E156
    at a parallel loop with too many iterations a thread."""
    own = [(per_thread_bytes(b), b) for b in kernel.buffers if b.scope in ("fragment", "local")]
    total = sum(size for size, _ in own)
    if total > LIMIT:
        own.sort(key=lambda x: -x[0])
        parts = ", ".join(f"{b.name} ({_size(size)})" for size, b in own if size)
        raise DiagnosticError([Diagnostic(
            "E153", f"kernel '{kernel.name}' needs {_size(total)} a thread for its fragments and local buffers, "
            f"more than the {_size(LIMIT)} a thread can hold: {parts}", own[0][1].span or kernel.span,
            f"a thread has {REGISTER_FILE} bytes of registers and spills the rest to local memory; "
            "use smaller tiles or more threads")], sources or {})
    for p in statements(kernel.body):
        if isinstance(p, ir.Parallel):
            rounds = parallel_layout(p, kernel).registers
            if rounds > MAX_ROUNDS:
                raise DiagnosticError([Diagnostic(
                    "E156", f"this parallel loop over {' x '.join(map(str, p.extents))} runs {rounds} iterations in "
                    f"each of the {kernel.threads} threads, more than the {MAX_ROUNDS} a thread may unroll",
                    p.span or kernel.span, "use a smaller extent or more threads, or a range() loop around it")],
                    sources or {})
    return kernel


def _size(n: int) -> str:
    if n < 1024:
        return f"{n} B"
    if n < 1024 * 1024:
        return f"{n / 1024:.1f} KiB" if n % 1024 else f"{n // 1024} KiB"
    return f"{n / 2**20:.1f} MiB"
