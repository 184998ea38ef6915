"""Each thread's own storage: its share of every fragment and the whole of every local buffer,
against the most one thread can hold (E153), the sibling of the shared-memory limit (smem.py).

A thread has at most 255 32-bit registers (1020 bytes); what does not fit spills to the
thread's local memory, which is slow but correct, so the limit is not the register file.  It
is `LIMIT`, 64 KiB a thread, far below the hardware's 512 KiB, for two reasons: the driver reserves a kernel's local memory for every thread the GPU can hold
at once (2048 an SM: 64 KiB a thread is already 16.5 GiB on a 132-SM H200), and the code
generator and the interpreter work element by element, so a tile of millions of elements a
thread (a constant off by a few digits) would take minutes and gigabytes before nvcc refused
it.  The std kernels and examples hold at most 512 bytes a thread; 64 KiB is 128 times that.
"""
from __future__ import annotations

import math

from .. import ir
from ..diagnostics import Diagnostic, DiagnosticError
from .layout import thread_registers

REGISTER_FILE = 255 * 4  # bytes of registers one thread may have
LIMIT = 64 * 1024  # bytes a thread may hold in registers and local memory together


def per_thread_bytes(b: ir.Buffer) -> int:
    """Bytes one thread holds of buffer `b` (a fragment is spread over the threads, a local
    buffer is every thread's own)."""
    if b.scope == "fragment":
        return thread_registers(b) * 4
    return math.prod(b.shape) * b.dtype.itemsize


def check_thread_storage(kernel: ir.Kernel, sources: dict | None = None) -> ir.Kernel:
    """`kernel` unchanged, or E153 naming its buffers when a thread cannot hold them."""
    own = [(per_thread_bytes(b), b) for b in kernel.buffers if b.scope in ("fragment", "local")]
    total = sum(size for size, _ in own)
    if total <= LIMIT:
        return kernel
    own.sort(key=lambda x: -x[0])
    parts = ", ".join(f"{b.name} ({_size(size)})" for size, b in own if size)
    largest = own[0][1]
    raise DiagnosticError([Diagnostic(
        "E153", f"kernel '{kernel.name}' needs {_size(total)} a thread for its fragments and local buffers, "
        f"more than the {_size(LIMIT)} a thread can hold: {parts}", largest.span or kernel.span,
        f"a thread has {REGISTER_FILE} bytes of registers and spills the rest to local memory; "
        "use smaller tiles or more threads")], sources or {})


def _size(n: int) -> str:
    if n < 1024:
        return f"{n} B"
    if n < 1024 * 1024:
        return f"{n / 1024:.1f} KiB" if n % 1024 else f"{n // 1024} KiB"
    return f"{n / 2**20:.1f} MiB"
