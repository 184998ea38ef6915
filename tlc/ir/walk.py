"""Walking the tile IR: every statement of a body, the expressions a statement holds, every
subexpression of an expression.  The passes and the code generators read the IR through
these, so that a new node kind is taught to every walker in one place."""
from __future__ import annotations

import dataclasses
from dataclasses import replace

from .nodes import BinOp, Const, Expr, Load, Region, Var

_BODIES = ("body", "then", "orelse", "stores")  # stores: a Parallel's folded copies, after its body
_EXPR_FIELDS = ("value", "cond", "start", "stop", "step")
_EXPR_LISTS = ("indices", "args")
_OPERANDS = ("a", "b", "x", "cond")  # an expression's own operands
_NAMED = ("name", "buffer", "src", "dst", "a", "b", "c")  # a statement's buffers, by name or as a copy side


def _present(names: tuple[str, ...], memo: dict):
    """`present(cls)`: those of `names` that a `cls` may hold (a dataclass's fields and class
    attributes; all of them for any other class), remembered per class.  The walkers below run
    for every node of every pass, and a getattr with a default for a name the node does not
    have (a Var's operands) costs an AttributeError raised and caught."""
    def present(cls) -> tuple[str, ...]:
        got = memo.get(cls)
        if got is None:
            if dataclasses.is_dataclass(cls):
                have = {f.name for f in dataclasses.fields(cls)}
                got = tuple(n for n in names if n in have or hasattr(cls, n))
            else:
                got = names
            memo[cls] = got
        return got
    return present


_bodies_of = _present(_BODIES, {})
_operands_of = _present(_OPERANDS, {})
_lists_of = _present(_EXPR_LISTS, {})


def statements(stmts):
    """Every statement in `stmts`, nested ones after the statement that holds them."""
    for s in stmts:
        yield s
        for f in _bodies_of(s.__class__):
            yield from statements(getattr(s, f, ()))


def statement_exprs(s):
    """The expressions statement `s` holds itself (not those of nested statements), region
    offsets of copies included."""
    for f in _EXPR_FIELDS:
        v = getattr(s, f, None)
        if isinstance(v, Expr):
            yield v
    for f in _EXPR_LISTS:
        for v in getattr(s, f, ()) or ():
            if isinstance(v, Expr):
                yield v
    for f in ("src", "dst"):
        side = getattr(s, f, None)
        if isinstance(side, Region):
            yield from side.offsets


def subexprs(e):
    """`e` and every expression inside it."""
    yield e
    cls = e.__class__
    for f in _operands_of(cls):
        v = getattr(e, f, None)
        if isinstance(v, Expr):
            yield from subexprs(v)
    for f in _lists_of(cls):
        for v in getattr(e, f, ()) or ():
            if isinstance(v, Expr):
                yield from subexprs(v)


def divides_at_run_time(e) -> bool:
    """Whether `e` divides by a value that is not a constant (`H // HK`, `S % BLOCKS`): a sequence
    of some 20 instructions where it is computed, not a shift or a multiply."""
    return any(isinstance(x, BinOp) and x.op in ("//", "%") and not isinstance(x.b, Const) for x in subexprs(e))


def loads(e):
    """The element loads inside expression `e`."""
    return (x for x in subexprs(e) if isinstance(x, Load))


def variables(e):
    """The names expression `e` reads as scalars."""
    return (x for x in subexprs(e) if isinstance(x, Var))


def assigned_scalars(stmts) -> set[str]:
    """The scalars that `stmts` (nested bodies included) assign or bind."""
    from .nodes import Assign, LetScalar

    return {s.name for s in statements(stmts) if isinstance(s, (Assign, LetScalar))}


def written_names(stmts) -> set[str]:
    """The tensors and buffers that `stmts` store to, copy into or update atomically."""
    from .nodes import Atomic, Copy, Store

    out: set[str] = set()
    for s in statements(stmts):
        if isinstance(s, (Store, Atomic)):
            out.add(s.name)
        elif isinstance(s, Copy):
            out.add(s.dst.name)
    return out


def named_buffers(s) -> set[str]:
    """The tensors and buffers statement `s` itself names whole: what it stores to, fills,
    copies, reduces or multiplies (not those its expressions load elements of)."""
    out = set()
    for f in _NAMED:
        v = getattr(s, f, None)
        out.add(v if isinstance(v, str) else getattr(v, "name", None))
    out.discard(None)
    return out


def mapped(e: Expr, fn) -> Expr:
    """`e` rebuilt bottom-up with `fn` applied to every subexpression (its operands first)."""
    fields = {}
    for f in _OPERANDS:
        v = getattr(e, f, None)
        if isinstance(v, Expr):
            fields[f] = mapped(v, fn)
    for f in _EXPR_LISTS:
        v = getattr(e, f, None)
        if isinstance(v, tuple):
            fields[f] = tuple(mapped(a, fn) for a in v)
    return fn(replace(e, **fields) if fields else e)


def rewritten(stmts, fn) -> tuple | None:
    """`stmts` with `fn` applied bottom-up to each statement (its nested bodies rewritten first):
    `fn(s)` returns the statement to put in its place or None to keep it.  Only the statements on
    the way to a rewritten one are rebuilt (the rest keep their identity, which the passes'
    plans may hold); None where nothing was rewritten."""
    out, changed = [], False
    for s in stmts:
        fields = {}
        for f in _bodies_of(s.__class__):
            body = getattr(s, f, None)
            if isinstance(body, tuple) and (new := rewritten(body, fn)) is not None:
                fields[f] = new
        t = replace(s, **fields) if fields else s
        u = fn(t)
        out.append(t if u is None else u)
        changed = changed or bool(fields) or u is not None
    return tuple(out) if changed else None


def stmts_mapped(stmts, fn, after=lambda s: s) -> tuple:
    """`stmts` (nested bodies included) with `fn` applied to every expression a statement holds
    (the ones `statement_exprs` yields), then `after` to each rebuilt statement."""
    out = []
    for s in stmts:
        for f in _BODIES:
            if isinstance(getattr(s, f, None), tuple):
                s = replace(s, **{f: stmts_mapped(getattr(s, f), fn, after)})
        fields = {}
        for f in _EXPR_FIELDS:
            v = getattr(s, f, None)
            if isinstance(v, Expr):
                fields[f] = fn(v)
        for f in _EXPR_LISTS:
            if isinstance(getattr(s, f, None), tuple):
                fields[f] = tuple(fn(v) for v in getattr(s, f))
        for f in ("src", "dst"):
            side = getattr(s, f, None)
            if isinstance(side, Region):
                fields[f] = replace(side, offsets=tuple(fn(o) for o in side.offsets))
        if fields:
            s = replace(s, **fields)
        out.append(after(s))
    return tuple(out)


def kernel_rewritten(kernel, fn, note):
    """`kernel` with its body `rewritten` by `fn` and, where a statement changed, the text
    `note()` (called then, after the walk) among its notes; `kernel` itself where none did."""
    body = rewritten(kernel.body, fn)
    if body is None:
        return kernel
    return replace(kernel, body=body, notes=kernel.notes + (note(),))
