"""Whole-tile operations of the interpreter: boxes of arrays, gemm and reductions.

Owns the vectorized NumPy behind `Copy`, `Gemm` and `Reduce`: boxes partly outside an
array read 0 and drop the writes that fall outside; gemm and reductions accumulate as the
tensor cores and the compiler's reductions do (see `numerics.accumulate_dtype`).
"""
from __future__ import annotations

import numpy as np

from ..dtypes import DType
from .numerics import accumulate_dtype, cast, np_dtype


def _clip_box(shape, offsets, extents):
    """The part of the box inside the array: (array slices, box slices), or None if empty."""
    inside, local = [], []
    for n, o, e in zip(shape, offsets, extents):
        lo, hi = max(0, o), min(n, o + e)
        if hi <= lo:
            return None
        inside.append(slice(lo, hi))
        local.append(slice(lo - o, hi - o))
    return tuple(inside), tuple(local)


def _full(shape, offsets, extents) -> bool:
    return all(0 <= o and o + e <= n for n, o, e in zip(shape, offsets, extents))


def read_box(arr: np.ndarray, offsets, extents) -> np.ndarray:
    """`arr[offsets : offsets + extents]`, 0 where the box leaves the array (maybe a view)."""
    if _full(arr.shape, offsets, extents):
        return arr[tuple(slice(o, o + e) for o, e in zip(offsets, extents))]
    out = np.zeros(extents, arr.dtype)
    clip = _clip_box(arr.shape, offsets, extents)
    if clip is not None:
        out[clip[1]] = arr[clip[0]]
    return out


def write_box(arr: np.ndarray, offsets, extents, tile: np.ndarray) -> None:
    """Store `tile` (shaped `extents`) at `offsets`, skipping what falls outside `arr`."""
    if _full(arr.shape, offsets, extents):
        arr[tuple(slice(o, o + e) for o, e in zip(offsets, extents))] = tile
        return
    clip = _clip_box(arr.shape, offsets, extents)
    if clip is not None:
        arr[clip[0]] = tile[clip[1]]


def copy(src: np.ndarray, src_offsets, src_extents, dst: np.ndarray, dst_dtype: DType,
         dst_offsets, dst_extents) -> None:
    """One copy: read a box, convert to the destination dtype, write a box.  The two extents
    agree once their 1s are dropped, so a reshape lines the elements up."""
    tile = cast(read_box(src, src_offsets, src_extents), dst_dtype)
    write_box(dst, dst_offsets, dst_extents, tile.reshape(dst_extents))


def gemm(a: np.ndarray, b: np.ndarray, c: np.ndarray, in_dtype: DType, c_dtype: DType,
         trans_a: bool, trans_b: bool, precision: str = "ieee") -> None:
    """`c += op(a) @ op(b)`: f16/bf16/f8/f32 inputs multiply in f32, 8/16-bit integers in i32
    (wrapping, as the tensor cores do).  With precision "tf32" the operands lose the low 13
    bits of their mantissa first: the tensor cores truncate f32 to tf32 (PTX ISA, wgmma)."""
    w = accumulate_dtype(in_dtype)
    x = (a.T if trans_a else a).astype(w)
    y = (b.T if trans_b else b).astype(w)
    if precision == "tf32":
        x, y = tf32(x), tf32(y)
    if c.dtype == w:
        c += x @ y
    else:
        c[...] = cast(c.astype(w) + x @ y, c_dtype)


def tf32(x: np.ndarray) -> np.ndarray:
    """f32 values truncated to tf32 (1 sign, 8 exponent, 10 mantissa bits), toward zero."""
    return (np.ascontiguousarray(x, np.float32).view(np.uint32) & np.uint32(0xFFFFE000)).view(np.float32)


def reduce(kind: str, src: np.ndarray, src_dtype: DType, dim: int, dst: np.ndarray,
           dst_dtype: DType, clear: bool) -> None:
    """`dst = reduce(src, dim)`, or combined with dst's values when `clear` is False."""
    w = accumulate_dtype(src_dtype) if kind == "sum" else \
        (np.dtype(np.float32) if src_dtype.is_float and src_dtype.bits < 32 else np_dtype(src_dtype))
    x = src.astype(w)
    fmax, fmin = (np.fmax, np.fmin) if src_dtype.is_float else (np.maximum, np.minimum)
    if kind == "sum":
        r = np.sum(x, axis=dim, dtype=w)
    elif kind == "max":
        r = fmax.reduce(x, axis=dim)
    elif kind == "min":
        r = fmin.reduce(x, axis=dim)
    else:  # absmax
        r = fmax.reduce(np.abs(x), axis=dim)
    r = r.reshape(dst.shape)
    if not clear:
        old = dst.astype(w)
        r = old + r if kind == "sum" else (fmin if kind == "min" else fmax)(old, r)
    dst[...] = cast(np.asarray(r, dtype=w), dst_dtype)
