"""Which staged buffers a pipelined loop leaves as its last iteration's tile.

A pipelined loop whose leading copies run `stages - 1` iterations ahead (the cp.async ring of
tlc/codegen/copies.py) keeps `stages` copies of each staged buffer; iteration `k` reads stage
`k % stages`, and after the loop the buffer's name means stage 0 again.  The language (and
the interpreter, which runs the loop plainly) says the buffer then holds the last iteration's
tile, stage `(n - 1) % stages`.  This pass records, on each such loop, the staged buffers that
code able to run after it reads or updates (`For.keep_last_stage`); the ring then copies that
stage into stage 0 once it has drained, so that every later use of the name, whatever it is
(an element read, a copy, a gemm, a reduce, a partial write before a read, the next iteration
of an enclosing loop), sees what the interpreter sees.  An empty loop (n == 0) copies nothing:
the buffer holds what it held before the loop, as in the interpreter."""
from __future__ import annotations

from dataclasses import replace

from .. import ir
from ..ir.walk import loads, statement_exprs
from .gather_rows import dst_name, split


def keep_last_stages(kernel: ir.Kernel) -> ir.Kernel:
    """`kernel` with `keep_last_stage` set on each ring-shaped pipelined loop whose staged
    buffers are used by statements that may run after it."""
    marker = _Marker({p.name: p for p in kernel.params}, {b.name: b for b in kernel.buffers})
    body = marker.body(kernel.body, ())
    return replace(kernel, body=body) if marker.changed else kernel


class _Marker:
    def __init__(self, params: dict, buffers: dict):
        self.params, self.buffers, self.changed = params, buffers, False

    def staged(self, loop: ir.For) -> set[str]:
        """The buffers a pipelined loop's ring stages (none when it runs as a plain loop)."""
        if loop.kind != "pipelined" or loop.stages < 2:
            return set()
        ring = split(loop, self.params, self.buffers)
        return set() if ring is None else {dst_name(c) for c in ring[0]}

    def body(self, stmts, later: tuple) -> tuple:
        """`stmts` marked; `later` the statement lists that may run after all of them (what
        follows in enclosing bodies, and the whole body of each enclosing loop)."""
        out = []
        for i, s in enumerate(stmts):
            after = (tuple(stmts[i + 1:]), *later)
            if isinstance(s, (ir.For, ir.Parallel)):
                again = (tuple(s.body),) if isinstance(s, ir.For) else ()
                s = replace(s, body=self.body(s.body, (*again, *after)))
                if isinstance(s, ir.For):
                    s = self.mark(s, after)
            elif isinstance(s, ir.If):
                s = replace(s, then=self.body(s.then, after), orelse=self.body(s.orelse, after))
            out.append(s)
        return tuple(out)

    def mark(self, loop: ir.For, after: tuple) -> ir.For:
        staged = self.staged(loop)
        kept = tuple(sorted(name for name in staged if any(self.uses(seq, name) for seq in after)))
        if kept == loop.keep_last_stage:
            return loop
        self.changed = True
        return replace(loop, keep_last_stage=kept)

    def uses(self, stmts, name: str) -> bool:
        """Whether `stmts` read or update buffer `name`; a ring that stages it (the loop itself,
        met again in an enclosing loop's body, or a later one) fills each of its stages before
        reading it, so its body does not count."""
        for s in stmts:
            if isinstance(s, ir.For) and name in self.staged(s):
                continue
            if name in _mentions(s):
                return True
            if any(self.uses(getattr(s, f, ()), name) for f in ("body", "then", "orelse")):
                return True
        return False


def _mentions(s) -> set[str]:
    """The buffers and tensors statement `s` itself (not its nested statements) names."""
    used = {x.name for e in statement_exprs(s) for x in loads(e)}
    for f in ("src", "dst"):
        side = getattr(s, f, None)
        if isinstance(side, (ir.BufferRef, ir.Region)):
            used.add(side.name)
        elif isinstance(side, str):
            used.add(side)
    for f in ("a", "b", "c", "buffer", "name"):
        v = getattr(s, f, None)
        if isinstance(v, str) and not isinstance(s, (ir.Assign, ir.LetScalar)):
            used.add(v)
    return used
