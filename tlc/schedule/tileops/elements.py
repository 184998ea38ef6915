"""One element of a tile op's element-wise expression as tile IR.

`ElementLowerer` is the kernel lowerer (`tlc.schedule.lower.Lowerer`) taught that the values of
a tile op are whole tensors: each expression is lowered at an index (one IR expression per
dimension of its own shape), an operand with fewer or unit dimensions reads at the broadcast
index, `.T` reverses the index, an intermediate's name is its expression again (recomputed in
registers, never stored; a device function it calls is inlined once per element), and the
heavy operations and tensor parameters are *leaves* whose loads the kernel builder decides (a
fragment, a global load, a kernel's accumulator).  Everything else (arithmetic, promotion,
casts, math, `where`, device functions inlined) is the kernel lowerer's own code, so a tile op
computes exactly what a kernel would.
"""
from __future__ import annotations

from typing import Callable

from ... import ir
from ...dtypes import I32
from ...parser import nodes as n
from ...typecheck.types import ScalarType, TensorType
from ..lower import Lowerer, literal_expression
from .graph import Graph, broadcast_index, builtin_call

Leaf = Callable[[tuple], ir.Expr]  # the load of a leaf at an index of its own shape


class ElementLowerer(Lowerer):
    def __init__(self, graph: Graph, program):
        super().__init__(graph.fn, program)
        self.graph = graph
        for p in graph.fn.params:
            if p.role == "scalar":
                self.scalars[p.name] = p.type.dtype
        for s in graph.symbols:
            self.scalars[s] = I32
        self.leaves: dict = {}  # heavy AST node or tensor parameter name -> Leaf
        self.at: list[tuple[tuple, tuple]] = []  # (index, shape) of the expression being lowered
        # (intermediate, index, shape) -> its value in the element being lowered
        self.bound: dict[tuple, ir.Expr] = {}

    def element(self, e, index: tuple, shape: tuple) -> tuple[list, ir.Expr]:
        """(statements to run first, the value) of `e` at `index` of `shape` (the shape the
        caller computes; `e` broadcasts to it)."""
        if not self.at:  # another element's statements: the scalars inlined there are not in scope
            self.bound = {}
        self.at.append((tuple(index), tuple(shape)))
        try:
            value = self.expr(e)
        finally:
            self.at.pop()
        pending, self.pending = self.pending, []
        return pending, value

    def value_at(self, e, index: tuple, shape: tuple) -> ir.Expr:
        """The value of `e` at `index` of `shape`, its statements left pending (for a leaf that
        computes from other expressions while an element is being lowered)."""
        self.at.append((tuple(index), tuple(shape)))
        try:
            return self.expr(e)
        finally:
            self.at.pop()

    # ---- the index each expression is read at --------------------------------------------------
    def expr(self, e) -> ir.Expr:
        if not isinstance(getattr(e, "ty", None), TensorType):
            if isinstance(e, n.Name) and e.id in self.graph.names and self.name(e.id) == e.id:
                # a named scalar of the tile op (`t = 2.0`), not a local of the same name in a
                # device function being inlined (renamed there)
                return self.expr(self.graph.names[e.id])
            return super().expr(e)
        idx, shape = self.at[-1]
        own = self.graph.shape(e)
        self.at.append((broadcast_index(idx, shape, own), own))
        try:
            return self._tensor(e)
        finally:
            self.at.pop()

    def _tensor(self, e) -> ir.Expr:
        idx = self.at[-1][0]
        if isinstance(e, n.Name) and e.id in self.graph.names:
            # the intermediate's value at this index, lowered once per element (bind's comment);
            # not a method of its own: a frame more for each level of a deep chain of
            # intermediates (t1 = t0 + x; t2 = t1 + x; ...) overran the recursion bound
            key = (e.id, *self.at[-1])
            if key not in self.bound:
                self.bound[key] = self.bind(e.id, self.expr(self.graph.names[e.id]))
            return self.bound[key]
        h = self.graph.heavy(e)
        if h is not None:
            return self.leaves[h.node](idx)
        if builtin_call(e) == "tri":  # NumPy's tri(N, M, k): column j <= row i + k
            i32 = ScalarType(I32)
            shifted = self.binop("+", idx[0], self.expr(e.args[2]), i32, i32, e.span)
            return self.binop("<=", idx[1], shifted, i32, i32, e.span)
        if isinstance(e, n.Name):
            return self.leaves[e.id](idx)
        if isinstance(e, n.Attribute):  # .T, or .mT of a matrix (tensors of more dimensions are attention's)
            own = self.graph.shape(e.value)
            self.at.append((idx[::-1], own))
            try:
                return self._tensor(e.value)
            finally:
                self.at.pop()
        return super().expr(e)

    def bind(self, name: str, value: ir.Expr) -> ir.Expr:
        """The value of the tile op's intermediate `name` at the current index (`value`, lowered
        once per element by _tensor): the device functions it calls are inlined once (sinh's
        `u = expm1_f32(...)`, read three times, and `where(c, -r, r)` reading r twice, was six
        inlined expm1s with their branches, which nvcc does not merge), and a later use reads
        their results again.
        Arithmetic is repeated where read (nvcc computes it once); a math call or a float `%`
        or `//` is held in a scalar of the element's statements, computed once: inlined, fmodf's
        loop and libm's branches are not merged (fmod's `r = a % b`, read four times, was four
        fmodf).  Binding every value instead moved std.reduce's var_axis1 centring out of its
        masked store, and ptxas spilled."""
        if _costly(value):
            scalar = self._fresh_name(name)
            self.scalars[scalar] = value.dtype
            self.pending.append(ir.LetScalar(scalar, value.dtype, value, span=getattr(value, "span", None)))
            value = ir.Var(scalar, value.dtype)
        return value

    # ---- operators on tensors type like operators on their elements ---------------------------
    def expr_BinOp(self, e: n.BinOp):
        if (literal := literal_expression(e)) is not None:  # (a scalar constant expression, as in a kernel)
            return literal
        return self.binop(e.op, self.expr(e.left), self.expr(e.right), _elem(e.left.ty), _elem(e.right.ty), e.span)

    def expr_Compare(self, e: n.Compare):
        parts = [self.binop(op, self.expr(a), self.expr(b), _elem(a.ty), _elem(b.ty), e.span)
                 for op, a, b in zip(e.ops, e.operands, e.operands[1:])]
        out = parts[0]
        for p in parts[1:]:
            out = ir.BinOp("and", out, p, parts[0].dtype, span=e.span)
        return out


_CHEAP_CALLS = frozenset({"abs", "bitcast", "thread_index"})


def _costly(e: ir.Expr) -> bool:
    """Whether `e` calls a math function or takes a float remainder or floor quotient."""
    if isinstance(e, ir.Call) and e.fn not in _CHEAP_CALLS:
        return True
    if isinstance(e, ir.BinOp) and e.op in ("%", "//") and e.dtype.is_float:
        return True
    return any(_costly(c) for c in (getattr(e, f, None) for f in ("a", "b", "x", "cond")) if isinstance(c, ir.Expr)) \
        or any(_costly(a) for a in getattr(e, "args", ()))


def _elem(t):
    return ScalarType(t.dtype) if isinstance(t, TensorType) else t
