"""A tile op's body seen as an expression graph over whole tensors.

Owns what the typed AST of a `@tile_op` means as data flow: named intermediates resolved to the
expressions they name, the *heavy* operations (`@`, reductions, `softmax`) that cannot be
computed one element at a time, and everything between them, which is element-wise (arithmetic,
math, device functions, casts, `where`, `.T`) and broadcasts as NumPy does.  Shapes are tuples
of dims: an int, or the name of a shape symbol.  Heavy nodes are the typed AST nodes themselves:
AST equality leaves spans out, so the same expression written twice is one node.
"""
from __future__ import annotations

from dataclasses import replace

from ...frozen import frozen
from ...parser import nodes as n
from ...typecheck import CheckedFunction
from ...typecheck.types import BuiltinRef, TensorType

Dim = "int | str"
REDUCE_KINDS = ("sum", "mean", "max", "min")


class TileOpError(Exception):
    """A tile-op construct the scheduler cannot lower; carries a span for a diagnostic."""

    def __init__(self, message: str, span, hint: str | None = None):
        super().__init__(message)
        self.span, self.hint = span, hint


@frozen
class Heavy:
    """A heavy operation: `kind` is matmul, reduce or softmax; `node` the typed AST node;
    `reduce` the reduction's kind (sum, mean, max, min); `axis` and `keepdims` as written
    (axis normalized to 0.. rank-1)."""

    kind: str
    node: object
    reduce: str = ""
    axis: int = -1
    keepdims: bool = False


class Graph:
    """The tile op `fn`: its intermediates, its result, and questions about its expressions."""

    def __init__(self, fn: CheckedFunction, sources: dict):
        self.fn, self.sources = fn, sources
        self.symbols = set(fn.shape_symbols)
        self.names: dict[str, object] = {}  # intermediate name -> the expression it names
        self.root = None
        for s in (_split_full_reductions(x) for x in fn.body):
            if isinstance(s, n.Assign):
                self.names[s.target.id] = s.value
            elif isinstance(s, n.Return):
                self.root = s.value
        self.out_dtype = fn.returns.dtype
        self.out_shape = self.dims(fn.returns.shape)
        self.params = {p.name: p for p in fn.params}

    def check_ranks(self) -> None:
        """Tensors of one or two dimensions: the fusion rules' kernels are 2-D (attention, which
        attention.py recognises first, takes stacks of matrices)."""
        for p in self.fn.tensor_params:
            if len(p.type.shape) > 2:
                raise TileOpError(f"tile op tensors have one or two dimensions; '{p.name}' has {len(p.type.shape)}",
                                  p.span, "reshape it to a matrix before the call")

    # ---- shapes ------------------------------------------------------------------------------
    def dim(self, d) -> Dim:
        if isinstance(d, n.Name) and d.id in self.symbols:
            return d.id
        from ...typecheck.consteval import evaluate

        return int(evaluate(d, self.fn.constants))

    def dims(self, shape) -> tuple:
        return tuple(self.dim(d) for d in shape)

    def shape(self, e) -> tuple:
        return self.dims(e.ty.shape) if isinstance(e.ty, TensorType) else ()

    def dtype(self, e):
        return e.ty.dtype

    # ---- structure ---------------------------------------------------------------------------
    def resolve(self, e):
        """The expression an intermediate's name stands for (through chains of names)."""
        while isinstance(e, n.Name) and e.id in self.names:
            e = self.names[e.id]
        return e

    def tensor_param(self, e) -> str | None:
        e = self.resolve(e)
        if isinstance(e, n.Name) and e.id in self.params and self.params[e.id].role == "tensor":
            return e.id
        return None

    def heavy(self, e) -> Heavy | None:
        e = self.resolve(e)
        if isinstance(e, n.BinOp) and e.op == "@":
            return Heavy("matmul", e)
        name = builtin_call(e)
        if name is not None:
            if name in ("sum", "mean", "softmax") or (name in ("max", "min") and len(e.args) == 1):
                rank = len(e.args[0].ty.shape)
                kw = {k.name: k.value for k in e.keywords}
                # without axis=: a softmax's last axis, or a vector's only one (a matrix's reduction
                # over every axis was split into two with axis= by _split_full_reductions)
                axis = int(self._const(kw["axis"])) % rank if "axis" in kw else rank - 1
                keep = bool(self._const(kw["keepdims"])) if "keepdims" in kw else False
                if name == "softmax":
                    return Heavy("softmax", e, "", axis)
                return Heavy("reduce", e, name, axis, keep)
        return None

    def _const(self, e):
        from ...typecheck.consteval import evaluate

        return evaluate(e, self.fn.constants)

    def operands(self, h: Heavy) -> tuple:
        if h.kind == "matmul":
            return (h.node.left, h.node.right)
        return (h.node.args[0],)

    def frontier(self, e) -> list[Heavy]:
        """The heavy nodes `e` reads through element-wise operations only, each once, in order
        of first appearance; `e` itself when it is heavy."""
        found: dict = {}

        def walk(x):
            x = self.resolve(x)
            h = self.heavy(x)
            if h is not None:
                found.setdefault(h.node, h)
                return
            for c in children(x):
                walk(c)

        walk(e)
        return list(found.values())

    def leaves(self, e) -> list[str]:
        """The tensor parameters `e` reads through element-wise operations only."""
        found: dict = {}

        def walk(x):
            x = self.resolve(x)
            if self.heavy(x) is not None:
                return
            name = self.tensor_param(x)
            if name is not None:
                found.setdefault(name)
            for c in children(x):
                walk(c)

        walk(e)
        return list(found)

    def transposed_param(self, e) -> tuple[str, bool] | None:
        """(tensor parameter, transposed) when `e` is a parameter or its `.T`."""
        e = self.resolve(e)
        if isinstance(e, n.Attribute) and e.attr in ("T", "mT"):
            name = self.tensor_param(e.value)
            return (name, True) if name else None
        name = self.tensor_param(e)
        return (name, False) if name else None

    # ---- words for messages ------------------------------------------------------------------
    def text(self, e) -> str:
        """The source text of `e` (one line), for the plan and diagnostics."""
        span = getattr(e, "span", None)
        src = self.sources.get(span.file) if span is not None else None
        if src is None:
            return type(e).__name__
        lines = src.splitlines()[span.line - 1:span.end_line]
        first, col = lines[0], span.col - 1
        if len(lines) == 1:
            text = first[col:span.end_col - 1]
        else:
            text = " ".join([first[col:]] + [x.strip() for x in lines[1:-1]] + [lines[-1][:span.end_col - 1].strip()])
        start = col
        while text.count(")") > text.count("(") and first[:start].rstrip().endswith("("):
            start = len(first[:start].rstrip()) - 1  # a parenthesized left operand: its span has no '('
            text = first[start:col] + text
            col = start
        return text


def children(e) -> tuple:
    """The sub-expressions an element-wise node computes from."""
    if isinstance(e, n.BinOp):
        return (e.left, e.right)
    if isinstance(e, n.UnaryOp):
        return (e.operand,)
    if isinstance(e, n.Compare):
        return tuple(e.operands)
    if isinstance(e, n.BoolOp):
        return tuple(e.values)
    if isinstance(e, n.IfExp):
        return (e.test, e.body, e.orelse)
    if isinstance(e, n.Attribute):
        return (e.value,)
    if isinstance(e, n.Call):
        return tuple(a for a in e.args if not _is_dtype(a))
    return ()


def _is_dtype(e) -> bool:
    return type(getattr(e, "ty", None)).__name__ == "DTypeValue"


def broadcast_index(idx: tuple, shape: tuple, to: tuple) -> tuple:
    """The index into a tensor of shape `to` that element `idx` of shape `shape` reads when
    `to` broadcasts to `shape`: dims aligned on the right, a dim of 1 read at 0."""
    from ... import ir
    from ...dtypes import I32

    lead = len(shape) - len(to)
    return tuple(ir.Const(0, I32) if d == 1 and shape[lead + k] != 1 else idx[lead + k] for k, d in enumerate(to))


def builtin_call(e) -> str | None:
    """The name of the language builtin that `e` calls (`sum`, `softmax`, ...), else None."""
    if isinstance(e, n.Call) and isinstance(e.func, n.Name) and isinstance(e.func.ty, BuiltinRef):
        return e.func.id
    return None


def _split_full_reductions(node):
    """`node` with every reduction over both axes of a matrix (`sum(x, keepdims=True)`: [1, 1])
    written as two: over the rows, then over the column of their results
    (`sum(sum(x, axis=1, keepdims=True), axis=0, keepdims=True)`; a mean of row means is the
    mean, rows being equally long).  Each is a reduction the planner schedules (a row kernel,
    then a column kernel over the [M, 1] partial results); both keep the call's span."""
    if isinstance(node, tuple):
        return tuple(_split_full_reductions(x) for x in node)
    if not hasattr(node, "__dataclass_fields__"):
        return node
    changes = {}
    for f in node.__dataclass_fields__:
        if f in ("span", "ty"):
            continue
        old = getattr(node, f)
        new = _split_full_reductions(old)
        if new != old:
            changes[f] = new
    if changes:
        node = replace(node, **changes)
    if not (builtin_call(node) in REDUCE_KINDS and len(node.args) == 1
            and isinstance(getattr(node.args[0], "ty", None), TensorType) and len(node.args[0].ty.shape) == 2
            and not any(k.name == "axis" for k in node.keywords)):
        return node
    x, span = node.args[0], node.span

    def keywords(axis):
        return (n.Keyword("axis", n.Constant(axis, span), span), n.Keyword("keepdims", n.Constant(True, span), span))

    rows_shape = (x.ty.shape[0], node.ty.shape[1])  # [M, 1]
    rows = replace(node, keywords=keywords(1), ty=TensorType(node.ty.dtype, rows_shape, node.ty.scope))
    return replace(node, args=(rows,), keywords=keywords(0))
