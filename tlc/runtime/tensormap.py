"""Tensor maps for kernels that copy through the TMA (the sm_90a warp-specialized pipeline):
each is 128 bytes the driver encodes (`cuTensorMapEncodeTiled`) from a tensor's base pointer,
sizes and the box the kernel copies, passed by value after the kernel's own arguments,
followed by `tl_tma`, two flags: bit 0 when the driver accepted every map the copies load
through, bit 1 when it accepted the map the epilogue stores through (without them the kernel
copies or stores element by element, correct but slower).

Encoding costs a few microseconds, so a launch looks its maps up by (pointers, sizes) first:
benchmarks and training loops launch on the same arrays again and again.
"""
from __future__ import annotations

import ctypes
import functools
import struct
from dataclasses import replace

import numpy as np

from ..ir.warpspec import tma_dtype
from .driver_api import libcuda

_SWIZZLE_128B, _SWIZZLE_NONE, _L2_256B, _INTERLEAVE_NONE, _OOB_ZERO = 3, 0, 3, 0, 0
_MAX_CACHED = 256


def map_geometry(spec, sizes: tuple) -> tuple[list, list, list]:
    """(dims innermost first, byte strides of dims 1.., box) of `spec`'s tensor with these
    sizes (outermost first) — the same values the C launcher computes."""
    dims = [int(n) for n in reversed(sizes)]
    strides, pitch = [], spec.dtype.itemsize
    for d in dims[:-1]:
        pitch *= d
        strides.append(pitch)
    return dims, strides, spec.box()


@functools.lru_cache(maxsize=1)
def _driver_encode():
    """cuTensorMapEncodeTiled with its C signature, set once (a launch encodes several maps).
    Its arrays are passed as addresses (`c_void_p`, of packed bytes): ctypes' POINTER and array
    types cost a process ~50 us each to create, and a cached first call made six."""
    fn = libcuda().cuTensorMapEncodeTiled
    fn.restype = ctypes.c_int
    p = ctypes.c_void_p
    fn.argtypes = [p, ctypes.c_int, ctypes.c_uint32, p, p, p, p, p, ctypes.c_int, ctypes.c_int, ctypes.c_int,
                   ctypes.c_int]
    return fn


@functools.lru_cache(maxsize=1)
def _driver_encode_im2col():
    """cuTensorMapEncodeIm2col with its C signature."""
    fn = libcuda().cuTensorMapEncodeIm2col
    fn.restype = ctypes.c_int
    p, i = ctypes.c_void_p, ctypes.c_int
    fn.argtypes = [p, i, ctypes.c_uint32, p, p, p, p, p, ctypes.c_uint32, ctypes.c_uint32, p, i, i, i, i]
    return fn


def im2col_geometry(spec, sizes: tuple) -> tuple | None:
    """(dims, byte strides, lower corner, upper corner, element strides) of an im2col map
    (`spec.im2col`, an ir.Im2colWindow) over an NHWC image of these sizes, its window's
    symbols' values after them, or None where the TMA cannot load the tile: im2col's flattened
    columns across kernel positions (C not a multiple of them), the corners out of the TMA's
    range (-128 .. 127 for rank 4).  Corners W then H (innermost first): the output pixels'
    windows' top-left corners span [lower, lower + (O - 1) * stride] on each axis, O pixels,
    the TMA stepping `stride` from one to the next."""
    win = spec.im2col
    shape, values = sizes[:4], sizes[4:]
    n, h, w, c = (int(x) for x in shape)
    slots = {name: i for i, name in enumerate(win.symbols)}
    out_w, out_h = (int(_evaluate(e, tuple(slots.items()))(values)) for e in win.out)
    if (win.columns and c % win.columns) or min(out_h, out_w, n, c) <= 0:
        return None
    lower = list(win.lower)
    upper = [lower[0] + (out_w - 1) * win.stride[0] + 1 - w, lower[1] + (out_h - 1) * win.stride[1] + 1 - h]
    if any(not -128 <= x <= 127 for x in lower + upper):
        return None
    dims, strides, _ = map_geometry(replace(spec, im2col=None), tuple(shape))
    return dims, strides, lower, upper, [1, win.stride[0], win.stride[1], 1]


@functools.lru_cache(maxsize=64)
def _evaluate(e, slots_items):
    from .grid import py_function
    return py_function(e, dict(slots_items))


def _encode_im2col(spec, pointer: int, sizes: tuple):
    geometry = im2col_geometry(spec, sizes)
    if geometry is None:
        return None
    dims, strides, lower, upper, element_strides = geometry
    if pointer % 16 or any(s % 16 for s in strides):
        return None
    storage, base = _storage()
    start = -base % 128
    result = _driver_encode_im2col()(
        base + start, tma_dtype(spec.dtype), 4, pointer, struct.pack("4Q", *dims), struct.pack("3Q", *strides),
        struct.pack("2i", *lower), struct.pack("2i", *upper), spec.box_cols, spec.box_rows,
        struct.pack("4I", *element_strides), _INTERLEAVE_NONE, _SWIZZLE_128B, _L2_256B, _OOB_ZERO)
    if result != 0:
        return None
    return np.void(bytes(storage[start:start + 128]))


def _storage() -> tuple:
    """256 zero bytes the driver writes a map into (at its first 128-byte boundary) and their
    address: a bytearray seen through ctypes' c_char (NumPy's zeros and __array_interface__ cost
    a cached first call's three maps ~20 us more)."""
    storage = bytearray(256)
    return storage, ctypes.addressof(ctypes.c_char.from_buffer(storage))


def view_sizes(spec, values: tuple) -> tuple:
    """The sizes of a view's map (`spec.view`), outermost first, from its symbols' values."""
    slots = tuple((name, i) for i, name in enumerate(spec.view.symbols))
    return tuple(int(_evaluate(e, slots)(values)) for e in spec.view.dims)


def encode(spec, pointer: int, sizes: tuple):
    """The tensor map as a 128-byte NumPy scalar (a kernel argument by value), or None when the
    driver refuses it (a base or row pitch not 16-byte aligned, an empty tensor)."""
    if spec.im2col is not None:
        return _encode_im2col(spec, pointer, sizes)
    if spec.view is not None:  # the tensor in the view's shape
        sizes = view_sizes(spec, sizes)
        spec = replace(spec, view=None, shape=sizes)
    dims, strides, box = map_geometry(spec, sizes)
    rank = len(dims)
    if pointer % 16 or any(s % 16 for s in strides) or min(dims) <= 0:
        return None  # what the driver would refuse; it need not be asked
    storage, base = _storage()
    start = -base % 128  # CUtensorMap is 128-byte aligned
    result = _driver_encode()(
        base + start, tma_dtype(spec.dtype), rank, pointer, struct.pack(f"{rank}Q", *dims),
        struct.pack(f"{max(1, rank - 1)}Q", *(strides or [0])), struct.pack(f"{rank}I", *box),
        struct.pack(f"{rank}I", *([1] * rank)), _INTERLEAVE_NONE, _SWIZZLE_128B if spec.swizzle else _SWIZZLE_NONE,
        _L2_256B, _OOB_ZERO)
    if result != 0:
        return None
    return np.void(bytes(storage[start:start + 128]))


_NO_MAP = np.void(bytes(128))
_LOADS, _STORES = 1, 2  # the bits of `tl_tma`
# each value of the flags as one object, so that a launch tells its flags by identity (`is`)
FLAGS = tuple(np.int32(f) for f in range(4))


def tma_flags(specs, maps: list) -> list:
    """The maps as the kernel takes them, then `tl_tma`: a kind of maps (loads, the store) is
    on when the driver accepted each of its maps; the maps of a kind that is off are zeros."""
    ok = {kind: all(m is not None for s, m in zip(specs, maps) if s.store == kind) for kind in (False, True)}
    flags = (_LOADS if ok[False] else 0) | (_STORES if ok[True] and any(s.store for s in specs) else 0)
    return [m if ok[s.store] else _NO_MAP for s, m in zip(specs, maps)] + [FLAGS[flags]]


def built_flags(specs: tuple, asserts) -> int | None:
    """The flags the runtime compiles a kernel with these maps for (`TL_TMA_FLAGS`, every map
    encoded: the copies and stores without the TMA compiled out, half of std.gemm's NVRTC
    time), or None for the generic build: a kernel without maps, or with device asserts, whose
    failure record belongs to one module (launch.py checks it)."""
    if not specs or asserts:
        return None
    return _LOADS | (_STORES if any(s.store for s in specs) else 0)


def with_flags(source: str, flags: int | None) -> str:
    """A generated kernel's source as the runtime compiles it for `flags` (`built_flags`)."""
    return source if flags is None else f"#define TL_TMA_FLAGS {flags}  // every tensor map encoded\n{source}"


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
            found = tma_flags(self.specs, maps)
            if len(self._cache) >= _MAX_CACHED:
                self._cache.clear()
            self._cache[key] = found
        return found
