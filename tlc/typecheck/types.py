"""The types the checker assigns to expressions.

A scalar has a dtype (and is `weak` when it is an untyped literal, which takes the type of the
other operand, and `const` when its value is known at compile time).  A tensor has a dtype, a
shape of dimension expressions (AST nodes: an int literal, a shape symbol or an expression
over constants) and a memory scope.  Dimensions compare structurally: spans and types are left
out of AST equality.
"""
from __future__ import annotations

from typing import Union

from ..dtypes import DType
from ..frozen import frozen
from ..parser import nodes as n

Dim = n.Expr

GLOBAL, SHARED, FRAGMENT, LOCAL, VALUE = "global", "shared", "fragment", "local", "value"


@frozen
class ScalarType:
    dtype: DType
    weak: bool = False
    const: bool = False

    def __str__(self) -> str:
        return self.dtype.name


@frozen
class TensorType:
    """`scope` is global (a parameter or a region of one), shared, fragment, local, or value
    (a whole-tensor value inside a tile op)."""

    dtype: DType
    shape: tuple[Dim, ...]
    scope: str

    def __str__(self) -> str:
        return f"{self.dtype.name}[{', '.join(format_dim(d) for d in self.shape)}]"

    @property
    def rank(self) -> int:
        return len(self.shape)


@frozen
class DTypeValue:
    """The type of an expression that names a dtype: `f16`, `T`."""

    dtype: DType

    def __str__(self) -> str:
        return "dtype"


@frozen
class StrType:
    def __str__(self) -> str:
        return "str"


@frozen
class FunctionRef:
    """A device function, kernel or tile op named in an expression; `qualname` keys
    `CheckedProgram.functions`."""

    qualname: str
    kind: str

    def __str__(self) -> str:
        return self.kind


@frozen
class BuiltinRef:
    name: str

    def __str__(self) -> str:
        return "builtin"


@frozen
class LoopRange:
    """The iterable of a `for`: range, unroll, pipelined or parallel."""

    kind: str

    def __str__(self) -> str:
        return self.kind


@frozen
class VoidType:
    def __str__(self) -> str:
        return "nothing"


Type = Union[ScalarType, TensorType, DTypeValue, StrType, FunctionRef, BuiltinRef, LoopRange, VoidType]


_PREC = {"|": 1, "^": 2, "&": 3, "<<": 4, ">>": 4, "+": 5, "-": 5, "*": 6, "/": 6, "//": 6, "%": 6, "**": 8}


def format_dim(d: Dim, parent: int = 0) -> str:
    """A dimension as the user would write it: `BK + 8`, `M`, `128`."""
    if isinstance(d, n.Constant):
        return repr(d.value)
    if isinstance(d, n.Name):
        return d.id
    if isinstance(d, n.BinOp) and d.op in _PREC:
        p = _PREC[d.op]
        text = f"{format_dim(d.left, p)} {d.op} {format_dim(d.right, p + 1)}"
        return f"({text})" if p < parent else text
    if isinstance(d, n.UnaryOp):
        return f"{d.op}{format_dim(d.operand, 7)}"
    if isinstance(d, n.Call) and isinstance(d.func, n.Name):
        return f"{d.func.id}({', '.join(format_dim(a) for a in d.args)})"
    return "?"


def format_shape(shape: tuple[Dim, ...]) -> str:
    return "[" + ", ".join(format_dim(d) for d in shape) + "]"


def describe(t) -> str:
    """A type for messages: `f32`, `shared f16[128, 32]`, `a dtype`."""
    if isinstance(t, TensorType):
        return f"{t.scope} tensor {t}" if t.scope != VALUE else f"tensor {t}"
    if isinstance(t, DTypeValue):
        return f"the dtype {t.dtype.name}"
    if isinstance(t, ScalarType):
        return t.dtype.name
    if isinstance(t, FunctionRef):
        return f"a {t.kind}"
    if isinstance(t, BuiltinRef):
        return f"the builtin '{t.name}'"
    return str(t)
