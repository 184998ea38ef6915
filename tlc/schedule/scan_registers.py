"""Where a fragment's scan runs: the pass `place_fragment_scans`, after layout inference.

schedule/cumsum.py lowers the scan of a whole fragment along its last dimension to `ir.Scan` of
the fragment in place.  It runs in registers (tl::cumsum_fragment, templates/tl/scan.cuh) when
the fragment's layout deals it in runs of consecutive columns (blocked vectors, the mma
accumulator's pairs): each thread scans its runs, and only the runs' totals go through shared
memory, a run's worth less traffic than the whole tile and no tile-sized buffer.  A thread keeps
its partial results in the fragment's own registers, so they must lose nothing there: sums and
products of f32 or f64 (or integers, whose wrapped partial sums stay exact modulo their width),
maxima and minima of any dtype.  Any other fragment scan (a 16-bit float sum, rounded once in
f32; a replicated or one-register-run layout) goes through a shared copy of the fragment, as
TileLang's `T.cumsum` does: copy in, `ir.Scan` of the shared buffer, copy back.

Why this matters: std.reduce's cumsum of (16384, 8192) f16 rows spent about 16 bytes of shared
traffic and two conversions per element on the round trip (0.75 of copy on the H200, against
0.91 for cummax, whose shared tile is half as wide)."""
from __future__ import annotations

from dataclasses import replace

from .. import ir
from .layout import Blocked, MmaAccumulator
from ..ir.walk import statements
from .layout_infer import taken_names


def place_fragment_scans(kernel: ir.Kernel) -> ir.Kernel:
    frags = {b.name: b for b in kernel.buffers if b.scope == "fragment"}
    if not any(isinstance(s, ir.Scan) and s.dst in frags for s in statements(kernel.body)):
        return kernel
    taken, added = taken_names(kernel), []

    def through_shared(s: ir.Scan) -> tuple:
        frag = frags[s.dst]
        name, k = f"{s.dst}_scan", 0
        while name in taken:
            k += 1
            name = f"{s.dst}_scan{k}"
        taken.add(name)
        added.append(ir.Buffer(name, "shared", frag.dtype, frag.shape, span=s.span))
        return (ir.Copy(ir.BufferRef(s.dst, span=s.span), ir.BufferRef(name, span=s.span), span=s.span),
                replace(s, src=name, dst=name),
                ir.Copy(ir.BufferRef(name, span=s.span), ir.BufferRef(s.dst, span=s.span), span=s.span))

    def place(stmts) -> tuple:
        out = []
        for s in stmts:
            if isinstance(s, ir.Scan) and s.dst in frags:
                out += [s] if in_registers(s, frags[s.dst]) else through_shared(s)
                continue
            changes = {f: place(getattr(s, f)) for f in ("body", "then", "orelse") if isinstance(getattr(s, f, None), tuple)}
            out.append(replace(s, **changes) if changes else s)
        return tuple(out)

    body = place(kernel.body)
    return replace(kernel, body=body, buffers=kernel.buffers + tuple(added))


def in_registers(s: ir.Scan, frag: ir.Buffer) -> bool:
    """Whether the in-place scan of `frag` along its last dimension runs in its registers."""
    run, dt = run_length(frag.layout), frag.dtype
    exact = s.kind in ("max", "min") or dt.is_int or dt.name in ("f32", "f64")
    return run >= 2 and exact and frag.shape[-1] % run == 0 and s.src == s.dst == frag.name


def run_length(layout) -> int:
    """How many consecutive columns of one row a thread holds together in `layout` (the C side's
    RUN): a blocked layout's vector, the mma accumulator's pair; 1 for any other."""
    if isinstance(layout, Blocked):
        return layout.vec
    return 2 if isinstance(layout, MmaAccumulator) else 1
