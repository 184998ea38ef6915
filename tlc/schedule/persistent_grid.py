"""A persistent walk as the grid it walks, for warp specialization (schedule/__init__.py).

Warp specialization (warpspec.py) takes a pipelined loop at the top of the grid, and makes the
kernel persistent itself: a block per SM walking the grid's tiles in its own order.  A kernel
written as TileLang's persistent gemm, `with grid(sm_num) as b:` around
`for bx, by in persistent([m, n], sm_num, b):`, is the same computation over the tile grid
`(m, n)` when the walk visits every tile once and no tile depends on which block runs it or
what ran before it in that block.  Then the kernel is lowered again as that tile grid and
handed to the passes; the scheduler keeps that version only when warp specialization makes it
persistent (tlc never turns the author's persistent kernel into a non-persistent one), and the
walk as written otherwise.

What the tile grid needs, each checked here, else None (the walk as written):
- the grid is one dimension, the walk's wave size is its extent and its index the block index,
  so that the walk visits every tile exactly once; at most 3 tile counts, computable at the
  launch (shape sizes, scalar parameters, constants);
- the grid's body is the walk, after scalars that do not read the block index;
- the walk's body reads no block index, leaves no walk-level `break`/`continue`, assigns no
  scalar declared outside it, reads no buffer before writing it whole in the same tile, and
  does not read a tensor it writes (so that the order of the tiles cannot matter)."""
from __future__ import annotations

from dataclasses import replace

from .. import ir
from ..dtypes import I32
from ..diagnostics import DiagnosticError
from ..ir.walk import loads, statement_exprs, statements, subexprs, variables, written_names


def scheduled_as_tile_grid(walks, kernel: ir.Kernel, target, passes, after) -> ir.Kernel | None:
    """The lowered `kernel` as the grid of its walk's tiles, run through `passes` ((name, pass)
    pairs, the scheduler's after lowering), when `target` warp-specializes that into a
    persistent kernel; `after(name, kernel)` then sees each pass's result.  None otherwise."""
    if not (target.wgmma and target.tma):
        return None
    tiled = walk_as_tile_grid(walks, kernel)
    if tiled is None:
        return None
    results = []
    try:
        for name, run in passes:
            tiled = run(tiled)
            results.append((name, tiled))
    except DiagnosticError:  # the walk as written reports it
        return None
    if tiled.warp_spec is None or tiled.warp_spec.tile_order is None:
        return None
    ir.verify(tiled)
    for name, result in results:
        after(name, result)
    return tiled


def walk_as_tile_grid(walks, kernel: ir.Kernel) -> ir.Kernel | None:
    """`kernel`, whose body holds the lowered walks `walks` (persistent.Walk), as the grid of its
    one walk's tiles, or None where it is not the same computation."""
    if len(walks) != 1 or len(kernel.block_vars) != 1:
        return None
    w = walks[0]
    block = kernel.block_vars[0]
    if len(w.dims) > 3 or kernel.grid[0] != w.wave or w.index != ir.Var(block, w.index.dtype):
        return None
    at = next((i for i, s in enumerate(kernel.body) if s is w.loop), None)
    if at is None or at + 1 != len(kernel.body) or at < len(w.before) \
            or any(a is not b for a, b in zip(kernel.body[at - len(w.before):at], w.before)):
        return None
    prelude = kernel.body[:at - len(w.before)]
    launch = {*kernel.shape_symbols(), *(p.name for p in kernel.params if p.kind == "scalar")}
    if not all(v.name in launch for d in w.dims for v in variables(d)) \
            or any(isinstance(x, (ir.Load, ir.Call)) for d in w.dims for x in subexprs(d)):
        return None  # a grid's extents are computed by the launch, from sizes and scalars only
    if not all(isinstance(s, (ir.LetScalar, ir.Assign)) for s in prelude) or _reads(prelude, {block}):
        return None
    if not _tile_independent(w.body, kernel, block):
        return None
    notes = tuple(f"line {w.line}: persistent loop over ({', '.join(w.names)}): run as the grid of its tiles, "
                  "which the warp-specialized kernel walks persistently in its own order (each tile once, as the "
                  "walk visits them)" if x == w.note else x for x in kernel.notes)
    return replace(kernel, grid=tuple(w.dims), block_vars=w.coords, body=(*prelude, *w.body), notes=notes,
                   persistent_walk=True)


def _reads(stmts, names: set) -> bool:
    return any(v.name in names for s in statements(stmts) for e in statement_exprs(s) for v in variables(e))


def _tile_independent(body, kernel: ir.Kernel, block: str) -> bool:
    if _reads(body, {block}) or _leaves_the_walk(body):
        return False
    declared = {s.name for s in statements(body) if isinstance(s, ir.LetScalar)} \
        | {s.var for s in statements(body) if isinstance(s, ir.For)} \
        | {v for s in statements(body) if isinstance(s, ir.Parallel) for v in s.vars}
    outer = {s.name for s in statements(body) if isinstance(s, ir.Assign) and s.name not in declared}
    if not outer <= _set_first(body):
        return False
    params = {p.name for p in kernel.params}
    read = {x.name for s in statements(body) for e in statement_exprs(s) for x in loads(e)} \
        | {s.src.name for s in statements(body) if isinstance(s, ir.Copy)}
    if written_names(body) & read & params:
        return False
    return _written_before_read(body, set(), {b.name: b.shape for b in kernel.buffers}) is not None


def _set_first(body) -> set:
    """The scalars the walk's body assigns at its top level before any statement reads them
    (the lowering declares a grid's scalars at the kernel's top and assigns them where they
    stand: attention's `hk = h // (H // HK)`): each tile sets them anew, none reads what an
    earlier tile left."""
    out, read = set(), set()
    for s in body:
        names = {v.name for e in statement_exprs(s) for v in variables(e)} if not isinstance(s, ir.Assign) \
            else {v.name for v in variables(s.value)}
        if isinstance(s, (ir.For, ir.If, ir.Parallel)):
            names |= {v.name for x in statements(s.body if not isinstance(s, ir.If) else (*s.then, *s.orelse))
                      for e in statement_exprs(x) for v in variables(e)}
        read |= names
        if isinstance(s, ir.Assign) and s.name not in read:
            out.add(s.name)
    return out


def _elementwise(p: ir.Parallel, buffers: dict) -> set:
    """The buffers a top-level store of `p`'s body writes at `p`'s indices, in order, over the
    buffer's whole shape."""
    at = tuple(ir.Var(v, I32) for v in p.vars)
    return {s.name for s in p.body if isinstance(s, ir.Store) and s.name in buffers
            and tuple(buffers[s.name]) == tuple(p.extents)
            and tuple(ir.Var(i.name, I32) if isinstance(i, ir.Var) else i for i in s.indices) == at}


def _leaves_the_walk(stmts) -> bool:
    """A `break` or `continue` of the walk itself (not of a loop inside it)."""
    for s in stmts:
        if isinstance(s, (ir.Break, ir.Continue)):
            return True
        if isinstance(s, ir.If) and (_leaves_the_walk(s.then) or _leaves_the_walk(s.orelse)):
            return True
    return False


def _written_before_read(stmts, whole: set, buffers: dict) -> set | None:
    """The buffers written whole after `stmts`, given those written whole before, or None when
    a statement reads a buffer not written whole before it in this tile (what an earlier tile
    left there), or is one this check does not know.  `buffers`: each buffer's shape.  In a
    `parallel` loop over a buffer's whole shape, a store of the element at the loop's indices
    (attention's `max_log2[i] = ...`) writes it whole for what follows (each iteration reads
    the element it stored)."""
    whole = set(whole)

    def ready(names) -> bool:
        return all(x not in buffers or x in whole for x in names)

    for s in stmts:
        loaded = {x.name for e in statement_exprs(s) for x in loads(e)}
        if isinstance(s, ir.Parallel):
            inner, elementwise = set(whole), _elementwise(s, buffers)
            for x in s.body:
                inner = _written_before_read([x], inner, buffers)
                if inner is None:
                    return None
                if isinstance(x, ir.Store) and x.name in elementwise:
                    inner.add(x.name)
            whole |= inner & elementwise
            continue
        if not ready(loaded):
            return None
        if isinstance(s, ir.Fill):
            whole.add(s.buffer)
        elif isinstance(s, ir.Copy):
            if not ready({s.src.name}):
                return None
            if isinstance(s.dst, ir.BufferRef):
                whole.add(s.dst.name)
        elif isinstance(s, ir.Gemm):
            if not ready({s.a, s.b, s.c}):
                return None
        elif isinstance(s, ir.Reduce):
            if not ready({s.src} if s.clear else {s.src, s.dst}):
                return None
            whole.add(s.dst)
        elif isinstance(s, ir.Atomic):  # reads the element it updates
            if not ready({s.name}):
                return None
        elif isinstance(s, ir.Store):  # a part of a buffer: written, not whole
            pass
        elif isinstance(s, ir.For):
            if _written_before_read(s.body, whole, buffers) is None:
                return None
        elif isinstance(s, ir.If):
            then, orelse = (_written_before_read(b, whole, buffers) for b in (s.then, s.orelse))
            if then is None or orelse is None:
                return None
            whole = then & orelse
        elif not isinstance(s, (ir.LetScalar, ir.Assign, ir.Sync, ir.Print, ir.Break, ir.Continue)):
            return None
    return whole
