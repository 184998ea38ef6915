"""A cheap element-wise update of a fragment recomputed where it is read, so that the fragment
keeps the values it was copied with (narrow_fragments.py then holds it in 16 bits).

bench/plain's layer_norm centres its f32 row in place (`row[0, j] = where(j < N, row[0, j] -
mean, 0.0)`) and reads the centred values twice after; held as f32, row, weights and biases
take 64 registers a thread and the kernel fits 2 blocks an SM (0.62 of copy bandwidth).
Recomputing the centring in its two readers (one FADD and a select each) leaves the row
holding its f16 values, 16 registers: std.nn's layer_norm does the same by hand.  The
recomputed value is the same expression of the same operands, so every result is unchanged.

`recomputed` applies where all of this holds, else gives None:
- the store is in a `parallel` loop at the kernel's top level (or at the top of the body of a
  loop at the top level that first copies the fragment whole), indexes the fragment by the
  loop's variables over its whole shape, and its value is built of `+ - *`, `min`, `max`,
  comparisons, `where` and casts of the fragment's element there, scalars declared outside
  the loop, constants and fragment elements at constant indices;
- nothing after it writes what its value reads;
- until the fragment is stored whole again, it is read only by `parallel` loops of the same
  extents at their own index (which then recompute the value), never by a copy, a reduction
  or code outside a loop.
"""
from __future__ import annotations

from dataclasses import replace

from .. import ir
from ..ir.walk import loads, statement_exprs, statements, subexprs
from ..dtypes import I32
from ..ir.walk import mapped
from .narrow_fragments import own_bodies, touched

_CHEAP_OPS = frozenset({"+", "-", "*", "min", "max", "==", "!=", "<", "<=", ">", ">=", "and", "or"})


def recomputed(kernel: ir.Kernel, name: str, store: ir.Store) -> ir.Kernel | None:
    """`kernel` without `store` (into fragment `name`), its value recomputed by the loops that
    read it; None where that is not the same computation."""
    frag = next(b for b in kernel.buffers if b.name == name)
    body = _recomputed_in(list(kernel.body), frag, store)
    if body is not None:
        return replace(kernel, body=tuple(body))
    # The body of a loop at the top (pipeline_rows.py's walk over rows) is a body of its own
    # when each iteration first copies the fragment whole: no value crosses iterations.
    for k, loop in enumerate(kernel.body):
        if isinstance(loop, ir.For) and any(t is store for t in statements(loop.body)):
            if not any(b is loop.body for b in own_bodies(kernel.body, name)):
                return None
            inner = _recomputed_in(list(loop.body), frag, store)
            if inner is None:
                return None
            return replace(kernel, body=kernel.body[:k] + (replace(loop, body=tuple(inner)),) + kernel.body[k + 1:])
    return None


def _recomputed_in(body: list, frag: ir.Buffer, store: ir.Store) -> list | None:
    """`body` (a statement list holding the loop that holds `store`) with `store`'s value
    recomputed by its readers, or None."""
    name = frag.name
    p = next((k for k, s in enumerate(body) if isinstance(s, ir.Parallel) and any(t is store for t in s.body)), None)
    if p is None:
        return None
    loop = body[p]
    if loop.extents != frag.shape or store.indices != _own_index(loop):
        return None
    inner = {s.name for s in statements(loop.body) if isinstance(s, (ir.LetScalar, ir.Assign))}
    if not _cheap(store.value, name, loop, inner):
        return None
    reads = {x.name for x in subexprs(store.value) if isinstance(x, (ir.Load, ir.Var))} - {name} - set(loop.vars)
    k = next(i for i, t in enumerate(loop.body) if t is store)
    after = list(loop.body[k + 1:]) + body[p + 1:]
    if any(_written(s) & reads for s in statements(after)):
        return None
    value = store.value
    rest, stale = [], True
    for t in loop.body[k + 1:]:
        t, stale = _reader(t, name, value, loop, loop, stale)
        if t is None:
            return None
        rest.append(t)
    new_loop = replace(loop, body=tuple(loop.body[:k]) + tuple(rest))
    out = body[:p] + ([new_loop] if new_loop.body else [])
    for s in body[p + 1:]:
        if stale and name in touched(s):
            if not isinstance(s, ir.Parallel) or s.extents != loop.extents:
                return None
            parts = []
            for t in s.body:
                t, stale = _reader(t, name, value, loop, s, stale)
                if t is None:
                    return None
                parts.append(t)
            s = replace(s, body=tuple(parts))
        out.append(s)
    return out


def _own_index(loop: ir.Parallel) -> tuple:
    return tuple(ir.Var(v, I32) for v in loop.vars)


def _cheap(e: ir.Expr, name: str, loop: ir.Parallel, inner: set) -> bool:
    """Whether `e` is cheap to compute again and reads only what the readers can read."""
    for x in subexprs(e):
        if isinstance(x, ir.Load):
            if x.name == name:
                if x.indices != _own_index(loop):
                    return False
            elif not all(isinstance(i, ir.Const) for i in x.indices):
                return False
        elif isinstance(x, ir.Var):
            if x.name in inner:
                return False
        elif isinstance(x, ir.BinOp):
            if x.op not in _CHEAP_OPS:
                return False
        elif isinstance(x, ir.UnaryOp):
            if x.op not in ("-", "not"):
                return False
        elif not isinstance(x, (ir.Const, ir.Select, ir.Cast)):
            return False
    return True


def _reader(t: ir.Stmt, name: str, value: ir.Expr, home: ir.Parallel, loop: ir.Parallel, stale: bool):
    """(statement `t` of `loop` reading the recomputed value where it read `name`, whether
    `name` still holds the old values after it), or (None, _) where it cannot."""
    if not stale or name not in touched(t):
        return t, stale
    if not isinstance(t, (ir.Store, ir.LetScalar, ir.Assign)):
        return None, stale
    own = _own_index(loop)
    if any(x.name == name and x.indices != own for e in statement_exprs(t) for x in loads(e)):
        return None, stale
    rename = dict(zip(home.vars, loop.vars))
    here = mapped(value, lambda x: replace(x, name=rename[x.name]) if isinstance(x, ir.Var) and x.name in rename else x)
    new = mapped(t.value, lambda x: here if isinstance(x, ir.Load) and x.name == name else x)
    if isinstance(t, ir.Store) and t.name == name:
        return (replace(t, value=new), False) if t.indices == own else (None, stale)
    return replace(t, value=new), stale


def _written(s: ir.Stmt) -> set:
    if isinstance(s, (ir.Store, ir.Atomic, ir.LetScalar, ir.Assign)):
        return {s.name}
    if isinstance(s, ir.Copy):
        return {s.dst.name}
    if isinstance(s, ir.Fill):
        return {s.buffer}
    if isinstance(s, (ir.Reduce, ir.Scan)):
        return {s.dst}
    if isinstance(s, ir.Gemm):
        return {s.c}
    return set()
