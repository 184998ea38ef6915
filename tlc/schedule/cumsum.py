"""Lowering `cumsum(src, dst, dim=D, reverse=R)` (checked in typecheck/scan.py) to `ir.Scan`,
which scans shared memory only: as TileLang's `T.cumsum` does, a fragment side goes through a
shared buffer.  A fragment source is copied into the shared destination, or into a scratch
buffer of the destination's dtype (`SRC_scan`) when the destination is a fragment too; a
fragment destination is copied from the shared buffer that holds the sums.  The scratch is an
ordinary shared buffer of the kernel, so `--emit ir` shows it and the shared-memory plan
reuses its bytes outside the statement."""
from __future__ import annotations

from .. import ir


class ScanLowerer:
    def tile_cumsum(self, call, span) -> list:
        src, dst = (self.buffers[a.id] for a in call.args)
        kw = {k.name: self.const(k.value) for k in call.keywords}
        dim, reverse = int(kw["dim"]), bool(kw["reverse"])
        if src.scope == "shared" and dst.scope == "shared":
            return [ir.Scan("sum", src.name, dst.name, dim, reverse, span=span)]
        if dst.scope == "shared":  # a fragment source: its values into dst, scanned there
            return [ir.Copy(ir.BufferRef(src.name, span=span), ir.BufferRef(dst.name, span=span), span=span),
                    ir.Scan("sum", dst.name, dst.name, dim, reverse, span=span)]
        scratch = self._scan_scratch(src, dst, span)
        out = []
        if src.scope == "shared":
            out.append(ir.Scan("sum", src.name, scratch, dim, reverse, span=span))
        else:
            out += [ir.Copy(ir.BufferRef(src.name, span=span), ir.BufferRef(scratch, span=span), span=span),
                    ir.Scan("sum", scratch, scratch, dim, reverse, span=span)]
        out.append(ir.Copy(ir.BufferRef(scratch, span=span), ir.BufferRef(dst.name, span=span), span=span))
        return out

    def _scan_scratch(self, src: ir.Buffer, dst: ir.Buffer, span) -> str:
        """A new shared buffer of the destination's shape and dtype, named after the source."""
        name, k = f"{src.name}_scan", 0
        while name in self.taken or name in self.buffers:
            k += 1
            name = f"{src.name}_scan{k}"
        self.taken.add(name)
        self.buffers[name] = ir.Buffer(name, "shared", dst.dtype, dst.shape, span=span)
        return name
