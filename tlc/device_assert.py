"""device_assert(cond, "message %d", values...): what a failure reports, one definition for the
interpreter and the GPU runtime.

On the GPU a failing assert does not trap (a trap kills the CUDA context, and with it the
record of what failed): the first failing thread of a launch writes a record into the module's
`__device__` array `tl_assert_record` (tl/assert.cuh: its site, block, thread and values) and
every thread goes on; after a launch of a kernel that holds asserts the runtime reads the record
and raises `DeviceAssertError` (runtime/launch.py).  A site is an index into `sites(body)`,
which the generator and the runtime compute alike from the kernel's IR, so the record needs
neither the file name nor the message text.
"""
from __future__ import annotations

import re
import struct

from .diagnostics import TlcError
from .frozen import frozen

MAX_VALUES = 8  # values one record holds (the checker's E382)
RECORD_WORDS = 4 + MAX_VALUES  # site + 1, block x|y, block z|thread, unused, the values (u64 each)
RECORD_SYMBOL = "tl_assert_record"


class DeviceAssertError(TlcError):
    """A device_assert whose condition was false, on the GPU or the interpreter."""


@frozen
class Site:
    """One device_assert of a kernel: where it is, its message and its values' dtypes."""

    file: str
    line: int
    col: int
    fmt: str
    dtypes: tuple

    def where(self) -> str:
        return f"{self.file}:{self.line}:{self.col}"


def site_of(s) -> Site:
    """The site of an `ir.Assert`."""
    span = s.span
    where = (span.file, span.line, span.col) if span is not None else ("<unknown>", 0, 0)
    return Site(*where, s.fmt, tuple(a.dtype.name for a in s.args))


def sites(body) -> tuple[Site, ...]:
    """The kernel's device_asserts, each once, in a fixed order (passes that copy or reorder a
    statement keep its site)."""
    from .ir.walk import statements

    found = {site_of(s) for s in statements(body) if getattr(s, "cond", None) is not None and hasattr(s, "fmt")}
    return tuple(sorted(found, key=lambda x: (x.file, x.line, x.col, x.fmt)))


def record_lines(kernel: str) -> list[str]:
    """The C that declares the record beside a kernel with asserts (once per file), and for
    a C caller of an nvcc-built `.cu` the function `tl_assert_record_KERNEL(out)`, which copies
    the record into `out` (RECORD_WORDS words) and clears it (the runtime finds the record in
    NVRTC's module by name)."""
    words = RECORD_WORDS
    return ["#ifndef TL_ASSERT_RECORD", "#define TL_ASSERT_RECORD",
            f"__device__ unsigned long long {RECORD_SYMBOL}[{words}];", "#endif", "#ifndef __CUDACC_RTC__",
            f"// device_assert's failure record of this file (tl/assert.cuh): copied into out[{words}] and cleared;",
            "// out[0] != 0 means an assert failed since the last read",
            f"extern \"C\" cudaError_t tl_assert_record_{kernel}(unsigned long long* out) {{",
            f"  cudaError_t err = cudaMemcpyFromSymbol(out, {RECORD_SYMBOL}, sizeof({RECORD_SYMBOL}));",
            "  if (err != cudaSuccess) return err;",
            f"  const unsigned long long zero[{words}] = {{}};",
            f"  return cudaMemcpyToSymbol({RECORD_SYMBOL}, zero, sizeof(zero));",
            "}", "#endif"]


_UNSIGNED = re.compile(r"%([-+ #0]*\d*(?:\.\d+)?)u")


def message(fmt: str, values) -> str:
    """The message with its values, as C's printf writes it (no trailing newline)."""
    return _UNSIGNED.sub(r"%\1d", fmt) % tuple(values)


def failure(site: Site, values, where: str) -> DeviceAssertError:
    """The error for `site` failing with `values`; `where` names the block and thread."""
    return DeviceAssertError(f"{site.where()}: device_assert failed: {message(site.fmt, values)} ({where})")


def decode(site_table, words) -> DeviceAssertError | None:
    """The error a GPU record (RECORD_WORDS u64 words) describes, or None for a clean record."""
    from .dtypes import lookup

    if not words[0]:
        return None
    index = int(words[0]) - 1
    if not 0 <= index < len(site_table):
        return DeviceAssertError(f"device_assert failed at an unknown site {index} (the record is damaged)")
    site = site_table[index]
    values = []
    for word, name in zip(words[4:], site.dtypes):
        raw = int(word) & (2 ** 64 - 1)
        if lookup(name).is_float:  # passed as a double
            values.append(struct.unpack("<d", struct.pack("<Q", raw))[0])
        elif lookup(name).kind in ("uint", "bool"):
            values.append(raw)
        else:  # sign-extended to 64 bits
            values.append(raw - 2 ** 64 if raw >> 63 else raw)
    bx, by = int(words[1]) & 0xFFFFFFFF, int(words[1]) >> 32
    bz, thread = int(words[2]) & 0xFFFFFFFF, int(words[2]) >> 32
    return failure(site, values, f"block ({bx}, {by}, {bz}), thread {thread}")
