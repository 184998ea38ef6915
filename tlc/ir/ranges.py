"""Integer ranges of IR expressions given ranges of the variables they read (the code generator's
bounds checks, codegen/ranges.py; which stepped loops can pass i32, ir/stepped_loops.py)."""
from __future__ import annotations

from . import nodes as ir


def value_range(e: ir.Expr, known: dict) -> tuple[int, int] | None:
    """[lo, hi] of an integer expression given the ranges of some variables, or None."""
    if isinstance(e, ir.Const) and e.dtype.is_int:
        return int(e.value), int(e.value)
    if isinstance(e, ir.Var):
        return known.get(e.name)
    if isinstance(e, ir.Cast) and e.dtype.is_int and e.x.dtype.is_int:
        r = value_range(e.x, known)
        return r if r is not None and _fits(r, e.dtype) else None
    if isinstance(e, ir.Select) and e.dtype.is_int:
        a, b = value_range(e.a, known), value_range(e.b, known)
        return None if a is None or b is None else (min(a[0], b[0]), max(a[1], b[1]))
    if isinstance(e, ir.BinOp) and e.op == "&" and e.dtype.is_int:  # a digit: x & 255 is in [0, 255]
        a, b = value_range(e.a, known), value_range(e.b, known)
        highs = [r[1] for r in (a, b) if r is not None and r[0] >= 0]
        return (0, min(highs)) if highs else None
    if isinstance(e, ir.BinOp) and e.op == ">>" and e.dtype.is_int:  # by a constant count within the width
        a, b = value_range(e.a, known), value_range(e.b, known)
        if a is None or b is None or b[0] != b[1] or not 0 <= b[0] < e.dtype.bits:
            return None
        return a[0] >> b[0], a[1] >> b[0]
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
        if e.op == "%" and b[0] > 0:  # Python's remainder: in [0, b - 1] for any a
            return (0, b[1] - 1) if not (a[0] >= 0 and a[1] < b[0]) else a
        if e.op == "min":
            return min(a[0], b[0]), min(a[1], b[1])
        if e.op == "max":
            return max(a[0], b[0]), max(a[1], b[1])
    return None


def in_dtype_range(e: ir.Expr, known: dict) -> tuple[int, int] | None:
    """value_range of integer expression `e`, where it and every integer subexpression's range
    lie inside their dtypes (no intermediate value wraps), else None."""
    from .walk import subexprs

    for x in subexprs(e):
        if x.dtype.is_int:
            r = value_range(x, known)
            if r is None or not _fits(r, x.dtype):
                return None
    return value_range(e, known) if e.dtype.is_int else None


def _fits(r: tuple[int, int], dtype) -> bool:
    """Whether every value of the range r is a value of the integer dtype (a cast keeps it)."""
    lo, hi = (0, 2 ** dtype.bits - 1) if dtype.kind == "uint" else (-(2 ** (dtype.bits - 1)), 2 ** (dtype.bits - 1) - 1)
    return lo <= r[0] and r[1] <= hi
