"""The launcher's grid extents as C: host code over the launcher's own parameters, in 64 bits,
each integer operation a checked call of `tl::HostGrid` (templates/tl/host_grid.cuh) named
`tl_g`, so that the C launcher computes what the Python runtime computes (`runtime/grid.py`)
and a division by zero or an overflow is an error code, never undefined behaviour or a
truncated grid.
"""
from __future__ import annotations

from .. import ir
from ..schedule.sm_limits import MAX_GRID, MAX_THREADS_PER_BLOCK, MAX_TILES
from .cexpr import CodegenError
from .cnames import c_name

_CHECKED = {"+": "add", "-": "sub", "*": "mul", "//": "floordiv", "%": "mod", "**": "pow", "<<": "shl", ">>": "shr"}
_PLAIN = {"&", "|", "^", "==", "!=", "<", "<=", ">", ">=", "and", "or"}
_I64 = (-2**63, 2**63 - 1)


def launcher_grid(grid, threads: int) -> dict:
    """What the launcher template needs: the three extents as C, and the limits they are
    checked against (`max_tiles`: the most tiles a persistent kernel counts); a block of
    `threads` that no GPU launches is an error here."""
    if not 1 <= threads <= MAX_THREADS_PER_BLOCK:
        raise CodegenError(f"the kernel needs {threads} threads per block; the GPU allows 1 to {MAX_THREADS_PER_BLOCK}")
    # each extent through tl_g.extent, which keeps whether it went bad or is 0 (an extent of 0
    # beside one that divides by zero launches nothing, as runtime/grid.py's grid does)
    extents = [f"tl_g.extent({extent(g)})" for g in grid] + ["1LL"] * (3 - len(grid))
    return {"grid": extents, "max_grid": [f"{m}LL" for m in MAX_GRID], "max_tiles": f"{MAX_TILES}LL"}


def launcher_loops(kernel: ir.Kernel) -> list:
    """Per loop a launch checks (ir/stepped_loops.py, runtime/loop_bounds.py: a stepped loop whose
    bounds the launch knows), its start, stop and step as the launcher's C over a tl::HostGrid `tl_l`, which
    `tl_l.loop_counter_fits` tests as the Python runtime's binder does."""
    from ..ir.stepped_loops import counted_loops

    return [", ".join(expr(b, "tl_l") for b in (loop.start, loop.stop, loop.step)) for loop in counted_loops(kernel)]


def extent(e: ir.Expr) -> str:
    """One grid extent: an integer expression as it is, a float one only when it is whole."""
    return expr(e) if e.dtype.is_int or e.dtype.is_bool else f"tl_g.whole({expr(e)})"


def expr(e: ir.Expr, g: str = "tl_g") -> str:
    """`e` in 64-bit checked host arithmetic, each operation a call of the tl::HostGrid `g`."""
    if isinstance(e, ir.Const):
        return _const(e)
    if isinstance(e, ir.Var):
        kind = "long long" if e.dtype.is_int else "double" if e.dtype.is_float else "bool"
        return f"static_cast<{kind}>({c_name(e.name)})"
    if isinstance(e, ir.Cast):
        x = expr(e.x, g)
        if e.dtype.is_bool:
            return f"({x} != 0)"
        if e.dtype.is_float:
            return f"static_cast<double>({x})"
        return f"{g}.trunc({x})" if e.x.dtype.is_float else x  # widths do not wrap, as in Python
    if isinstance(e, ir.BinOp):
        return _binary(e.op, e.a, e.b, e.dtype.is_float, g)
    if isinstance(e, ir.Call) and e.fn in ("min", "max") and len(e.args) == 2:
        return _binary(e.fn, *e.args, e.dtype.is_float, g)
    if isinstance(e, ir.Select):
        return f"({expr(e.cond, g)} ? {expr(e.a, g)} : {expr(e.b, g)})"
    if isinstance(e, ir.UnaryOp):
        x = expr(e.x, g)
        if e.op == "-":
            return f"(-{x})" if e.dtype.is_float else f"{g}.neg({x})"
        return f"({'!' if e.op == 'not' else e.op}{x})"
    raise CodegenError(f"a grid extent cannot use {type(e).__name__}", e.span)


def _binary(op: str, a: ir.Expr, b: ir.Expr, is_float: bool, g: str) -> str:
    x, y = expr(a, g), expr(b, g)
    if op in ("min", "max"):
        return f"{g}.{op}({x}, {y})"
    if op == "/":
        return f"{g}.div({x}, {y})"
    if op in _PLAIN:
        return f"({x} {'&&' if op == 'and' else '||' if op == 'or' else op} {y})"
    if is_float and op in ("+", "-", "*"):
        return f"({x} {op} {y})"
    if op in _CHECKED and not is_float:
        return f"{g}.{_CHECKED[op]}({x}, {y})"
    raise CodegenError(f"a grid extent uses '{op}' on {'floats' if is_float else 'integers'}, "
                       f"which the launcher does not compute", a.span)


def _const(e: ir.Const) -> str:
    v = e.value
    if e.dtype.is_float:
        v = float(v)
        if v != v or v in (float("inf"), float("-inf")):
            raise CodegenError(f"a grid extent holds the constant {v}", e.span)
        return repr(v)
    v = int(v)
    if not _I64[0] <= v <= _I64[1]:
        raise CodegenError(f"a grid extent holds the constant {v}, which 64 bits do not hold", e.span)
    return "(-9223372036854775807LL - 1)" if v == _I64[0] else f"{v}LL"
