"""`ir.Scan` (cumsum, cumprod, cummax, cummin) in NumPy, the reference the CUDA scan
(templates/tl/scan.cuh) is held to: sums and products of floats in f64 (a float64 line's error is
far below the GPU's f32 accumulation), rounded once into the destination's dtype; sums and
products of integers wrap in the destination's width, as the GPU's unsigned accumulator does;
maxima and minima are exact (of floats as fmax and fmin: a nan against a number gives the number).
"""
from __future__ import annotations

import numpy as np

from ..dtypes import DType
from .numerics import cast


_ACCUMULATE = {"sum": np.cumsum, "prod": np.cumprod}
_EXTREMA = {"max": (np.fmax, np.maximum), "min": (np.fmin, np.minimum)}


def scan(kind: str, src: np.ndarray, dim: int, reverse: bool, dst: np.ndarray, dst_dtype: DType) -> None:
    """dst = the inclusive scan of `src` along `dim` by `kind` (ir.SCAN_KINDS)."""
    if dst_dtype.is_float:
        x = src.astype(np.float64)
    else:  # int64/uint64 arithmetic wraps modulo 2^64, and the cast into dst keeps the low bits
        x = src.astype(np.uint64 if dst_dtype.kind == "uint" else np.int64)
    if reverse:
        x = np.flip(x, dim)
    if kind in _EXTREMA:
        floats, ints = _EXTREMA[kind]
        out = (floats if dst_dtype.is_float else ints).accumulate(x, axis=dim)
    else:
        with np.errstate(over="ignore", invalid="ignore"):
            out = _ACCUMULATE[kind](x, axis=dim, dtype=x.dtype)
    if reverse:
        out = np.flip(out, dim)
    dst[...] = cast(np.ascontiguousarray(out), dst_dtype) if dst_dtype.is_float else _wrapped(out, dst_dtype)


def _wrapped(sums: np.ndarray, dt: DType) -> np.ndarray:
    """Integers kept modulo 2^bits, as C's conversion to a narrower integer does."""
    return sums.astype(np.uint64).astype(np.dtype(f"{'u' if dt.kind == 'uint' else ''}int{dt.bits}"))
