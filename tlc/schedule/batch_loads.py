"""Consecutive copies from global memory into fragments issue their loads together (a pass after
use_fast_math, shown in the tile IR as `(load batch k)` on each copy of a batch, with a note).

A copy into a fragment issues its vector loads and then converts them into the fragment's
registers (tl::copy_g2f); the first conversion waits for the loads.  Rendered one after the
other, three copies (layer_norm's row, weight and bias) wait three times: the second copy's
loads are not issued before the first copy's data is back, ptxas scheduling no load across
the branches of the copy's edge path.  On the H200 the plain layer_norm ran at 0.61 of copy
bandwidth that way (bench/plain.py, (16384, 8192) f16), where rms_norm (two copies) ran at 0.95.

A batch is a run of two or more consecutive copies in one statement list, each from a region
of a tensor into a whole fragment of at least MIN_RUNS vector runs a thread (or of one run,
where the run's copies hold BATCH_RUNS runs in all: a column kernel's eight [64, 64] f16 tiles
a step, one run each), no two into the same fragment, no region offset reading a fragment.
The code generator (codegen/copies.py) renders a batch as one test that every run of every
copy lies inside its tensor (per thread), then every load of the batch, then the conversions;
where the test fails, the copies one by one as before.
"""
from __future__ import annotations

from dataclasses import replace

from .. import ir
from ..ir.walk import loads, statement_exprs
from .layout import vector_run

# vector runs a thread loads of each copy of a batch, at least: a copy of one run a thread
# gains one load's wait from a batch, and the batch's edge test and fallback cost registers that
# a small tile's tight loop may not have (std.nn_layers' group_norm_bwd, its dy and x tiles one
# run of 4 a thread in a loop over positions at 5 blocks an SM, spilled 16 bytes in bf16)
MIN_RUNS = 2
# or of one run, where the batch holds this many runs a thread in all: eight tiles of one run are
# the bytes in flight of four of two (tileops/rows.py's column loop, logsumexp_axis0 at eight
# [64, 64] f16 tiles a step: one by one, ptxas issued its loads three at a time between the
# copies' edge branches), where two of one run (group_norm_bwd above) are not worth the registers
BATCH_RUNS = 8


def batch_loads(kernel: ir.Kernel) -> ir.Kernel:
    """`kernel` with each run of consecutive global-to-fragment copies numbered as a batch."""
    fragments = {b.name: b.layout.registers // vector_run(b.layout) for b in kernel.buffers
                 if b.scope == "fragment" and b.layout is not None and b.layout.registers >= vector_run(b.layout)}
    batcher = _Batcher(kernel.params, fragments)
    body = batcher.stmts(kernel.body)
    if not batcher.batches:
        return kernel
    lines = "; ".join(batcher.batches)
    note = f"load batches (every load issued before the first conversion): {lines}"
    return replace(kernel, body=body, notes=kernel.notes + (note,))


class _Batcher:
    def __init__(self, params, fragments: dict[str, int]):
        self.tensors = {p.name for p in params if p.kind == "tensor"}
        self.fragments = fragments  # name -> vector runs a thread
        self.batches: list[str] = []

    def batchable(self, s: ir.Stmt) -> bool:
        if not isinstance(s, ir.Copy) or s.batch:
            return False
        src, dst = s.src, s.dst
        if not isinstance(src, ir.Region) or src.name not in self.tensors or dst.name not in self.fragments:
            return False
        if isinstance(dst, ir.Region) and any(not isinstance(o, ir.Const) or o.value != 0 for o in dst.offsets):
            return False
        return not any(True for e in statement_exprs(s) for _ in loads(e))

    def stmts(self, stmts: tuple) -> tuple:
        out: list[ir.Stmt] = []
        run: list[ir.Copy] = []

        def batch(copies: list) -> None:
            k = len(self.batches) + 1
            out.extend(replace(c, batch=k) for c in copies)
            spans = [c.span.line for c in copies if c.span is not None]
            where = f" (lines {', '.join(map(str, spans))})" if spans else ""
            self.batches.append(f"{k}: {', '.join(c.dst.name for c in copies)}{where}")

        def flush() -> None:
            if len(run) >= 2 and sum(self.fragments[c.dst.name] for c in run) >= BATCH_RUNS:
                batch(run)
            else:  # the copies of MIN_RUNS runs or more, two or more together, between the others
                part: list[ir.Copy] = []
                for c in run + [None]:
                    if c is not None and self.fragments[c.dst.name] >= MIN_RUNS:
                        part.append(c)
                        continue
                    if len(part) >= 2:
                        batch(part)
                    else:
                        out.extend(part)
                    part = []
                    if c is not None:
                        out.append(c)
            run.clear()

        for s in stmts:
            if self.batchable(s) and all(c.dst.name != s.dst.name for c in run):
                run.append(s)
                continue
            flush()
            if self.batchable(s):
                run.append(s)
                continue
            out.append(self.nested(s))
        flush()
        return tuple(out)

    def nested(self, s: ir.Stmt) -> ir.Stmt:
        if isinstance(s, ir.For) and s.kind != "pipelined":
            return replace(s, body=self.stmts(s.body))
        if isinstance(s, ir.If):
            return replace(s, then=self.stmts(s.then), orelse=self.stmts(s.orelse))
        return s
