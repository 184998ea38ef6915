"""Fusion: which operations of a tile op share a kernel, and why the others do not.

The planner starts at the tile op's result and makes one *group* (one kernel) per place where a
value must go through global memory.  A group computes its root expression and writes it to its
destination (the result, or a temporary tensor); inside a group every element-wise operation is
recomputed in registers.  The rules, in order (docs/tile-ops.md states them for users):

1. A root whose element-wise expression reads a matmul of its own shape is that matmul's
   *epilogue*: one matmul kernel (the std.gemm loop) computes the product tile and applies the
   expression to the accumulator before the store.  Its operands are loaded from tensors in
   global memory (a parameter or its `.T`); a computed operand is its own group first, except
   (1b) in a `@fuse` tile op, where an operand that is an element-wise expression of
   parameters is computed into the shared tile each K step (no TMA/cp.async copy for it, so
   the loop is slower than std.gemm's: without `@fuse` the temporary is the faster plan).
2. A root that reads reductions or softmaxes (over one tensor shape and one axis) and has that
   tensor's shape, or the reduced shape, is a *row* kernel: whole rows (or columns) per block,
   one pass over them per level of dependence between the reductions (a softmax's max and sum
   share one pass: online softmax), then the element-wise result.
3. Any other root is an *element-wise* kernel.
Every heavy operation a group cannot hold becomes a group of its own, and a `Boundary` records
the operation and the reason; `@fuse` turns the first boundary into a diagnostic.
"""
from __future__ import annotations

from dataclasses import field

from ...frozen import frozen, record
from .graph import Graph, Heavy, TileOpError


@frozen
class Boundary:
    """An operation whose result goes through global memory, and why."""

    op: str
    span: object
    reason: str


@record
class Group:
    """One kernel: `kind` is elementwise, matmul or rows; it computes `root` into `dest`."""

    kind: str
    root: object
    dest: str
    matmul: Heavy | None = None
    members: list = field(default_factory=list)  # rows: reductions and softmaxes, dependencies first
    axis: int = 1  # rows: the reduced axis of the (1 or 2-D) tensors the members reduce
    space: tuple = ()  # rows: the shape of the tensors the members reduce
    operands: tuple = ()  # matmul: ((tensor name, transposed), (tensor name, transposed))
    # matmul: per side, the element-wise expression of parameters the kernel computes into its
    # shared tile instead of loading a tensor (its operand entry is then (None, False))
    computed: tuple = (None, None)


@record
class Partition:
    groups: list  # dependencies first; the last one writes the result
    temps: dict  # AST node -> temporary tensor name
    boundaries: list


RESULT = "out"


def partition(graph: Graph, fuse_operands: bool = False) -> Partition:
    """The groups of `graph`.  `fuse_operands` (a `@fuse` tile op): an operand of a matmul that
    is an element-wise expression of parameters is computed into the matmul's shared tiles
    (rule 1b) instead of going through a temporary."""
    p = _Planner(graph, fuse_operands)
    p.plan(graph.root, p.result_name)
    return Partition(p.groups, p.temps, p.boundaries)


class _Planner:
    def __init__(self, graph: Graph, fuse_operands: bool = False):
        self.g = graph
        self.fuse_operands = fuse_operands
        self.groups: list[Group] = []
        self.temps: dict = {}
        self.boundaries: list[Boundary] = []
        taken = set(graph.params)
        self.result_name = _fresh(RESULT, taken)
        self.taken = taken | {self.result_name}

    # ---- materializing ---------------------------------------------------------------------------
    def materialize(self, node, reason: str) -> str:
        """The temporary tensor that holds `node`, planned (with its own kernel) the first time."""
        node = self.g.resolve(node)
        if node in self.temps:
            return self.temps[node]
        name = _fresh(f"tmp{len(self.temps)}", self.taken)
        self.taken.add(name)
        self.temps[node] = name
        self.boundaries.append(Boundary(self.g.text(node), node.span, reason))
        self.plan(node, name)
        return name

    # ---- groups ------------------------------------------------------------------------------------
    def elsewhere(self, node, root) -> bool:
        """Whether `node` is held by a temporary that another group computes."""
        return node in self.temps and node != self.g.resolve(root)

    def plan(self, root, dest: str) -> None:
        frontier = [h for h in self.g.frontier(root) if not self.elsewhere(h.node, root)]
        shape = self.g.shape(root)
        matmuls = [h for h in frontier if h.kind == "matmul"]
        epilogue = next((h for h in matmuls if self.g.shape(h.node) == shape), None)
        if epilogue is not None:
            return self.plan_matmul(root, dest, epilogue, frontier)
        rows = [h for h in frontier if h.kind != "matmul"]
        for h in rows:
            space, axis = self.row_space(h)
            if shape == space or shape in self.reduced_shapes(space, axis):
                return self.plan_rows(root, dest, space, axis, frontier)
        for h in frontier:
            self.materialize(h.node, self.why_elementwise(h, root))
        self.groups.append(Group("elementwise", root, dest))

    def plan_matmul(self, root, dest, mm: Heavy, frontier) -> None:
        text = self.g.text(mm.node)
        for h in frontier:
            if h.node == mm.node:
                continue
            if h.kind == "matmul":
                self.materialize(h.node, f"it is a second matrix product next to '{text}'; "
                                          "one kernel computes one '@'")
            else:
                self.materialize(h.node, f"the epilogue of '{text}' sees one tile of the product at a time, "
                                          f"not the whole {self.what_it_reduces(h)}")
        operands, computed = [], []
        for side, operand in zip(("left", "right"), self.g.operands(mm)):
            direct = self.g.transposed_param(operand)
            if direct is None and self.fuse_operands and not self.g.frontier(operand):
                operands.append((None, False))  # element-wise over parameters: computed tile by tile
                computed.append(self.g.resolve(operand))
                continue
            computed.append(None)
            if direct is None:
                self.materialize(operand, self.why_operand(operand, side, text))
                direct = (self.temps[self.g.resolve(operand)], False)
            operands.append(direct)
        self.groups.append(Group("matmul", root, dest, matmul=mm, operands=tuple(operands), computed=tuple(computed)))

    def why_operand(self, operand, side: str, text: str) -> str:
        if self.fuse_operands:  # the operand reads a heavy operation
            inner = self.g.text(self.g.frontier(operand)[0].node)
            return (f"the {side} operand of '{text}' reads '{inner}', which needs more than the operand's tile; "
                    "an operand is loaded from a tensor or computed element-wise from parameters")
        return (f"it is computed, and the {side} operand of '{text}' is loaded from a tensor in global memory "
                "(a parameter or its .T)")

    def plan_rows(self, root, dest, space, axis, frontier) -> None:
        members: dict = {}

        def add(h: Heavy):
            if h.node in members or self.elsewhere(h.node, root):
                return
            for d in self.g.frontier(self.g.operands(h)[0]):
                if self.elsewhere(d.node, root):
                    continue
                if d.kind != "matmul" and self.row_space(d) == (space, axis):
                    add(d)
                else:
                    self.materialize(d.node, self.why_not_row(d, h))
            members[h.node] = h

        for h in frontier:
            if h.kind != "matmul" and self.row_space(h) == (space, axis):
                add(h)
        for h in frontier:
            if h.node not in members and not self.elsewhere(h.node, root):
                first = next(iter(members.values()))
                self.materialize(h.node, self.why_not_row(h, first))
        self.groups.append(Group("rows", root, dest, members=list(members.values()), axis=axis, space=space))

    # ---- row spaces ---------------------------------------------------------------------------------
    def row_space(self, h: Heavy) -> tuple[tuple, int]:
        return self.g.shape(self.g.operands(h)[0]), h.axis

    @staticmethod
    def reduced_shapes(space: tuple, axis: int) -> list:
        kept = space[:axis] + space[axis + 1:]
        keep = space[:axis] + (1,) + space[axis + 1:]
        return [s for s in (kept, keep) if s]

    # ---- reasons --------------------------------------------------------------------------------------
    def what_it_reduces(self, h: Heavy) -> str:
        return "columns it reduces" if h.axis == 0 and len(self.row_space(h)[0]) == 2 else "rows it reduces"

    def why_not_row(self, d: Heavy, h: Heavy) -> str:
        text = self.g.text(h.node)
        if d.kind == "matmul":
            return (f"'{text}' needs whole {self.what_it_reduces(h)}, and a matmul kernel holds one tile of "
                    f"the product")
        if self.g.text(d.node) == text:  # the two halves of one reduction over every axis (graph.py)
            return "a reduction over every axis of a matrix takes two kernels: the rows, then their results"
        return f"it reduces another shape or axis than '{text}', and a row kernel reduces one"

    def why_elementwise(self, h: Heavy, root) -> str:
        if h.kind == "matmul":
            return (f"the result has shape {_shape_text(self.g.shape(root))} but the product "
                    f"{_shape_text(self.g.shape(h.node))}, so it is not the product's epilogue")
        return (f"the result has shape {_shape_text(self.g.shape(root))}, neither the reduced tensor's shape "
                f"nor the reduced shape")


def _shape_text(shape) -> str:
    return "[" + ", ".join(str(d) for d in shape) + "]"


def _fresh(name: str, taken) -> str:
    while name in taken:
        name += "_"
    return name


def check_fuse(graph: Graph, part: Partition) -> None:
    """`@fuse`: one kernel, no intermediate in global memory."""
    if part.boundaries:
        b = part.boundaries[0]
        raise FuseError(b, len(part.groups))


class FuseError(TileOpError):
    def __init__(self, boundary: Boundary, kernels: int):
        super().__init__(f"@fuse: '{boundary.op}' cannot be fused: {boundary.reason}", boundary.span,
                         f"without @fuse this tile op runs as {kernels} kernels")
        self.boundary = boundary
