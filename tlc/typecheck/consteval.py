"""Compile-time evaluation of constant expressions: buffer shapes, `unroll` counts,
`stages`, `threads`, constant defaults and decorator arguments.

An expression is constant when it is built from literals, constants (module constants and
`const` parameters) and the pure helpers below.  `evaluate` returns its value or raises
`NotConstant` naming the first part that is not, or `TooLarge` (E150) naming the first part
whose value cannot be a constant of the generated code.

Generated code holds a constant in a 64-bit integer (i64 or u64), so a constant's value lies in
[-2**63, 2**64).  Parts of an expression may reach `WORKING_BITS` (`(1 << 64) - 1` is the largest
u64); an operation whose result would be larger is refused before it is computed, which also
bounds the time and memory of every step (`9 ** 9 ** 9` would take hours and gigabytes).
"""
from __future__ import annotations

import math

from ..dtypes import DType, power_or_shift_fits
from ..parser import nodes as n


class NotConstant(Exception):
    def __init__(self, node):
        super().__init__(node)
        self.node = node


class TooLarge(NotConstant):
    """A value that no 64-bit constant holds; `node` is the part that makes it."""


class DividesByZero(NotConstant):
    """A division or remainder by 0 (`32 // 0`): no value; `node` is the operation."""


def not_constant_detail(nc: NotConstant) -> str:
    """Why `nc`'s expression is no constant, for E031's message."""
    from .types import format_dim

    bad = nc.node
    if isinstance(nc, DividesByZero):
        return f"{format_dim(bad)} divides by zero"
    return f"'{bad.id}' is not a constant" if isinstance(bad, n.Name) else "it is computed at run time"


WORKING_BITS = 128
SMALLEST, LARGEST = -2**63, 2**64 - 1
RANGE_HINT = "a compile-time integer lies between -2**63 and 2**64 - 1, the range of i64 and u64"


def _cdiv(a, b):
    return -(-a // b)


_FUNCS = {"cdiv": _cdiv, "ceildiv": _cdiv, "min": min, "max": max, "abs": abs}  # ceildiv: TileLang's name
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
    v = _value(e, env)
    for x in (v if isinstance(v, list) else (v,)):
        if isinstance(x, int) and not SMALLEST <= x <= LARGEST:
            raise TooLarge(e)
    return v


def report_too_large(bag, err: TooLarge) -> None:
    """E150 for `err` into `bag` (a `DiagnosticBag`)."""
    bag.error("E150", "constant too large: this value does not fit in 64 bits", err.node.span, RANGE_HINT)


def option(bag, e, env: dict, kind: type) -> tuple:
    """A statement's constant option (a reduction's dim, a scan's reverse): (value, None) when
    `e` is a constant of `kind` (int, which excludes bool, or bool); else (None, why not), why
    being "'d' is not a constant", "found 1.5" or None after E150 into `bag`."""
    try:
        v = evaluate(e, env)
    except TooLarge as err:
        report_too_large(bag, err)
        return None, None
    except NotConstant as nc:
        return None, not_constant_detail(nc)
    if isinstance(v, kind) and (kind is bool or not isinstance(v, bool)):
        return v, None
    return None, f"found the dtype {v}" if isinstance(v, DType) else f"found {v!r}"


def _value(e, env: dict):
    if isinstance(e, n.Constant) and not isinstance(e.value, str):
        return e.value
    if isinstance(e, n.Name):
        if e.id in env:
            return env[e.id]
        if e.id in ("True", "False"):
            return e.id == "True"
        raise NotConstant(e)
    if isinstance(e, n.UnaryOp):
        v = _value(e.operand, env)
        if isinstance(v, DType):
            raise NotConstant(e)
        try:
            return {"-": lambda x: -x, "+": lambda x: +x, "~": lambda x: ~x, "not": lambda x: not x}[e.op](v)
        except TypeError:  # ~ of a float: not a constant of any type; the checker says why
            raise NotConstant(e) from None
    if isinstance(e, n.BinOp) and e.op in _BIN:
        a, b = _value(e.left, env), _value(e.right, env)
        if isinstance(a, (DType, list)) or isinstance(b, (DType, list)):
            raise NotConstant(e)
        if e.op in ("**", "<<") and not power_or_shift_fits(a, b, e.op, WORKING_BITS):
            raise TooLarge(e)
        try:
            v = _BIN[e.op](a, b)
        except OverflowError:  # a float beyond f64
            raise TooLarge(e) from None
        except ZeroDivisionError:
            raise DividesByZero(e) from None
        except (ValueError, TypeError):
            raise NotConstant(e) from None
        if isinstance(v, complex):  # a negative number to a fractional power
            raise NotConstant(e)
        if isinstance(v, int) and v.bit_length() > WORKING_BITS or \
                isinstance(v, float) and math.isinf(v) and math.isfinite(a) and math.isfinite(b):
            raise TooLarge(e)
        return v
    if isinstance(e, n.Compare):
        vals = [_value(o, env) for o in e.operands]
        try:
            return all(_CMP[op](a, b) for op, a, b in zip(e.ops, vals, vals[1:]))
        except TypeError:  # an order of a dtype and a number (or a list): the checker says why
            raise NotConstant(e) from None
    if isinstance(e, n.BoolOp):
        vals = [_value(v, env) for v in e.values]
        return all(vals) if e.op == "and" else any(vals)
    if isinstance(e, n.IfExp):
        return _value(e.body, env) if _value(e.test, env) else _value(e.orelse, env)
    if isinstance(e, n.Call) and isinstance(e.func, n.Name) and e.func.id in _FUNCS and not e.keywords:
        args = [_value(a, env) for a in e.args]
        try:
            return _FUNCS[e.func.id](*args)
        except ZeroDivisionError:
            raise DividesByZero(e) from None
        except (TypeError, ValueError):
            raise NotConstant(e) from None
    if isinstance(e, n.ListExpr):
        return [_value(x, env) for x in e.elts]
    raise NotConstant(e)


def is_whole(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) or isinstance(v, float) and v.is_integer() and math.isfinite(v)
