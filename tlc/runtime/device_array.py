"""`DeviceArray`: a bare device buffer with a tlc dtype, for the dtypes CuPy has no array for
(bf16, f8) and for benchmarks that must not copy NumPy inputs on every launch.

Owns uploading a NumPy array once and reading it back.  The binder (`args.py`) reads a
`DeviceArray` directly (no `__cuda_array_interface__` typestr can say bf16).
"""
from __future__ import annotations

import numpy as np

from ..dtypes import DType, from_numpy


class DeviceArray:
    """A C-contiguous array in GPU memory (a CuPy allocation) with a tlc dtype."""

    def __init__(self, shape: tuple[int, ...], dtype: DType):
        import cupy

        self.shape, self.dtype = tuple(int(n) for n in shape), dtype
        self.nbytes = int(np.prod(self.shape, dtype=np.int64)) * dtype.itemsize
        self.mem = cupy.cuda.alloc(self.nbytes)
        self.device = self.mem.device_id
        self.ptr = self.mem.ptr

    @classmethod
    def from_numpy(cls, array: np.ndarray) -> "DeviceArray":
        dt = from_numpy(array.dtype)
        if dt is None:
            raise TypeError(f"tlc has no dtype for NumPy's {array.dtype}")
        out = cls(array.shape, dt)
        dense = np.ascontiguousarray(array)
        if out.nbytes:
            out.mem.copy_from_host(dense.ctypes.data, out.nbytes)
        return out

    def numpy(self) -> np.ndarray:
        """A host copy (waits for the work queued on the current stream)."""
        import cupy

        cupy.cuda.get_current_stream().synchronize()
        out = np.empty(self.shape, self.dtype.numpy())
        if self.nbytes:
            self.mem.copy_to_host(out.ctypes.data, self.nbytes)
        return out

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def __repr__(self) -> str:
        return f"DeviceArray({self.dtype}[{', '.join(map(str, self.shape))}], GPU {self.device})"
