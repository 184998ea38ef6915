"""`ir.Scan` (cumsum) in NumPy, the reference the CUDA scan (templates/tl/scan.cuh) is held to:
sums of floats in f64 (a float64 line's error is far below the GPU's f32 accumulation),
rounded once into the destination's dtype; sums of integers wrap in the destination's width, as
the GPU's unsigned accumulator does."""
from __future__ import annotations

import numpy as np

from ..dtypes import DType
from .numerics import cast


def cumsum(src: np.ndarray, dim: int, reverse: bool, dst: np.ndarray, dst_dtype: DType) -> None:
    if dst_dtype.is_float:
        x = src.astype(np.float64)
    else:  # int64/uint64 arithmetic wraps modulo 2^64, and the cast into dst keeps the low bits
        x = src.astype(np.uint64 if dst_dtype.kind == "uint" else np.int64)
    if reverse:
        x = np.flip(x, dim)
    sums = np.cumsum(x, axis=dim, dtype=x.dtype)
    if reverse:
        sums = np.flip(sums, dim)
    dst[...] = cast(np.ascontiguousarray(sums), dst_dtype) if dst_dtype.is_float else _wrapped(sums, dst_dtype)


def _wrapped(sums: np.ndarray, dt: DType) -> np.ndarray:
    """Integers kept modulo 2^bits, as C's conversion to a narrower integer does."""
    return sums.astype(np.uint64).astype(np.dtype(f"{'u' if dt.kind == 'uint' else ''}int{dt.bits}"))
