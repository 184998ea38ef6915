"""Tensor maps for kernels that copy through the TMA (the sm_90a warp-specialized pipeline):
each is 128 bytes the driver encodes (`cuTensorMapEncodeTiled`) from a tensor's base pointer,
sizes and the box the kernel copies, passed by value after the kernel's own arguments,
followed by `tl_tma` (1, or 0 when the driver refused a map: the kernel then copies without
the TMA, correct but slower).

Encoding costs a few microseconds, so a launch looks its maps up by (pointers, sizes) first:
benchmarks and training loops launch on the same arrays again and again.
"""
from __future__ import annotations

import ctypes

import numpy as np

from ..codegen.warpspec import tma_dtype
from .driver_api import libcuda

_SWIZZLE_128B, _L2_256B, _INTERLEAVE_NONE, _OOB_ZERO = 3, 3, 0, 0
_MAX_CACHED = 256


def map_geometry(spec, sizes: tuple) -> tuple[list, list, list]:
    """(dims innermost first, byte strides of dims 1.., box) of `spec`'s tensor with these
    sizes (outermost first) — the same values the C launcher computes."""
    dims = [int(n) for n in reversed(sizes)]
    strides, pitch = [], spec.dtype.itemsize
    for d in dims[:-1]:
        pitch *= d
        strides.append(pitch)
    box = [spec.box_cols, spec.box_rows] + [1] * (len(dims) - 2)
    return dims, strides, box


def _driver_encode():
    fn = libcuda().cuTensorMapEncodeTiled
    fn.restype = ctypes.c_int
    u32p, u64p = ctypes.POINTER(ctypes.c_uint32), ctypes.POINTER(ctypes.c_uint64)
    fn.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_uint32, ctypes.c_void_p, u64p, u64p, u32p, u32p,
                   ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_int]
    return fn


def encode(spec, pointer: int, sizes: tuple):
    """The tensor map as a 128-byte NumPy scalar (a kernel argument by value), or None when the
    driver refuses it (a base or row pitch not 16-byte aligned, an empty tensor)."""
    dims, strides, box = map_geometry(spec, sizes)
    rank = len(dims)
    if pointer % 16 or any(s % 16 for s in strides) or min(dims) <= 0:
        return None  # what the driver would refuse; it need not be asked
    storage = (ctypes.c_uint8 * 256)()
    address = (ctypes.addressof(storage) + 127) // 128 * 128  # CUtensorMap is 128-byte aligned
    result = _driver_encode()(
        ctypes.c_void_p(address), tma_dtype(spec.dtype), rank, ctypes.c_void_p(pointer),
        (ctypes.c_uint64 * rank)(*dims), (ctypes.c_uint64 * max(1, rank - 1))(*strides),
        (ctypes.c_uint32 * rank)(*box), (ctypes.c_uint32 * rank)(*([1] * rank)),
        _INTERLEAVE_NONE, _SWIZZLE_128B, _L2_256B, _OOB_ZERO)
    if result != 0:
        return None
    return np.void(ctypes.string_at(address, 128))


_NO_MAP = np.void(bytes(128))
_TMA_ON, _TMA_OFF = np.int32(1), np.int32(0)


class LaunchTensorMaps:
    """The extra arguments of one kernel's launches: `maps(pointers, sizes)` with one device
    pointer and one tuple of sizes per tensor map, in the kernel's order."""

    def __init__(self, specs: tuple):
        self.specs = specs
        self._cache: dict = {}

    def __call__(self, pointers: tuple, sizes: tuple) -> list:
        key = (pointers, sizes)
        found = self._cache.get(key)
        if found is None:
            maps = [encode(s, p, n) for s, p, n in zip(self.specs, pointers, sizes)]
            if all(m is not None for m in maps):
                found = maps + [_TMA_ON]
            else:
                found = [_NO_MAP] * len(maps) + [_TMA_OFF]
            if len(self._cache) >= _MAX_CACHED:
                self._cache.clear()
            self._cache[key] = found
        return found
