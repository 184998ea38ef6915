"""`ir.Scan` (cumsum, cumprod, cummax, cummin) in C: one call of tl::cumsum_shared (templates/tl/scan.cuh) with the
decisions made here: the tile viewed as OUTER x N x INNER around the dimension scanned, the
accumulator's type, and each side's shared layout."""
from __future__ import annotations

import math

from .. import ir
from .cexpr import CodegenError
from ..schedule.scan_registers import run_length
from .cnames import c_bool, c_name, c_type


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
        if dst.scope == "fragment":
            self.scan_fragment(s, dst)
            return
        shape = src.shape
        outer, n, inner = math.prod(shape[:s.dim]), shape[s.dim], math.prod(shape[s.dim + 1:])
        rows, cols = (1, shape[0]) if len(shape) == 1 else (math.prod(shape[:-1]), shape[-1])
        self.emit(f"tl::cumsum_shared<tl::ScanOp::{s.kind}, {scan_accumulator(dst.dtype, s.kind)}, {c_type(src.dtype)}, {c_type(dst.dtype)}, "
                  f"{outer}, {n}, {inner}, {c_bool(s.reverse)}, {self.k.threads}, {rows}, {cols}, "
                  f"{src.layout.pad}, {src.layout.swizzle_bytes}, {dst.layout.pad}, {dst.layout.swizzle_bytes}>("
                  f"{self.smem_pointer(dst.name)}, {self.smem_pointer(src.name)});")

    def scan_fragment(self, s: ir.Scan, frag) -> None:
        """A fragment scanned in place along its rows (schedule/scan_registers.py chose it): each
        thread's runs in its registers, the runs' totals through a reduction scratch array (the
        two that alternate, reductions.py's `scratch`), scanned there a row at a time."""
        rows, cols = (1, frag.shape[0]) if len(frag.shape) == 1 else frag.shape
        if not run_length(frag.layout) >= 2:
            raise CodegenError(f"a scan of the fragment '{s.dst}' laid out {frag.layout} is not supported by the CUDA "
                               "target", s.span)
        info, runs = self.fragment(s.dst), cols // run_length(frag.layout)
        acc = scan_accumulator(frag.dtype, s.kind)
        totals = self.scratch(rows * runs, acc)
        self.emit(f"tl::cumsum_fragment<tl::ScanOp::{s.kind}, {acc}, {info.c_layout}, {rows}, {cols}, {c_bool(s.reverse)}, "
                  f"{self.k.threads}>({c_name(s.dst)}, {totals});  // its runs' totals: {rows} x {runs}")
