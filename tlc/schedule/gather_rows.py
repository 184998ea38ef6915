"""Row gathers: a `parallel` loop that fills a shared tile row by row from rows of a tensor
found by index arithmetic, as an implicit GEMM's operand is gathered (std.conv's im2col tile:
row `i` is output pixel `m`, its columns `BK` consecutive channels of one input pixel):

    for i, j in parallel(BM, BK):
        m = by * BM + i            # scalars of i (and of anything outside the loop), never of j
        ...
        xs[i, j] = x[n, ih, iw, c0 + j]      # or where(cond, x[...], 0)

Each row's `BK` elements are consecutive in memory, so the loop moves 16-byte vectors: where it
leads a `pipelined` loop it is a producer of the cp.async ring like a `copy` into a staged
buffer (its buffer staged, where the stages fit the shared memory; its vectors issued
`stages - 1` iterations ahead, each through cp.async with the bytes outside the tensor
zero-filled; codegen/row_gathers.py `gather_async`).  Where only the last index reads j, as
`a + j` (the simple form), a vector's first element decides; otherwise (im2col's lowering,
whose column splits into a kernel position and a channel; a condition on j, as a group's
last channel) each element's scalars, condition and position are computed, and a vector
moves whole where its elements are all inside the tensor and consecutive.  A vector that
starts off a 16-byte boundary or ends past the tensor's last column, or an unaligned
tensor, moves element by element, with the same values.  Nothing changes for the
interpreter or the cpu target, which run the loop as written.

In the general form, where a thread's columns are the same in every row it gathers (the
threads a multiple of a row's vectors), the scalars of j alone (`column_scalars`: im2col's
kernel position and channel, two divisions by C and K) are computed once for the thread's
columns, not once a row, and where every index is a row's part plus a column's
(`split_indices`) an element's offset is the row's plus the column's and its bounds compare
those sums.  Elements that move one at a time (a 3-channel image, whose pixels are 6 bytes:
none of its vectors is aligned) are all loaded into registers before the first is stored, so
that a K step waits for one load, not for one a vector element.

This module decides which loops are such gathers (`row_gather`) and which statements of a
pipelined loop its ring issues ahead (`split`, ring_split's rule with gathers among the
producers); warp specialization takes copies alone (the TMA moves tiles, not gathered rows), so
a loop led by a gather keeps the cp.async ring on sm_90a too, feeding wgmma."""
from __future__ import annotations

from .. import ir
from ..frozen import frozen
from ..ir.walk import assigned_scalars, statement_exprs, subexprs, variables
from .warpspec import ring_split


@frozen
class RowGather:
    loop: ir.Parallel
    dst: str  # the shared buffer, [rows, cols]
    src: str  # the tensor parameter
    lets: tuple  # the loop's scalar statements before the store
    indices: tuple  # the load's indices
    cond: ir.Expr | None  # where(cond, load, 0)'s condition, or None
    dtype: object
    by_column: frozenset  # the scalars of `lets` whose value depends on j
    simple: bool  # nothing but the last index reads j, and that as `a + j`


def row_gather(p, params: dict, buffers: dict) -> RowGather | None:
    """`p` as a row gather, or None when it is not one."""
    if not isinstance(p, ir.Parallel) or len(p.vars) != 2 or p.stores or p.exchange:
        return None
    i, j = p.vars
    *lets, store = p.body or (None,)
    if not isinstance(store, ir.Store) or not all(isinstance(s, (ir.LetScalar, ir.Assign)) for s in lets):
        return None
    b = buffers.get(store.name)
    if b is None or b.scope != "shared" or tuple(b.shape) != tuple(p.extents):
        return None
    if not all(isinstance(x, ir.Var) for x in store.indices) or tuple(x.name for x in store.indices) != (i, j):
        return None
    value, cond = store.value, None
    if isinstance(value, ir.Select) and isinstance(value.b, ir.Const) and value.b.value == 0:
        value, cond = value.a, value.cond
    if not isinstance(value, ir.Load) or value.name not in params or params[value.name].kind != "tensor":
        return None
    if value.dtype != b.dtype or params[value.name].dtype != b.dtype or len(value.indices) != len(params[value.name].shape):
        return None
    if (p.extents[1] * b.dtype.itemsize) % 16:
        return None  # whole 16-byte vectors a row
    names = {s.name for s in lets}
    if names != {s.name for s in lets if isinstance(s, ir.LetScalar)} or names & set(p.vars) or \
            any(x.name in names for s in lets for e in statement_exprs(s) for x in subexprs(e) if isinstance(x, ir.Load)):
        return None  # only scalars declared in the loop, none of them indexed as a buffer
    tainted = {j}
    changed = True
    while changed:  # the scalars whose value depends on j, through any statement that sets them
        changed = False
        for s in lets:
            if s.name not in tainted and any(v.name in tainted for v in variables(s.value)):
                tainted.add(s.name)
                changed = True
    *lead, last = value.indices
    if not any(v.name in tainted for v in variables(last)):
        return None  # a row's elements are never consecutive (j reads down a column)
    reads_j = any(v.name in tainted for e in (*lead, *((cond,) if cond is not None else ())) for v in variables(e))
    simple = tainted == {j} and not reads_j and _plus_j(last, j)
    return RowGather(p, store.name, value.name, tuple(lets), tuple(value.indices), cond, b.dtype,
                     frozenset(tainted - {j}), simple)


def _plus_j(e: ir.Expr, j: str) -> bool:
    """Whether `e` is `j`, `a + j` or `j + a` with `a` free of j."""
    if isinstance(e, ir.Var) and e.name == j:
        return True
    if isinstance(e, ir.BinOp) and e.op == "+":
        for x, y in ((e.a, e.b), (e.b, e.a)):
            if isinstance(y, ir.Var) and y.name == j and not any(v.name == j for v in variables(x)):
                return True
    return False


def tile_invariant(lets, loop_vars) -> set[str]:
    """The scalars of `lets` whose value reads neither loop variable (a K step's kernel position
    in an im2col gather): the same for every element, so computed once for the tile."""
    varying = set(loop_vars)
    changed = True
    while changed:
        changed = False
        for s in lets:
            if s.name not in varying and any(v.name in varying for v in variables(s.value)):
                varying.add(s.name)
                changed = True
    return {s.name for s in lets} - varying


def column_scalars(g: RowGather, once: set[str]) -> dict:
    """The scalars of `g.lets` whose value reads j but not i (im2col's kernel position and
    channel), {name: (dtype, value)}: the same in every row, so a thread whose columns stay the
    same from row to row computes them once.  A scalar is one declaration, or a declaration of
    a constant and one assignment (what `q = k * BK + j` in a loop body lowers to); any other
    is left out, and so is a scalar whose value reads a scalar of the loop that is neither such
    a scalar nor among `once` (computed before)."""
    i = g.loop.vars[0]
    not_i = tile_invariant(g.lets, (i,))
    inner = {s.name for s in g.lets}
    defs = {n: d for n, d in _definitions(g).items() if n in g.by_column and n in not_i}
    changed = True
    while changed:
        kept = {n: d for n, d in defs.items() if all(v.name in defs or v.name in once or v.name not in inner
                                                     for v in variables(d[1]))}
        changed = len(kept) != len(defs)
        defs = kept
    order = [s.name for s in g.lets if s.name in defs]  # as the loop computes them
    return {n: defs[n] for n in dict.fromkeys(order)}


def _definitions(g: RowGather) -> dict:
    """{name: (dtype, value)} of the scalars of `g.lets` set once: one declaration, or a
    declaration of a constant and one assignment (what `q = k * BK + j` lowers to)."""
    defs = {}
    for name in {s.name for s in g.lets}:
        sets = [s for s in g.lets if s.name == name]
        if len(sets) == 1 and isinstance(sets[0], ir.LetScalar):
            defs[name] = (sets[0].dtype, sets[0].value)
        elif len(sets) == 2 and isinstance(sets[0], ir.LetScalar) and isinstance(sets[0].value, ir.Const) and \
                isinstance(sets[1], ir.Assign):
            defs[name] = (sets[0].dtype, sets[1].value)
    return defs


def split_indices(g: RowGather, hoisted: dict, once: set[str]) -> list | None:
    """Each index of the gather's load as (row part, column part), the index their sum and
    either None for 0: the row part reads neither j nor a scalar of j, the column part neither
    i nor a scalar of i, only j, `hoisted` (column_scalars) and names computed before the rows
    (`once`, the loop's outside); a scalar of both is looked through to its value and split at
    its `+` and `-` (im2col's `oy * stride + ky * dilation - pad`).  With every index split, an
    element's offset is a row's offset plus a column's, each computed once.  None where an
    index does not split so."""
    i, j = g.loop.vars
    inner = {s.name for s in g.lets}
    row_vary = (inner - tile_invariant(g.lets, (i,))) | {i}
    col_vary = set(g.by_column) | {j}
    defs = _definitions(g)

    def col_only(names) -> bool:
        return all(n == j or n in hoisted or n in once or n not in inner for n in names) and i not in names

    out = [_split_sum(x, lambda names: not names & col_vary,
                      lambda names: not names & row_vary and col_only(names), defs) for x in g.indices]
    return None if any(x is False for x in out) else out


def _split_sum(e: ir.Expr, first, second, defs: dict, depth: int = 0):
    """`e` as (a part whose names `first` accepts, one whose names `second` accepts), either
    None for 0, split at its `+` and `-` (32-bit integers), looking through the scalars of
    `defs` ({name: (dtype, value)}); False where it does not split so."""
    names = {v.name for v in variables(e)}
    if first(names):
        return e, None
    if second(names):
        return None, e
    if depth > 16 or not e.dtype.is_int or e.dtype.bits != 32:
        return False
    if isinstance(e, ir.Var) and e.name in defs and defs[e.name][0] == e.dtype:
        return _split_sum(defs[e.name][1], first, second, defs, depth + 1)
    if isinstance(e, ir.BinOp) and e.op in ("+", "-"):
        a, b = _split_sum(e.a, first, second, defs, depth + 1), _split_sum(e.b, first, second, defs, depth + 1)
        if a is False or b is False:
            return False
        return tuple(_combine(e.op, x, y, e.dtype) for x, y in zip(a, b))
    return False


def _combine(op: str, a, b, dtype):
    """a op b of two parts, None standing for 0."""
    if b is None:
        return a
    if a is None:
        return b if op == "+" else ir.BinOp("-", ir.Const(0, dtype), b, dtype)
    return ir.BinOp(op, a, b, dtype)


@frozen
class RowSteps:
    """A simple row gather's lead indices each as a row's part plus a K step's part (either
    None for 0), for a producer that keeps each of its rows' parts over the K loop: `row_lets`
    the loop's scalars of the row alone (computed once a row, with the rows' parts)."""

    parts: tuple  # (row part, step part) per lead index
    row_lets: tuple


def row_steps(g: RowGather, loop_var: str) -> RowSteps | None:
    """`g`'s lead indices split into what reads the row (i and the scalars of i) and what
    reads the pipelined loop's variable `loop_var` (and the tile's scalars of it, as a K
    step's kernel position), at their `+` and `-`, where both exist: a simple gather (only the
    last index reads j) without a condition, whose last index reads neither the row nor a
    scalar of it.  None otherwise (each K step then computes each row's indices)."""
    if not g.simple or g.cond is not None:
        return None
    i, j = g.loop.vars
    once = tile_invariant(g.lets, g.loop.vars)
    lets = {s.name for s in g.lets}
    step = {loop_var}
    rows = {i}
    changed = True
    while changed:  # the scalars of the step and those of the row, through every statement that sets them
        changed = False
        for s in g.lets:
            names = {v.name for v in variables(s.value)}
            if s.name not in step and names & step:
                step.add(s.name)
                changed = True
            if s.name not in rows and names & rows:
                rows.add(s.name)
                changed = True
    if (rows & step) or any(s.name in rows and s.name in once for s in g.lets):
        return None
    *lead, last = g.indices
    if {v.name for v in variables(last)} & rows:
        return None

    parts = [_split_sum(x, lambda names: not names & step, lambda names: not names & rows, {}) for x in lead]
    if any(x is False for x in parts):
        return None
    row_lets = tuple(s for s in g.lets if s.name in rows and s.name in lets)
    return RowSteps(tuple(parts), row_lets)


def free_names(g: RowGather) -> set[str]:
    """The scalars a gather reads from outside its loop."""
    inner = {s.name for s in g.lets} | set(g.loop.vars)
    read = {v.name for s in g.loop.body for e in statement_exprs(s) for x in subexprs(e) for v in variables(x)}
    return read - inner


def leading(loop: ir.For, params: dict, buffers: dict, staged=None) -> list:
    """The leading statements of a pipelined loop a ring issues ahead: copies from a tensor
    into a shared buffer of its dtype and row gathers (`staged(name)` says whether a buffer has
    the loop's stages; by default any)."""
    out = []
    for s in loop.body:
        if isinstance(s, ir.Copy) and s.src.name in params and isinstance(s.dst, ir.BufferRef):
            dst = buffers[s.dst.name]
            if dst.scope != "shared" or params[s.src.name].dtype != dst.dtype:
                break
            name = s.dst.name
        else:
            g = row_gather(s, params, buffers)
            if g is None:
                break
            name = g.dst
        if staged is not None and not staged(name):
            break
        out.append(s)
    return out


def dst_name(producer) -> str:
    """The staged buffer a ring's producer (a copy or a row gather) fills."""
    return producer.dst.name if isinstance(producer, ir.Copy) else next(
        s for s in producer.body if isinstance(s, ir.Store)).name


def split(loop: ir.For, params: dict, buffers: dict) -> tuple[list, list] | None:
    """ring_split's ring (warpspec.py) where its leading statements may be row gathers too:
    (producers, rest), or None."""
    producers = leading(loop, params, buffers, lambda name: buffers[name].layout.stages >= loop.stages)
    if not any(isinstance(p, ir.Parallel) for p in producers):
        return ring_split(loop, params, buffers)
    if not (isinstance(loop.start, ir.Const) and loop.start.value == 0 and isinstance(loop.step, ir.Const)
            and loop.step.value == 1):
        return None
    inner = set().union(*(assigned_scalars(p.body) for p in producers if isinstance(p, ir.Parallel)))
    assigned = assigned_scalars(loop.body) - inner
    read = set()
    for p in producers:
        if isinstance(p, ir.Copy):
            read |= {v.name for o in p.src.offsets for v in variables(o)}
        else:
            read |= free_names(row_gather(p, params, buffers))
    if read & assigned:
        return None
    rest = list(loop.body[len(producers):])
    while rest and isinstance(rest[0], ir.Sync):
        rest.pop(0)
    if rest and isinstance(rest[-1], ir.Sync):
        rest.pop()
    return producers, rest


# ---- the other way: a shared tile's rows scattered to rows of a tensor -----------------------

@frozen
class RowScatter:
    loop: ir.Parallel
    src: str  # the shared buffer, [rows, cols]
    dst: str  # the tensor parameter
    lets: tuple  # the loop's scalar statements before the store (none reads j)
    indices: tuple  # the store's indices; the last is `a + j`


def row_scatter(p, params: dict, buffers: dict) -> RowScatter | None:
    """`p` as a row scatter, or None: `y[n, oh, ow, c0 + j] = ys[i, j]` after scalars that do not
    read j, ys a shared tile of y's dtype with the loop's shape (an implicit GEMM's output tile,
    whose rows are pixels).  Its code (codegen/row_gathers.py `scatter_rows`) moves 16-byte vectors
    where a row's elements are consecutive in memory and inside the tensor."""
    if not isinstance(p, ir.Parallel) or len(p.vars) != 2 or p.stores or p.exchange:
        return None
    i, j = p.vars
    *lets, store = p.body or (None,)
    if not isinstance(store, ir.Store) or not all(isinstance(s, (ir.LetScalar, ir.Assign)) for s in lets):
        return None
    if store.name not in params or params[store.name].kind != "tensor" or len(store.indices) != len(params[store.name].shape):
        return None
    value = store.value
    if not isinstance(value, ir.Load) or value.name not in buffers:
        return None
    b = buffers[value.name]
    if b.scope != "shared" or tuple(b.shape) != tuple(p.extents) or b.dtype != params[store.name].dtype or \
            value.dtype != b.dtype or (p.extents[1] * b.dtype.itemsize) % 16:
        return None
    if not all(isinstance(x, ir.Var) for x in value.indices) or tuple(x.name for x in value.indices) != (i, j):
        return None
    names = {s.name for s in lets}
    if names != {s.name for s in lets if isinstance(s, ir.LetScalar)} or names & set(p.vars) or \
            any(x.name in names for s in lets for e in statement_exprs(s) for x in subexprs(e) if isinstance(x, ir.Load)):
        return None
    if any(v.name == j for s in lets for v in variables(s.value)):
        return None
    *lead, last = store.indices
    if any(v.name == j for e in lead for v in variables(e)) or not _plus_j(last, j):
        return None
    return RowScatter(p, value.name, store.name, tuple(lets), tuple(store.indices))
