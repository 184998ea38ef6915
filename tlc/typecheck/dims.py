"""Tensor parameter dimensions that are expressions of shape symbols and constants, as
TileLang kernels declare them: `B: i8[N, K // 2]` (packed int4), `S: f32[M, cdiv(K, 128)]`, a
convolution's output size `(H + 2 * P - KH) // S + 1`.

Such a dimension binds nothing: each symbol in it must be bound by a plain dimension of some
tensor parameter (or be a constant), so that a launch can compute the expression and check
the array's size against it (tlc/runtime/args.py, tlc/interp/args.py).  An expression is seen
before the parameters after it, so it is kept while the parameters are read (`defer`) and
checked once they all are (`check_deferred`).
"""
from __future__ import annotations

from ..dtypes import lookup
from ..parser import nodes as n
from . import consteval
from .env import SHAPE

# a size each symbol takes while the expression is tried: any value would do, an odd prime
# keeps `K // 2` from looking exact
_PROBE = 1009
OPERATORS = "+, -, *, //, %, cdiv, min and max"


def free_names(d) -> list:
    """The names an expression reads, in order (a call's function name is not one)."""
    if isinstance(d, n.Name):
        return [d]
    if isinstance(d, n.BinOp):
        return free_names(d.left) + free_names(d.right)
    if isinstance(d, n.UnaryOp):
        return free_names(d.operand)
    if isinstance(d, n.Call):
        return [x for a in d.args for x in free_names(a)]
    return []


def defer(checker, d, param: str) -> bool:
    """Whether `d` may be an expression of shape symbols; if so it is kept for `check_deferred`
    (in a kernel only: a tile op's shapes are planned from plain symbols)."""
    if checker.kind != "kernel":
        return False
    if not [x for x in free_names(d) if x.id not in checker.consts]:
        return False
    checker.__dict__.setdefault("dim_expressions", []).append((d, param))
    return True


def check_deferred(checker) -> None:
    """Each kept expression: its symbols bound by plain dimensions, its operators integer ones."""
    for d, param in checker.__dict__.pop("dim_expressions", []):
        env = dict(checker.consts)
        ok = True
        for x in free_names(d):
            if x.id in env:
                continue
            sym = checker.scope.lookup(x.id)
            if sym is None and lookup(x.id) is not None:
                checker.error("E201", f"'{x.id}' in the dimension {_text(d)} of '{param}' is a dtype", x.span,
                              "a dimension is built from literals, constants and shape symbols")
                ok = False
            elif sym is None:
                checker.error("E200", f"'{x.id}' in the dimension {_text(d)} of '{param}' is not bound by any dimension",
                              x.span, f"bind it with a plain dimension of a tensor parameter (X: f32[{x.id}]), or make it a "
                              "const parameter")
                ok = False
            elif sym.kind != SHAPE:
                checker.error("E201", f"'{x.id}' in the dimension {_text(d)} of '{param}' is the {sym.kind} '{x.id}'",
                              x.span, "a dimension is built from literals, constants and shape symbols")
                ok = False
            else:
                env[x.id] = _PROBE
        if not ok:
            continue
        try:
            v = consteval.evaluate(d, env)
        except consteval.NotConstant as nc:
            v, bad = None, nc.node
        else:
            bad = d
        if _by_zero(bad, env):  # a constant divisor of 0, as `C // G` with G=0
            checker.error("E202", f"the dimension {_text(d)} of '{param}' divides by zero ({_text(bad)} with "
                          f"{_text(bad.right)} = 0)", bad.span)
        elif not isinstance(v, int) or isinstance(v, bool):
            hint = "'/' divides as floats; write //" if "/" in _ops(d) else None
            checker.error("E202", f"the dimension {_text(d)} of '{param}' is not an integer expression of shape symbols "
                          f"and constants ({OPERATORS})", bad.span, hint)


def _by_zero(e, env) -> bool:
    """Whether `e` is a `//` or `%` whose divisor evaluates to 0 in `env`."""
    if not (isinstance(e, n.BinOp) and e.op in ("//", "%")):
        return False
    try:
        return consteval.evaluate(e.right, env) == 0
    except consteval.NotConstant:
        return False


def _ops(d) -> set:
    if isinstance(d, n.BinOp):
        return {d.op} | _ops(d.left) | _ops(d.right)
    if isinstance(d, n.UnaryOp):
        return _ops(d.operand)
    if isinstance(d, n.Call):
        return {op for a in d.args for op in _ops(a)}
    return set()


def _text(d) -> str:
    from .types import format_dim
    return format_dim(d)
