"""Lowering `cumsum(src, dst, dim=D, reverse=R)` (checked in typecheck/scan.py; cumprod, cummax
and cummin the same, of their kind) to `ir.Scan`.

A whole fragment of rank 1 or 2 scanned along its last dimension into a whole fragment stays
in registers: `ir.Scan` of the destination in place (the source converted into it first by a
parallel loop when it is another fragment).  Whether its layout lets it run there is known only
after layout inference; schedule/scan_registers.py decides, and sends the others through shared
memory as below.  Everything else scans whole shared buffers: as TileLang's `T.cumsum` does, a
fragment side goes through shared memory, and so does a region of a buffer (`g[i * C:(i + 1) * C]`).

The scan runs in the destination when it is a whole shared buffer, else in a scratch buffer of
the tile's shape and the destination's dtype (`SRC_scan`).  The source reaches it by a copy,
unless it is the same buffer or a whole shared one (then the scan reads it directly); a
destination that is not the scanned buffer is copied from it.  Copies of a region are
element by element (`copy_parts`, as any copy of a part of a buffer).  The scratch is an
ordinary shared buffer of the kernel: `--emit ir` shows it and the shared-memory plan reuses
its bytes outside the statement."""
from __future__ import annotations

from .. import ir
from ..parser import nodes as n
from . import copy_parts


KINDS = {"cumsum": "sum", "cumprod": "prod", "cummax": "max", "cummin": "min"}


class ScanLowerer:
    def tile_cumsum(self, call, span) -> list:
        kind = KINDS[call.func.id]
        kw = {k.name: self.const(k.value) for k in call.keywords}
        dim, reverse = int(kw["dim"]), bool(kw["reverse"])
        src, dst = (self._scan_operand(a) for a in call.args)
        dst_buffer = self.buffers[dst.name]
        if self._along_fragment_rows(src, dst, dim):
            out = [] if src.name == dst.name else \
                [copy_parts.as_loop(ir.Copy(src, dst, span=span), self.buffers, {}, self._fresh_indices)]
            return out + [ir.Scan(kind, dst.name, dst.name, dim, reverse, span=span)]
        if self._whole(dst) and dst_buffer.scope == "shared":
            scanned = dst.name
        else:
            scanned = self._scan_scratch(src.name, dst_buffer.dtype, self._extents(dst), span)
        out = []
        if src.name == scanned or (self._whole(src) and self.buffers[src.name].scope == "shared"):
            out.append(ir.Scan(kind, src.name, scanned, dim, reverse, span=span))
        else:
            out += [*self._scan_copy(src, ir.BufferRef(scanned, span=span), span),
                    ir.Scan(kind, scanned, scanned, dim, reverse, span=span)]
        if scanned != dst.name:
            out += self._scan_copy(ir.BufferRef(scanned, span=span), dst, span)
        return out

    tile_cumprod = tile_cummax = tile_cummin = tile_cumsum

    def _along_fragment_rows(self, src, dst, dim: int) -> bool:
        """Whether the scan is of a whole fragment (rank 1 or 2) along its last dimension into a
        whole fragment: a scan that may run in registers."""
        shape = self.buffers[dst.name].shape
        return (all(self._whole(x) and self.buffers[x.name].scope == "fragment" for x in (src, dst))
                and len(shape) <= 2 and dim == len(shape) - 1)

    def _scan_operand(self, e):
        """A whole buffer (a BufferRef) or a region of one (a Region of the buffer's rank)."""
        if isinstance(e, n.Name):
            return ir.BufferRef(e.id, span=e.span)
        return self.operand(e, ())  # every extent is a constant here, a single index's 1 too

    def _whole(self, side) -> bool:
        b = self.buffers[side.name]
        return isinstance(side, ir.BufferRef) or (
            all(isinstance(o, ir.Const) and o.value == 0 for o in side.offsets) and tuple(side.extents) == b.shape)

    def _extents(self, side) -> tuple:
        return self.buffers[side.name].shape if isinstance(side, ir.BufferRef) else tuple(side.extents)

    def _scan_copy(self, src, dst, span) -> list:
        copy = ir.Copy(src, dst, span=span)
        if copy_parts.is_part(copy, self.buffers):  # a region: element by element
            return [copy_parts.as_loop(copy, self.buffers, {}, self._fresh_indices)]
        return [copy]

    def _scan_scratch(self, src: str, dtype, shape: tuple, span) -> str:
        """A new shared buffer of `shape` and `dtype`, named after the source."""
        name, k = f"{src}_scan", 0
        while name in self.taken or name in self.buffers:
            k += 1
            name = f"{src}_scan{k}"
        self.taken.add(name)
        self.buffers[name] = ir.Buffer(name, "shared", dtype, tuple(shape), span=span)
        return name
