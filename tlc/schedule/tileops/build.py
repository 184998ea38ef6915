"""What every tile-op kernel builder shares: the kernel's parameters (the tensors and scalars it
reads, and its destination), its buffers, fresh names, and the loads of leaves.

A builder produces an ordinary `ir.Kernel` before layouts (what `Lowerer.kernel` produces for a
@kernel); `tlc.schedule.tileops.program` runs the usual passes on it.
"""
from __future__ import annotations

from ... import ir
from ...dtypes import I32, I64
from ...ir.walk import statements, statement_exprs, subexprs
from ...parser import nodes as n
from .elements import ElementLowerer
from .fusion import Group, Partition
from .graph import Graph


def i32(v) -> ir.Expr:
    return ir.Const(v, I32)


def var(name: str) -> ir.Expr:
    return ir.Var(name, I32)


def _int(a: ir.Expr, b: ir.Expr):
    """i64 when either operand is (a flat view's index), else i32."""
    return I64 if I64 in (a.dtype, b.dtype) else I32


def add(a: ir.Expr, b: ir.Expr) -> ir.Expr:
    if isinstance(b, ir.Const) and b.value == 0:
        return a
    if isinstance(a, ir.Const) and a.value == 0:
        return b
    return ir.BinOp("+", a, b, _int(a, b))


def mul(a: ir.Expr, b: ir.Expr) -> ir.Expr:
    if isinstance(b, ir.Const) and b.value == 1:
        return a
    return ir.BinOp("*", a, b, _int(a, b))


def cdiv(a: ir.Expr, b: int) -> ir.Expr:
    if isinstance(a, ir.Const):
        return i32(-(-a.value // b))
    t = a.dtype  # (a - 1) // b + 1: a size near the top of its type plus b would overflow
    return ir.BinOp("+", ir.BinOp("//", ir.BinOp("-", a, ir.Const(1, t), t), ir.Const(b, t), t), ir.Const(1, t), t)


class KernelBuilder:
    """Base of the three builders.  `tensors` maps every tensor a kernel may read or write (the
    tile op's parameters, the temporaries, the result) to (dtype, shape)."""

    def __init__(self, graph: Graph, program, part: Partition, group: Group, name: str, tensors: dict, target: str):
        self.g, self.part, self.group, self.name, self.target = graph, part, group, name, target
        self.tensors = tensors
        self.lower = ElementLowerer(graph, program)
        self.buffers: dict[str, ir.Buffer] = {}
        # The scheduler's own names (block indices, loop variables, buffers) come from `fresh`,
        # which avoids every name of the tile op: the kernel declares them beside the user's.
        self.names: set = set(tensors) | set(graph.symbols) | {p.name for p in graph.fn.params} \
            | set(graph.names) | _called(graph.fn.body) | {name}
        for node, temp in part.temps.items():
            if temp != group.dest:
                self.lower.leaves[node] = self.tensor_leaf(temp)
        for p in graph.fn.tensor_params:
            self.lower.leaves[p.name] = self.tensor_leaf(p.name)

    def fresh(self, base: str) -> str:
        """`base`, or `base1`, `base2`...: the first that no name of the tile op, no name given
        out before, and no scalar of an inlined device function takes."""
        name = base
        k = 0
        while name in self.names or name in self.lower.scalars:
            k += 1
            name = f"{base}{k}"
        self.names.add(name)
        self.lower.taken.add(name)  # and the scalars of device functions inlined later avoid it
        return name

    def buffer(self, base: str, scope: str, dtype, shape) -> str:
        name = self.fresh(base)
        self.buffers[name] = ir.Buffer(name, scope, dtype, tuple(shape))
        return name

    def dim(self, d) -> ir.Expr:
        return i32(d) if isinstance(d, int) else var(d)

    def tensor_leaf(self, name: str):
        """A tensor read element by element from global memory (out of range reads 0)."""
        dtype = self.tensors[name][0]
        return lambda idx: ir.Load(name, tuple(idx), dtype)

    def kernel(self, grid: tuple, block_vars: tuple, threads: int, body: tuple, min_blocks: int = 0,
               wide_symbols: tuple = ()) -> ir.Kernel:
        """The kernel with the parameters its body uses: tensors in the order of `tensors`, then
        the tile op's scalars that it reads; `wide_symbols` are i64 (`ir.Kernel`)."""
        used = _names_used(body)
        params = []
        for name, (dtype, shape) in self.tensors.items():
            if name in used:
                params.append(ir.Param(name, "tensor", dtype, tuple(shape)))
        for p in self.g.fn.params:
            if p.role == "scalar" and p.name in used:
                params.append(ir.Param(p.name, "scalar", p.type.dtype))
        return ir.Kernel(self.name, tuple(params), tuple(grid), tuple(block_vars), threads,
                         tuple(self.buffers.values()), tuple(body), (), min_blocks=min_blocks,
                         wide_symbols=tuple(wide_symbols), span=self.g.fn.node.name_span)


def _called(node) -> set:
    """The names of the functions the tile op calls (device functions, math)."""
    if isinstance(node, (tuple, list)):
        return set().union(*(_called(x) for x in node))
    if not hasattr(node, "__dataclass_fields__"):
        return set()
    out = {node.func.id} if isinstance(node, n.Call) and isinstance(node.func, n.Name) else set()
    return out.union(*(_called(getattr(node, f)) for f in node.__dataclass_fields__ if f not in ("span", "ty")))


def _names_used(body) -> set:
    out = set()
    for s in statements(body):
        for attr in ("name", "buffer"):
            v = getattr(s, attr, None)
            if isinstance(v, str):
                out.add(v)
        if isinstance(s, ir.Copy):
            out.add(s.src.name)
            out.add(s.dst.name)
        for e in statement_exprs(s):
            for x in subexprs(e):
                if isinstance(x, (ir.Var, ir.Load)):
                    out.add(x.name)
    return out
