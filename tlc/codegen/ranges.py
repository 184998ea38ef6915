"""Integer ranges of index expressions, so that bounds checks are emitted only where the
shapes do not prove them unnecessary."""
from __future__ import annotations

from .. import ir


def value_range(e: ir.Expr, known: dict) -> tuple[int, int] | None:
    """[lo, hi] of an integer expression given the ranges of some variables, or None."""
    if isinstance(e, ir.Const) and e.dtype.is_int:
        return int(e.value), int(e.value)
    if isinstance(e, ir.Var):
        return known.get(e.name)
    if isinstance(e, ir.Cast) and e.dtype.is_int and e.x.dtype.is_int:
        return value_range(e.x, known)
    if isinstance(e, ir.BinOp) and e.op in ("+", "-", "*", "//", "%", "min", "max"):
        a, b = value_range(e.a, known), value_range(e.b, known)
        if a is None or b is None:
            return None
        if e.op == "+":
            return a[0] + b[0], a[1] + b[1]
        if e.op == "-":
            return a[0] - b[1], a[1] - b[0]
        if e.op == "*":
            products = [x * y for x in a for y in b]
            return min(products), max(products)
        if e.op == "//" and b[0] > 0:
            return a[0] // b[1] if a[0] >= 0 else a[0] // b[0], a[1] // b[0] if a[1] >= 0 else a[1] // b[1]
        if e.op == "%" and b[0] > 0 and b[0] == b[1]:
            return (0, b[0] - 1) if not (a[0] >= 0 and a[1] < b[0]) else a
        if e.op == "min":
            return min(a[0], b[0]), min(a[1], b[1])
        if e.op == "max":
            return max(a[0], b[0]), max(a[1], b[1])
    return None


def provably_within(indices, dims, known: dict) -> bool:
    """Whether every index lies in [0, dim) for integer dims (a symbolic dim proves nothing)."""
    for i, d in zip(indices, dims):
        if not isinstance(d, int):
            return False
        r = value_range(i, known)
        if r is None or r[0] < 0 or r[1] >= d:
            return False
    return True
