"""Walking the tile IR: every statement of a body, the expressions a statement holds, every
subexpression of an expression.  The passes and the code generators read the IR through
these, so that a new node kind is taught to every walker in one place."""
from __future__ import annotations

from .nodes import Expr, Load, Region, Var

_BODIES = ("body", "then", "orelse", "stores")  # stores: a Parallel's folded copies, after its body
_EXPR_FIELDS = ("value", "cond", "start", "stop", "step")
_EXPR_LISTS = ("indices", "args")


def statements(stmts):
    """Every statement in `stmts`, nested ones after the statement that holds them."""
    for s in stmts:
        yield s
        for f in _BODIES:
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
    for f in ("a", "b", "x", "cond"):
        v = getattr(e, f, None)
        if isinstance(v, Expr):
            yield from subexprs(v)
    for f in _EXPR_LISTS:
        for v in getattr(e, f, ()) or ():
            if isinstance(v, Expr):
                yield from subexprs(v)


def loads(e):
    """The element loads inside expression `e`."""
    return (x for x in subexprs(e) if isinstance(x, Load))


def variables(e):
    """The names expression `e` reads as scalars."""
    return (x for x in subexprs(e) if isinstance(x, Var))


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
