"""Stepped loops: `range(a, b, s)` loops whose step is not a constant 1 or -1, the ones whose i32
counter a bound that fits i32 can step past i32, unless the sizes prove the stop far enough from
it (`stays_in_i32`).  runtime/loop_bounds.py checks those whose bounds a launch knows; the cpu
target counts the others in 64 bits (codegen/cpp/emit.py).
"""
from __future__ import annotations

from ..frozen import frozen
from .nodes import Const, Expr, For, Load, UnaryOp
from .ranges import in_dtype_range
from .walk import statements, subexprs, variables


@frozen
class CountedLoop:
    """A loop a launch checks: its variable, bounds and place ("file:line", or "")."""

    var: str
    start: Expr
    stop: Expr
    step: Expr
    where: str


def constant(e: Expr) -> int | None:
    """The value of a constant bound (`4`, or `-4` as the parser writes it), else None."""
    if isinstance(e, UnaryOp) and e.op == "-":
        inner = constant(e.x)
        return None if inner is None else -inner
    return e.value if isinstance(e, Const) and isinstance(e.value, int) else None


I32_MAX = 2**31 - 1


def size_ranges(kernel) -> dict:
    """Each shape symbol's range: a size, from 0 to what its dtype holds (i64 for a flat view's
    element count, `Kernel.wide_symbols`)."""
    return {n: (0, 2**63 - 1 if n in kernel.wide_symbols else I32_MAX) for n in kernel.shape_symbols()}


def stays_in_i32(s: For, known: dict) -> bool:
    """Whether loop `s`'s i32 counter cannot pass i32 at any value of the variables in `known`
    (their ranges): a constant step k > 0 whose stop is at most 2**31 - k (std.reduce's axis-0
    rows, two a step up to `(M // 512) * 2`), or the mirror going down."""
    step = constant(s.step)
    if step is None or step == 0:
        return False
    stop = in_dtype_range(s.stop, known)
    if stop is None:
        return False
    return stop[1] <= I32_MAX + 1 - step if step > 0 else stop[0] >= -I32_MAX - 2 - step


def counted_loops(kernel) -> tuple:
    """The loops of `kernel` whose step is not a constant 1 or -1, whose bounds read only its
    shape symbols, scalar parameters and constants, and whose counter its sizes do not prove
    stays within i32 (`stays_in_i32`)."""
    host = {p.name for p in kernel.params if p.kind == "scalar"} | set(kernel.shape_symbols())
    sizes = size_ranges(kernel)
    out = []
    for s in statements(kernel.body):
        if not isinstance(s, For) or constant(s.step) in (1, -1):
            continue
        bounds = (s.start, s.stop, s.step)
        if all(constant(b) is not None for b in bounds):
            continue  # the type checker's (E157)
        if any(isinstance(x, Load) for b in bounds for x in subexprs(b)):
            continue
        if all(v.name in host for b in bounds for v in variables(b)) and not stays_in_i32(s, sizes):
            where = f"{s.span.file}:{s.span.line}" if s.span is not None else ""
            out.append(CountedLoop(s.var, s.start, s.stop, s.step, where))
    return tuple(out)
