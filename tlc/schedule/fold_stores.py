"""A fragment copied out right after the parallel loop that computes it is stored a run at a
time, inside the loop (the last pass; shown in the tile IR under the loop).

A plain kernel computes its result in a fragment and copies it out after the loop
(`row[0, j] = ...` then `copy(row, y[r, 0])`).  Run as written, every register of the result is
live until the copy, on top of what the loop reads: the plain layer_norm's last loop (its row,
its staged weights and biases read a run at a time) took 80 registers and spilled 52 bytes at
the 3 blocks an SM its shared memory allows, and ran at 0.84 of the copy bandwidth on an H100.
With each run of 8 stored as soon as the loop has computed it, 72 registers, no spill, 0.94
(hand-edited generated CUDA, both timed in one run, session 12).  The copy is attached to the
loop (`Parallel.stores`); the code generator emits it run by run (tl::FragmentStore), the
interpreter runs it after the loop, which is what it means.

A copy is folded when, on a CUDA target:
- it copies a whole fragment into a region of a tensor parameter (global memory) and is the
  statement right after the loop (or after another folded copy);
- the loop runs in the fragment's own layout, blocked, with no exchange, and every store to the
  fragment in the loop is at the loop's own index: a run's registers are final once the loop has
  computed the run;
- the loop reads nothing of the tensor the copy writes (the tensor parameters are restrict).
"""
from __future__ import annotations

from dataclasses import replace

from .. import ir
from ..ir.walk import loads, statement_exprs, statements, written_names
from .layout import Blocked


def fold_stores(kernel: ir.Kernel, target) -> ir.Kernel:
    """`kernel` with each copy out of a fragment that the loop before it computes folded into
    that loop; unchanged on a host target or a warp-specialized kernel."""
    if getattr(target, "host", True) or kernel.warp_spec is not None:
        return kernel
    fragments = {b.name: b for b in kernel.buffers if b.scope == "fragment"}
    params = {p.name for p in kernel.params if p.kind == "tensor"}
    body = _folded(kernel.body, fragments, params)
    return kernel if body == kernel.body else replace(kernel, body=body)


def _folded(stmts: tuple, fragments: dict, params: set) -> tuple:
    out: list = []
    for s in stmts:
        if isinstance(s, (ir.For, ir.If)):
            s = replace(s, **{f: _folded(getattr(s, f), fragments, params)
                              for f in ("body", "then", "orelse") if isinstance(getattr(s, f, None), tuple)})
        if out and isinstance(out[-1], ir.Parallel) and _foldable(out[-1], s, fragments, params):
            out[-1] = replace(out[-1], stores=out[-1].stores + (s,))
            continue
        out.append(s)
    return tuple(out)


def _foldable(p: ir.Parallel, c, fragments: dict, params: set) -> bool:
    # not a view's region (Region.dims): stored after the loop by copy_f2g.  Folded, std.data's
    # gather made ptxas spill 8 bytes in tril and triu of the same module (sm_90a, bf16); unmeasured
    # either way on the GPU
    if not (isinstance(c, ir.Copy) and isinstance(c.src, ir.BufferRef) and isinstance(c.dst, ir.Region)
            and c.src.name in fragments and c.dst.name in params and not c.batch and c.dst.dims is None):
        return False
    frag = fragments[c.src.name]
    if p.exchange or not isinstance(p.layout, Blocked) or frag.layout != p.layout:
        return False
    if c.dst.name in written_names(p.body):
        return False
    own = tuple(p.vars)
    for t in statements(p.body):
        if any(x.name == c.dst.name for e in statement_exprs(t) for x in loads(e)):
            return False
        if isinstance(t, ir.Atomic) and t.name == frag.name:
            return False
        if isinstance(t, ir.Store) and t.name == frag.name and \
                tuple(i.name if isinstance(i, ir.Var) else None for i in t.indices) != own:
            return False
    return True
