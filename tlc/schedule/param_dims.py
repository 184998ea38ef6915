"""A tensor parameter's dimension in the IR: a size, a shape symbol's name, or, for an
expression of symbols and constants (`K // 2`, `cdiv(K, 128)`; tlc/typecheck/dims.py), an
`ir.DimExpr` whose expression the generated code reads and a launch checks arrays against."""
from __future__ import annotations

from .. import ir
from ..dtypes import I32
from ..ir.nodes import DimExpr
from ..parser import nodes as n
from ..typecheck.consteval import NotConstant, evaluate
from ..typecheck.types import format_dim


def param_dim(d, consts: dict, symbols) -> int | str | DimExpr:
    if isinstance(d, n.Name) and d.id in symbols:
        return d.id
    try:
        return int(evaluate(d, consts))
    except NotConstant:
        return DimExpr(format_dim(d), _expr(d, consts, symbols))


def _expr(d, consts, symbols) -> ir.Expr:
    """`d` as i32 arithmetic: sizes are non-negative and fit an i32, as the symbols do."""
    if isinstance(d, n.Name) and d.id in symbols:
        return ir.Var(d.id, I32)
    try:
        return ir.Const(int(evaluate(d, consts)), I32)
    except NotConstant:
        pass
    if isinstance(d, n.BinOp) and d.op in ("+", "-", "*", "//", "%"):
        return ir.BinOp(d.op, _expr(d.left, consts, symbols), _expr(d.right, consts, symbols), I32)
    if isinstance(d, n.UnaryOp) and d.op in ("-", "+"):
        x = _expr(d.operand, consts, symbols)
        return x if d.op == "+" else ir.UnaryOp("-", x, I32)
    if isinstance(d, n.Call) and isinstance(d.func, n.Name) and len(d.args) == 2:
        a, b = (_expr(x, consts, symbols) for x in d.args)
        if d.func.id in ("min", "max"):
            return ir.BinOp(d.func.id, a, b, I32)
        if d.func.id in ("cdiv", "ceildiv"):  # -((-a) // b), the constant evaluator's ceiling
            return ir.UnaryOp("-", ir.BinOp("//", ir.UnaryOp("-", a, I32), b, I32), I32)
    raise NotConstant(d)  # the checker refused it (E202)
