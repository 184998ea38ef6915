"""Whether a device_assert's condition is decided by its constants alone.

A condition such as std.gemm's `G % BK == 0 and BK % 32 == 0` reads only constants: after
specialization it is an expression of literals.  Where it holds, the assert checks nothing at
run time, yet a kernel holding an assert has its failure record read after every launch (a
device synchronization and a copy: tens of microseconds, which a 60-microsecond decode GEMM
measured as its own).  lower.py leaves such asserts out; one that fails stays, to fail at the
launch with its message.  Integers and bools only, in Python's semantics where the value stays
inside its dtype (anything else is not decided here)."""
from __future__ import annotations

from .. import ir


def truth(e: ir.Expr) -> bool | None:
    """True or False where `e` is decided by its literals, else None."""
    v = _value(e)
    return v if isinstance(v, bool) else None


def _fits(v: int, dt) -> bool:
    if dt.kind == "bool":
        return True
    lo, hi = (0, (1 << dt.bits) - 1) if dt.kind == "uint" else (-(1 << (dt.bits - 1)), (1 << (dt.bits - 1)) - 1)
    return lo <= v <= hi


def _value(e: ir.Expr):
    if e.dtype.kind not in ("int", "uint", "bool"):
        return None
    if isinstance(e, ir.Const):
        return e.value
    if isinstance(e, ir.Cast):
        x = _value(e.x)
        if x is None or e.dtype.kind == "bool":
            return None
        return int(x) if _fits(int(x), e.dtype) else None
    if isinstance(e, ir.UnaryOp):
        x = _value(e.x)
        if x is None:
            return None
        if e.op == "not":
            return not x
        if e.op == "-" and _fits(-x, e.dtype):
            return -x
        return None
    if isinstance(e, ir.BinOp):
        a, b = _value(e.a), _value(e.b)
        if a is None or b is None:
            return None
        op = e.op
        if op == "and":
            return bool(a) and bool(b)
        if op == "or":
            return bool(a) or bool(b)
        if op in ir.COMPARE_OPS:
            return {"==": a == b, "!=": a != b, "<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b}[op]
        if op in ("//", "%") and b == 0:
            return None
        r = {"+": lambda: a + b, "-": lambda: a - b, "*": lambda: a * b, "//": lambda: a // b,
             "%": lambda: a % b}.get(op)
        if r is None:
            return None
        v = r()
        return v if _fits(v, e.dtype) else None
    return None
