"""Compile-time evaluation of constant expressions: buffer shapes, `unroll` counts,
`stages`, `threads`, constant defaults and decorator arguments.

An expression is constant when it is built from literals, constants (module constants and
`const` parameters) and the pure helpers below.  `evaluate` returns its value or raises
`NotConstant` naming the first part that is not.
"""
from __future__ import annotations

import math

from ..dtypes import DType
from ..parser import nodes as n


class NotConstant(Exception):
    def __init__(self, node):
        super().__init__(node)
        self.node = node


def _cdiv(a, b):
    return -(-a // b)


_FUNCS = {"cdiv": _cdiv, "min": min, "max": max, "abs": abs}
_BIN = {
    "+": lambda a, b: a + b, "-": lambda a, b: a - b, "*": lambda a, b: a * b,
    "//": lambda a, b: a // b, "%": lambda a, b: a % b, "/": lambda a, b: a / b,
    "**": lambda a, b: a ** b, "<<": lambda a, b: a << b, ">>": lambda a, b: a >> b,
    "&": lambda a, b: a & b, "|": lambda a, b: a | b, "^": lambda a, b: a ^ b,
}
_CMP = {"<": lambda a, b: a < b, ">": lambda a, b: a > b, "==": lambda a, b: a == b,
        "!=": lambda a, b: a != b, "<=": lambda a, b: a <= b, ">=": lambda a, b: a >= b}


def evaluate(e, env: dict):
    """The value of `e` given constant values `env` (name -> int/float/bool/DType)."""
    if isinstance(e, n.Constant) and not isinstance(e.value, str):
        return e.value
    if isinstance(e, n.Name):
        if e.id in env:
            return env[e.id]
        if e.id in ("True", "False"):
            return e.id == "True"
        raise NotConstant(e)
    if isinstance(e, n.UnaryOp):
        v = evaluate(e.operand, env)
        if isinstance(v, DType):
            raise NotConstant(e)
        try:
            return {"-": lambda x: -x, "+": lambda x: +x, "~": lambda x: ~x, "not": lambda x: not x}[e.op](v)
        except TypeError:  # ~ of a float: not a constant of any type; the checker says why
            raise NotConstant(e) from None
    if isinstance(e, n.BinOp) and e.op in _BIN:
        a, b = evaluate(e.left, env), evaluate(e.right, env)
        if isinstance(a, DType) or isinstance(b, DType):
            raise NotConstant(e)
        try:
            return _BIN[e.op](a, b)
        except (ZeroDivisionError, OverflowError, ValueError, TypeError):
            raise NotConstant(e) from None
    if isinstance(e, n.Compare):
        vals = [evaluate(o, env) for o in e.operands]
        return all(_CMP[op](a, b) for op, a, b in zip(e.ops, vals, vals[1:]))
    if isinstance(e, n.BoolOp):
        vals = [evaluate(v, env) for v in e.values]
        return all(vals) if e.op == "and" else any(vals)
    if isinstance(e, n.IfExp):
        return evaluate(e.body, env) if evaluate(e.test, env) else evaluate(e.orelse, env)
    if isinstance(e, n.Call) and isinstance(e.func, n.Name) and e.func.id in _FUNCS and not e.keywords:
        args = [evaluate(a, env) for a in e.args]
        try:
            return _FUNCS[e.func.id](*args)
        except (ZeroDivisionError, TypeError, ValueError):
            raise NotConstant(e) from None
    if isinstance(e, n.ListExpr):
        return [evaluate(x, env) for x in e.elts]
    raise NotConstant(e)


def is_whole(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) or isinstance(v, float) and v.is_integer() and math.isfinite(v)
