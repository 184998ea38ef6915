"""`ir.Scan` (cumsum, cumprod, cummax, cummin) in C: one call of tl::cumsum_shared (templates/tl/scan.cuh) with the
decisions made here: the tile viewed as OUTER x N x INNER around the dimension scanned, the
accumulator's type, and each side's shared layout."""
from __future__ import annotations

import math

from .. import ir
from .cexpr import CodegenError
from .cnames import c_bool, c_type


def scan_accumulator(dt, kind: str = "sum") -> str:
    """The C type a scan into `dt` combines in: float for 16- and 8-bit floats (and f32), double
    for f64; for integers, sums and products in an unsigned type of their width or wider, whose
    results wrap as the destination's width does (a signed overflow would be undefined in C),
    maxima and minima in the destination's own integer type (widened to 32 bits)."""
    if dt.is_float:
        return "double" if dt.name == "f64" else "float"
    if dt.is_int and kind in ("max", "min"):
        unsigned = dt.kind == "uint"
        if dt.bits == 64:
            return "unsigned long long" if unsigned else "long long"
        return "unsigned int" if unsigned else "int"
    if dt.is_int:
        return "unsigned long long" if dt.bits == 64 else "unsigned int"
    raise CodegenError(f"cum{kind} of {dt} is not supported by the CUDA target")


class ScanGen:
    def stmt_Scan(self, s: ir.Scan) -> None:
        src, dst = self.buffers[s.src], self.buffers[s.dst]
        shape = src.shape
        outer, n, inner = math.prod(shape[:s.dim]), shape[s.dim], math.prod(shape[s.dim + 1:])
        rows, cols = (1, shape[0]) if len(shape) == 1 else (math.prod(shape[:-1]), shape[-1])
        self.emit(f"tl::cumsum_shared<tl::ScanOp::{s.kind}, {scan_accumulator(dst.dtype, s.kind)}, {c_type(src.dtype)}, {c_type(dst.dtype)}, "
                  f"{outer}, {n}, {inner}, {c_bool(s.reverse)}, {self.k.threads}, {rows}, {cols}, "
                  f"{src.layout.pad}, {src.layout.swizzle_bytes}, {dst.layout.pad}, {dst.layout.swizzle_bytes}>("
                  f"{self.smem_pointer(dst.name)}, {self.smem_pointer(src.name)});")
