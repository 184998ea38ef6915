"""Arguments that share memory with a tensor the kernel writes: refused at every launch, on
every target (FINDINGS 36).

Why refused: the same call had three answers.  A CUDA kernel's tensors are `__restrict__`, so
`k(x, x)` with `x` written is undefined behaviour there; the interpreter and the cpu target
compute in place (a read after a write sees the new value); NumPy arrays launched on the GPU
are copied in and out, so the kernel reads the old values.  PyTorch refuses such `out=` too.
Read-only tensors may share memory freely (K and V one buffer, `k(x, x, out)` reading x twice).

Owns which parameter pairs a launch compares (`pairs`, worked out once per kernel), the byte
range of a NumPy array, whether one NumPy array repeats an element (a stride of 0, or strides
that overlap: only NumPy arrays can; a device array must be C-contiguous), and the two
messages.  The binders (runtime/args.py, interp/args.py) compare the ranges and raise their own
error class; the fast path (fastpath.py) compares the same ranges as integers and hands an
overlap to the general path, which raises.
"""
from __future__ import annotations

import numpy as np

# np.shares_memory's effort for two strided NumPy arrays whose byte ranges overlap (interleaved
# columns of one array share none): past it the answer is "they may", and the launch is refused
MAX_WORK = 100_000
_TOO_HARD = getattr(np, "exceptions", np).TooHardError  # np.TooHardError before NumPy 1.25


def pairs(names: tuple, written) -> tuple:
    """The pairs `(i, j)` of positions in `names` (a kernel's tensor parameters, in order) that
    must not share memory: each written tensor with every other tensor, once, the written one
    first where only one is written."""
    out = []
    for i, a in enumerate(names):
        for j in range(i + 1, len(names)):
            b = names[j]
            if a in written:
                out.append((i, j))
            elif b in written:
                out.append((j, i))
    return tuple(out)


def host_range(array: np.ndarray) -> tuple[int, int]:
    """The bytes `[start, end)` a NumPy array's elements lie in; `(0, 0)` for an empty one."""
    if array.size == 0:
        return 0, 0
    start = end = array.ctypes.data
    for n, s in zip(array.shape, array.strides):
        if s < 0:
            start += s * (n - 1)
        else:
            end += s * (n - 1)
    return start, end + array.itemsize


def repeats_elements(array: np.ndarray) -> bool:
    """Whether two elements of a NumPy array share a byte (a stride of 0 on an axis longer than
    1, or strides that overlap, as `as_strided` can make)."""
    if array.size == 0:
        return False
    axes = sorted((abs(s), n) for n, s in zip(array.shape, array.strides) if n > 1)
    reach = array.itemsize  # the bytes the smaller axes span
    for s, n in axes:
        if s == 0:
            return True
        if s < reach:  # the axes interleave: decide element by element
            return _repeats_by_offsets(array)
        reach += s * (n - 1)
    return False


def _repeats_by_offsets(array: np.ndarray) -> bool:
    offsets = np.zeros(1, np.int64)
    for n, s in zip(array.shape, array.strides):
        offsets = (offsets[:, None] + np.arange(n, dtype=np.int64) * s).ravel()
    offsets.sort()
    return bool(np.any(np.diff(offsets) < array.itemsize))


def ranges_overlap(a: tuple[int, int], b: tuple[int, int]) -> bool:
    """Whether two byte ranges `[start, end)` share a byte (an empty one shares none)."""
    return a[0] < b[1] and b[0] < a[1] and a[0] < a[1] and b[0] < b[1]


def host_arrays_share(a: np.ndarray, b: np.ndarray) -> bool:
    """Whether two NumPy arrays whose byte ranges overlap share an element's byte: dense ones
    do; strided ones (two columns of one array) may not, which NumPy decides, up to MAX_WORK."""
    if a.flags.c_contiguous and b.flags.c_contiguous:
        return True
    try:
        return bool(np.shares_memory(a, b, max_work=MAX_WORK))
    except _TOO_HARD:
        return True


def overlap_message(kernel: str, written: str, other: str, both: bool) -> str:
    """The error of a written tensor that shares memory with another argument."""
    writes = f"writes '{written}' and '{other}'" if both else f"writes '{written}'"
    return (f"'{written}' and '{other}' share memory, and kernel '{kernel}' {writes}: pass arrays that "
            f"do not overlap (a copy of one of them)")


def repeats_message(kernel: str, name: str) -> str:
    """The error of a written NumPy array two of whose elements share memory."""
    return (f"'{name}' has elements that share memory (a stride of 0, or strides that overlap), and "
            f"kernel '{kernel}' writes it: pass an array of distinct elements ({name}.copy())")
