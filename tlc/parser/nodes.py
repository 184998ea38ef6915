"""The AST: one small frozen dataclass per construct of the language.

Owns the shape of a parsed program.  Every node carries a `span`, left out of equality and
hashing so that two programs that differ only in layout compare equal.  Expression nodes also
carry `ty`, empty after parsing and filled by the type checker, which returns a new tree
(nodes are never mutated).

The parser and the type checker build tens of thousands of nodes per file, so the nodes have
slots (no `__dict__`) and two fast paths build the same objects without the cost of a frozen
dataclass's generated `__init__`: `maker(cls)`, a constructor taking every field positionally,
and `replace`, `dataclasses.replace` for plain frozen dataclasses.
"""
from __future__ import annotations

import dataclasses
from dataclasses import field
from typing import Any, Callable, Union

from ..diagnostics import Span
from ..frozen import frozen


def _span() -> Any:
    return field(default=None, compare=False, repr=False)


def _ty() -> Any:
    return field(default=None, compare=False, repr=False)


# ---- expressions -------------------------------------------------------------------------

@frozen(slots=True)
class Name:
    id: str
    span: Span = _span()
    ty: Any = _ty()


@frozen(slots=True)
class Constant:
    """A literal: int, float, bool or str."""

    value: Any
    span: Span = _span()
    ty: Any = _ty()


@frozen(slots=True)
class BinOp:
    op: str  # + - * / // % ** @ << >> & | ^
    left: "Expr"
    right: "Expr"
    span: Span = _span()
    ty: Any = _ty()


@frozen(slots=True)
class UnaryOp:
    op: str  # - + ~ not
    operand: "Expr"
    span: Span = _span()
    ty: Any = _ty()


@frozen(slots=True)
class BoolOp:
    op: str  # and | or
    values: tuple["Expr", ...]
    span: Span = _span()
    ty: Any = _ty()


@frozen(slots=True)
class Compare:
    """`a < b <= c`: `ops[i]` compares `operands[i]` with `operands[i + 1]`."""

    ops: tuple[str, ...]
    operands: tuple["Expr", ...]
    span: Span = _span()
    ty: Any = _ty()


@frozen(slots=True)
class IfExp:
    test: "Expr"
    body: "Expr"
    orelse: "Expr"
    span: Span = _span()
    ty: Any = _ty()


@frozen(slots=True)
class Keyword:
    name: str
    value: "Expr"
    span: Span = _span()


@frozen(slots=True)
class Call:
    func: "Expr"
    args: tuple["Expr", ...]
    keywords: tuple[Keyword, ...]
    span: Span = _span()
    ty: Any = _ty()


@frozen(slots=True)
class Slice:
    lower: "Expr | None"
    upper: "Expr | None"
    step: "Expr | None"
    span: Span = _span()
    ty: Any = _ty()


@frozen(slots=True)
class Subscript:
    value: "Expr"
    indices: tuple["Expr", ...]  # Slice nodes where the source has a colon
    span: Span = _span()
    ty: Any = _ty()


@frozen(slots=True)
class Attribute:
    value: "Expr"
    attr: str
    span: Span = _span()
    ty: Any = _ty()


@frozen(slots=True)
class TupleExpr:
    elts: tuple["Expr", ...]
    span: Span = _span()
    ty: Any = _ty()


@frozen(slots=True)
class ListExpr:
    elts: tuple["Expr", ...]
    span: Span = _span()
    ty: Any = _ty()


@frozen(slots=True)
class DictExpr:
    """`{k: v, ...}`: only the argument of annotate_layout, which tlc accepts and ignores."""

    keys: tuple["Expr", ...]
    values: tuple["Expr", ...]
    span: Span = _span()
    ty: Any = _ty()


Expr = Union[Name, Constant, BinOp, UnaryOp, BoolOp, Compare, IfExp, Call, Slice, Subscript,
             Attribute, TupleExpr, ListExpr, DictExpr]


# ---- types as written ----------------------------------------------------------------------

@frozen(slots=True)
class TypeExpr:
    """A type annotation as written: `f32`, `T`, `const`, `dtype`, `f16[M, K]`, `T[BM, BK + 8]`.

    `name` is the element dtype's name (or `const` / `dtype`); `dims` is None for a scalar.
    """

    name: str
    dims: tuple[Expr, ...] | None
    span: Span = _span()


# ---- statements ----------------------------------------------------------------------------

@frozen(slots=True)
class ExprStmt:
    expr: Expr
    span: Span = _span()


@frozen(slots=True)
class Assign:
    target: Expr
    value: Expr
    annotation: TypeExpr | None = None
    span: Span = _span()


@frozen(slots=True)
class AugAssign:
    target: Expr
    op: str  # the binary operator: + - * ...
    value: Expr
    span: Span = _span()


@frozen(slots=True)
class Pass:
    span: Span = _span()


@frozen(slots=True)
class Break:
    span: Span = _span()


@frozen(slots=True)
class Continue:
    span: Span = _span()


@frozen(slots=True)
class Return:
    value: Expr | None
    span: Span = _span()


@frozen(slots=True)
class If:
    test: Expr
    body: tuple["Stmt", ...]
    orelse: tuple["Stmt", ...]  # an elif is an If alone in orelse
    span: Span = _span()


@frozen(slots=True)
class For:
    targets: tuple[Name, ...]
    iter: Expr
    body: tuple["Stmt", ...]
    span: Span = _span()


@frozen(slots=True)
class While:
    test: Expr
    body: tuple["Stmt", ...]
    span: Span = _span()


@frozen(slots=True)
class With:
    context: Expr
    targets: tuple[Name, ...]
    body: tuple["Stmt", ...]
    span: Span = _span()


Stmt = Union[ExprStmt, Assign, AugAssign, Pass, Break, Continue, Return, If, For, While, With]


# ---- module level --------------------------------------------------------------------------

@frozen(slots=True)
class Decorator:
    name: str
    args: tuple[Expr, ...] | None  # None: written without parentheses
    keywords: tuple[Keyword, ...] = ()
    span: Span = _span()


@frozen(slots=True)
class Param:
    name: str
    annotation: TypeExpr
    default: Expr | None
    span: Span = _span()


@frozen(slots=True)
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


@frozen(slots=True)
class ImportName:
    name: str
    alias: str | None
    span: Span = _span()

    @property
    def local(self) -> str:
        return self.alias or self.name


@frozen(slots=True)
class Import:
    """`from MODULE import a, b as c`; `level` counts leading dots (0 for `std.`)."""

    module: str
    level: int
    names: tuple[ImportName, ...]
    span: Span = _span()


@frozen(slots=True)
class ConstDecl:
    """A module constant: `BLOCK: const = 128`, `DT: dtype = f16` or `BLOCK = 128`."""

    name: str
    annotation: TypeExpr | None
    value: Expr
    span: Span = _span()


@frozen(slots=True)
class Module:
    path: str
    imports: tuple[Import, ...]
    consts: tuple[ConstDecl, ...]
    functions: tuple[FunctionDef, ...]
    span: Span = _span()

    def function(self, name: str) -> FunctionDef | None:
        return next((f for f in self.functions if f.name == name), None)


# ---- fast construction -----------------------------------------------------------------------

_UNSET = object()


def _plain(cls) -> bool:
    """A dataclass that `__init__` fills field by field: no `__post_init__`, no init-only or
    non-init fields."""
    if not dataclasses.is_dataclass(cls) or hasattr(cls, "__post_init__"):
        return False
    fs = dataclasses.fields(cls)
    return len(fs) == len(cls.__dataclass_fields__) and all(f.init for f in fs)


def _compile(cls, name: str, params: str, values: list[str]) -> Callable[..., Any]:
    """A function `name(params)` that returns a new `cls` whose fields are `values` (Python
    expressions), set without going through the frozen class's `__setattr__`."""
    names = [f.name for f in dataclasses.fields(cls)]
    ns: dict = {"new": object.__new__, "cls": cls, "setattr": object.__setattr__, "UNSET": _UNSET}
    if "__slots__" in cls.__dict__:  # set through the slot descriptors: the fastest way in
        lines = [f"    set_{f}(o, {v})" for f, v in zip(names, values)]
        ns.update({f"set_{f}": cls.__dict__[f].__set__ for f in names})
    else:
        lines = [f"    setattr(o, {f!r}, {v})" for f, v in zip(names, values)]
    src = f"def {name}({params}):\n    o = new(cls)\n" + "\n".join(lines) + "\n    return o\n"
    exec(src, ns)  # noqa: S102 - the technique dataclasses itself uses for __init__
    return ns[name]


def maker(cls) -> Callable[..., Any]:
    """A constructor of `cls` taking all its fields positionally, in declaration order
    (`maker(Name)(id, span, ty)`): the object `cls(...)` would build, at about half the cost."""
    if not _plain(cls):
        raise TypeError(f"{cls.__name__} is not a plain dataclass")
    names = [f.name for f in dataclasses.fields(cls)]
    return _compile(cls, f"make_{cls.__name__}", ", ".join(names), names)


_REPLACERS: dict[type, Callable[..., Any] | None] = {}


def _replacer(cls) -> Callable[..., Any] | None:
    if not _plain(cls):
        return None
    names = [f.name for f in dataclasses.fields(cls)]
    params = "obj, *, " + ", ".join(f"{f}=UNSET" for f in names)
    return _compile(cls, f"replace_{cls.__name__}", params,
                    [f"obj.{f} if {f} is UNSET else {f}" for f in names])


def replace(obj, /, **changes):
    """`dataclasses.replace(obj, **changes)`, about twice as fast for plain frozen dataclasses
    (the nodes here and the checker's types); anything else goes to `dataclasses.replace`."""
    cls = obj.__class__
    try:
        fast = _REPLACERS[cls]
    except KeyError:
        fast = _REPLACERS[cls] = _replacer(cls)
    if fast is not None:
        try:
            return fast(obj, **changes)
        except TypeError:  # a field that does not exist: dataclasses.replace says so
            pass
    return dataclasses.replace(obj, **changes)
