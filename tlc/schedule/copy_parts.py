"""A copy with a part of a shared, fragment or local buffer on one side (`lse[k, :]`, the row
k of a fragment), or a column of a tensor (`glse[b, rows, h]`): lowered to a `parallel` loop
over the tile, one element an index.

Why a loop rather than a copy primitive: a part of a fragment is spread over the threads by
the whole fragment's layout, so no thread holds a row of its own; a parallel loop gets what
any loop gets from the scheduler (a layout for its iterations, an exchange through shared
memory where the fragment is laid out otherwise, bounds on the global side), and the
interpreter runs it as it runs any loop.  Elements outside the tensor read as 0 and are not
written, as for a copy; so are those outside the buffer, where an index is not a constant.
"""
from __future__ import annotations

from .. import ir
from ..dtypes import BOOL, I32


def is_part(copy: ir.Copy, buffers: dict) -> bool:
    """Whether a side of `copy` is a region of a buffer other than the whole buffer, or a
    column of a tensor: a region whose last dimension a single index drops (`G[b, rows, h]`),
    so that the tile's contiguous elements lie a row of the tensor apart."""
    for side, other in ((copy.src, copy.dst), (copy.dst, copy.src)):
        if isinstance(side, ir.Region) and side.name in buffers:
            whole = all(isinstance(o, ir.Const) and o.value == 0 for o in side.offsets)
            if not whole or tuple(side.extents) != tuple(buffers[side.name].shape):
                return True
        elif isinstance(side, ir.Region) and side.extents[-1] == 1 and _box(other, buffers)[2][-1] != 1:
            return True
    return False


def as_loop(copy: ir.Copy, buffers: dict, dtypes: dict, fresh) -> ir.Stmt:
    """`copy` as `for i.. in parallel(tile): dst[..] = src[..]` (with a local buffer, serial
    loops in every thread); `dtypes` gives each tensor parameter's dtype, `fresh(k)` k new
    index names."""
    src, dst = _box(copy.src, buffers), _box(copy.dst, buffers)
    tile = tuple(e for e in src[2] if e != 1) or (1,)
    names = fresh(len(tile))
    src_idx, src_guard = _indices(src, names, buffers)
    dst_idx, dst_guard = _indices(dst, names, buffers)
    src_dt = buffers[src[0]].dtype if src[0] in buffers else dtypes[src[0]]
    dst_dt = buffers[dst[0]].dtype if dst[0] in buffers else dtypes[dst[0]]
    value: ir.Expr = ir.Load(src[0], src_idx, src_dt, span=copy.span)
    if src_guard is not None:
        value = ir.Select(src_guard, value, ir.Const(0, src_dt), src_dt, span=copy.span)
    if value.dtype != dst_dt:
        value = ir.Cast(value, dst_dt, span=copy.span)
    store: ir.Stmt = ir.Store(dst[0], dst_idx, value, span=copy.span)
    if dst_guard is not None:
        store = ir.If(dst_guard, (store,), span=copy.span)
    scopes = {buffers[x[0]].scope for x in (src, dst) if x[0] in buffers}
    if "local" not in scopes:
        return ir.Parallel(tuple(names), tile, (store,), span=copy.span)
    if "fragment" in scopes:
        from .lower import LoweringError
        raise LoweringError("copy between a local buffer and a fragment: a fragment is spread over the threads, a "
                            "local buffer is each thread's own", copy.span)
    # a local buffer is each thread's own: every thread runs the loop, as it copies a whole one
    body: ir.Stmt = store
    for name, extent in reversed(tuple(zip(names, tile))):
        body = ir.For(name, ir.Const(0, I32), ir.Const(extent, I32), ir.Const(1, I32), "serial", 1, (body,),
                      span=copy.span)
    return body


def _box(side, buffers) -> tuple:
    """(name, offsets, extents) of a copy side."""
    if isinstance(side, ir.BufferRef):
        shape = buffers[side.name].shape
        return side.name, tuple(ir.Const(0, I32) for _ in shape), tuple(shape)
    return side.name, side.offsets, tuple(side.extents)


def _indices(box, names, buffers) -> tuple:
    """The element indices of a side for the loop's indices (one per extent that is not 1),
    and for a buffer the condition that they lie inside it (None when they surely do)."""
    name, offsets, extents = box
    out, guard, k = [], None, 0
    shape = buffers[name].shape if name in buffers else None
    for axis, (o, e) in enumerate(zip(offsets, extents)):
        idx = o
        if e != 1:
            var = ir.Var(names[k], I32)
            k += 1
            idx = var if isinstance(o, ir.Const) and o.value == 0 else ir.BinOp("+", o, var, I32)
        out.append(idx)
        if shape is not None and not (isinstance(o, ir.Const) and 0 <= o.value and o.value + e <= shape[axis]):
            inside = ir.BinOp("and", ir.BinOp(">=", idx, ir.Const(0, I32), BOOL),
                              ir.BinOp("<", idx, ir.Const(shape[axis], I32), BOOL), BOOL)
            guard = inside if guard is None else ir.BinOp("and", guard, inside, BOOL)
    return tuple(out), guard
