"""The AST: one small frozen dataclass per construct of the language.

Owns the shape of a parsed program.  Every node carries a `span`, left out of equality and
hashing so that two programs that differ only in layout compare equal.  Expression nodes also
carry `ty`, empty after parsing and filled by the type checker, which returns a new tree
(nodes are never mutated).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Union

from ..diagnostics import Span


def _span() -> Any:
    return field(default=None, compare=False, repr=False)


def _ty() -> Any:
    return field(default=None, compare=False, repr=False)


# ---- expressions -------------------------------------------------------------------------

@dataclass(frozen=True)
class Name:
    id: str
    span: Span = _span()
    ty: Any = _ty()


@dataclass(frozen=True)
class Constant:
    """A literal: int, float, bool or str."""

    value: Any
    span: Span = _span()
    ty: Any = _ty()


@dataclass(frozen=True)
class BinOp:
    op: str  # + - * / // % ** @ << >> & | ^
    left: "Expr"
    right: "Expr"
    span: Span = _span()
    ty: Any = _ty()


@dataclass(frozen=True)
class UnaryOp:
    op: str  # - + ~ not
    operand: "Expr"
    span: Span = _span()
    ty: Any = _ty()


@dataclass(frozen=True)
class BoolOp:
    op: str  # and | or
    values: tuple["Expr", ...]
    span: Span = _span()
    ty: Any = _ty()


@dataclass(frozen=True)
class Compare:
    """`a < b <= c`: `ops[i]` compares `operands[i]` with `operands[i + 1]`."""

    ops: tuple[str, ...]
    operands: tuple["Expr", ...]
    span: Span = _span()
    ty: Any = _ty()


@dataclass(frozen=True)
class IfExp:
    test: "Expr"
    body: "Expr"
    orelse: "Expr"
    span: Span = _span()
    ty: Any = _ty()


@dataclass(frozen=True)
class Keyword:
    name: str
    value: "Expr"
    span: Span = _span()


@dataclass(frozen=True)
class Call:
    func: "Expr"
    args: tuple["Expr", ...]
    keywords: tuple[Keyword, ...]
    span: Span = _span()
    ty: Any = _ty()


@dataclass(frozen=True)
class Slice:
    lower: "Expr | None"
    upper: "Expr | None"
    step: "Expr | None"
    span: Span = _span()
    ty: Any = _ty()


@dataclass(frozen=True)
class Subscript:
    value: "Expr"
    indices: tuple["Expr", ...]  # Slice nodes where the source has a colon
    span: Span = _span()
    ty: Any = _ty()


@dataclass(frozen=True)
class Attribute:
    value: "Expr"
    attr: str
    span: Span = _span()
    ty: Any = _ty()


@dataclass(frozen=True)
class TupleExpr:
    elts: tuple["Expr", ...]
    span: Span = _span()
    ty: Any = _ty()


@dataclass(frozen=True)
class ListExpr:
    elts: tuple["Expr", ...]
    span: Span = _span()
    ty: Any = _ty()


Expr = Union[Name, Constant, BinOp, UnaryOp, BoolOp, Compare, IfExp, Call, Slice, Subscript,
             Attribute, TupleExpr, ListExpr]


# ---- types as written ----------------------------------------------------------------------

@dataclass(frozen=True)
class TypeExpr:
    """A type annotation as written: `f32`, `T`, `const`, `dtype`, `f16[M, K]`, `T[BM, BK + 8]`.

    `name` is the element dtype's name (or `const` / `dtype`); `dims` is None for a scalar.
    """

    name: str
    dims: tuple[Expr, ...] | None
    span: Span = _span()


# ---- statements ----------------------------------------------------------------------------

@dataclass(frozen=True)
class ExprStmt:
    expr: Expr
    span: Span = _span()


@dataclass(frozen=True)
class Assign:
    target: Expr
    value: Expr
    annotation: TypeExpr | None = None
    span: Span = _span()


@dataclass(frozen=True)
class AugAssign:
    target: Expr
    op: str  # the binary operator: + - * ...
    value: Expr
    span: Span = _span()


@dataclass(frozen=True)
class Pass:
    span: Span = _span()


@dataclass(frozen=True)
class Break:
    span: Span = _span()


@dataclass(frozen=True)
class Continue:
    span: Span = _span()


@dataclass(frozen=True)
class Return:
    value: Expr | None
    span: Span = _span()


@dataclass(frozen=True)
class If:
    test: Expr
    body: tuple["Stmt", ...]
    orelse: tuple["Stmt", ...]  # an elif is an If alone in orelse
    span: Span = _span()


@dataclass(frozen=True)
class For:
    targets: tuple[Name, ...]
    iter: Expr
    body: tuple["Stmt", ...]
    span: Span = _span()


@dataclass(frozen=True)
class With:
    context: Expr
    targets: tuple[Name, ...]
    body: tuple["Stmt", ...]
    span: Span = _span()


Stmt = Union[ExprStmt, Assign, AugAssign, Pass, Break, Continue, Return, If, For, With]


# ---- module level --------------------------------------------------------------------------

@dataclass(frozen=True)
class Decorator:
    name: str
    args: tuple[Expr, ...] | None  # None: written without parentheses
    keywords: tuple[Keyword, ...] = ()
    span: Span = _span()


@dataclass(frozen=True)
class Param:
    name: str
    annotation: TypeExpr
    default: Expr | None
    span: Span = _span()


@dataclass(frozen=True)
class FunctionDef:
    name: str
    params: tuple[Param, ...]
    returns: TypeExpr | None
    body: tuple[Stmt, ...]
    decorators: tuple[Decorator, ...] = ()
    span: Span = _span()
    name_span: Span = _span()

    def has_decorator(self, name: str) -> bool:
        return any(d.name == name for d in self.decorators)


@dataclass(frozen=True)
class ImportName:
    name: str
    alias: str | None
    span: Span = _span()

    @property
    def local(self) -> str:
        return self.alias or self.name


@dataclass(frozen=True)
class Import:
    """`from MODULE import a, b as c`; `level` counts leading dots (0 for `std.`)."""

    module: str
    level: int
    names: tuple[ImportName, ...]
    span: Span = _span()


@dataclass(frozen=True)
class ConstDecl:
    """A module constant: `BLOCK: const = 128`, `DT: dtype = f16` or `BLOCK = 128`."""

    name: str
    annotation: TypeExpr | None
    value: Expr
    span: Span = _span()


@dataclass(frozen=True)
class Module:
    path: str
    imports: tuple[Import, ...]
    consts: tuple[ConstDecl, ...]
    functions: tuple[FunctionDef, ...]
    span: Span = _span()

    def function(self, name: str) -> FunctionDef | None:
        return next((f for f in self.functions if f.name == name), None)
