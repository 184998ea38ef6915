"""Views of tensor parameters (`x_flat = view(x, f16[M * N])`, checked in typecheck/views.py)
lowered away: the IR knows only the kernel's parameters, so every access through a view
becomes an access to the viewed parameter at the same row-major position.

- An element (`Load`, `Store`, `Atomic`) is read or written at the parameter's indices
  computed from the view's: the shapes are cut into groups of equal element count from the
  last dimension on (`root_indices`), and each group's view indices are merged into one
  row-major position and split again over the parameter's (`r` of a `[K * K * C, F]` view of
  `[K, K, C, F]` is `(r // C // K, r // C % K, r % C)`, the column kept as it is).  A view
  index outside its dimension reads 0 and is not written, as any tensor's.
- A copy with a view on a side is a `parallel` loop over the tile, one element an index
  (schedule/copy_parts.py), whose elements are then mapped as above.  What that costs: no
  cp.async or TMA for the view's side, each thread moving single elements.

`resolve` runs once over a kernel's lowered body, after every statement is lowered."""
from __future__ import annotations

from dataclasses import fields, replace

from .. import ir
from ..dtypes import BOOL, I32, I64, DType, lookup
from . import copy_parts
from ..frozen import frozen
from .param_dims import param_dim

U32, U64 = lookup("u32"), lookup("u64")


@frozen
class View:
    name: str
    root: str  # the tensor parameter whose memory it is
    dtype: DType
    dims: tuple  # ir.Expr per dimension (i32, of shape symbols and constants)
    root_dims: tuple


def registry(lw) -> dict:
    """The views declared so far in the kernel the Lowerer `lw` lowers (name -> View)."""
    return lw.__dict__.setdefault("views", {})


def is_declaration(s) -> bool:
    v = s.value
    return type(v).__name__ == "Call" and getattr(v.func, "id", None) == "view" \
        and getattr(v.ty, "scope", None) == "global"


def declare(lw, s) -> None:
    """`name = view(x, dtype[dims])`: recorded; no statement of its own."""
    views = registry(lw)
    source = s.value.args[0]
    dims = tuple(_dim(lw, d) for d in s.target.ty.shape)
    if source.id in views:  # a view of a view is a view of its parameter
        root, root_dims = views[source.id].root, views[source.id].root_dims
    else:
        root, root_dims = source.id, tensor_dims(lw, source)
    views[s.target.id] = View(s.target.id, root, s.target.ty.dtype, dims, root_dims)


def tensor_dims(lw, tensor) -> tuple:
    """The dimensions of a tensor parameter, workspace or view (a typed name) as i32 expressions."""
    views = registry(lw)
    if tensor.id in views:
        return views[tensor.id].dims
    return tuple(_dim(lw, d) for d in tensor.ty.shape)


def _dim(lw, d) -> ir.Expr:
    """A dimension (an AST expression of constants and shape symbols) as an i32 expression."""
    v = param_dim(d, lw.consts, lw.shape_symbols)
    return ir.Const(v, I32) if isinstance(v, int) else ir.Var(v, I32) if isinstance(v, str) else v.expr


def touches(lw, copy: ir.Copy) -> bool:
    views = registry(lw)
    return any(isinstance(x, ir.Region) and x.name in views for x in (copy.src, copy.dst))


def copy_as_region(lw, copy: ir.Copy) -> ir.Copy | None:
    """`copy` between a view and a whole fragment as a copy of the parameter itself, its region
    carrying the view's dimensions (`Region.dims`): the code generator reads and writes the
    parameter's memory in the view's shape as it does any tensor's (16-byte vectors where the
    view's rows are aligned, one bounds test a run), and the interpreter reshapes the array.
    std.data's gather reads its indices and writes its output as rows of `[A, K * C]` views so:
    element by element, each thread's eight 8-byte indices were eight loads 64 bytes apart.
    None for any other copy (a shared buffer's side, a part of a buffer, a column)."""
    views = registry(lw)
    view_sides = [s for s in (copy.src, copy.dst) if isinstance(s, ir.Region) and s.name in views]
    other = copy.dst if copy.src in view_sides else copy.src
    if len(view_sides) != 1 or other.name not in lw.buffers or lw.buffers[other.name].scope != "fragment" \
            or copy_parts.is_part(copy, lw.buffers):
        return None
    side = view_sides[0]
    view = views[side.name]
    region = ir.Region(view.root, side.offsets, side.extents, span=side.span, dims=view.dims)
    return replace(copy, src=region) if side is copy.src else replace(copy, dst=region)


def copy_as_loop(lw, copy: ir.Copy) -> ir.Stmt:
    dtypes = {p.name: p.type.dtype for p in (*lw.fn.tensor_params, *getattr(lw.fn, "workspaces", ()))}
    dtypes.update({v.name: v.dtype for v in registry(lw).values()})
    return copy_parts.as_loop(copy, lw.buffers, dtypes, lw._fresh_indices)


# ---- the accesses ------------------------------------------------------------------------------

def resolve(lw, body: tuple) -> tuple:
    """`body` with every access through a view made an access to its parameter."""
    views = registry(lw)
    if not views:
        return body
    return _Resolver(lw, views).block(body)


_BODIES = ("body", "then", "orelse")


class _Resolver:
    """Maps a body's statements.  The parameter's indices an element statement (a store, an
    atomic, an assignment, ...) needs are computed into scalars declared just before it, so
    that the generated code computes each once (its bounds test and its address read them);
    the headers of loops and `if`s, evaluated where they stand or again each trip, compute
    them inline."""

    def __init__(self, lw, views: dict):
        self.lw, self.views = lw, views
        self.lets: list | None = None

    def block(self, stmts) -> tuple:
        out = []
        for s in stmts:
            if any(hasattr(s, f) for f in _BODIES):
                self.lets = None
                node = self.node(s, skip=_BODIES)
                out.append(replace(node, **{f: self.block(getattr(s, f)) for f in _BODIES if hasattr(s, f)}))
                continue
            self.lets = []
            node = self.node(s)
            out.extend(self.lets)
            out.append(node)
            self.lets = None
        return tuple(out)

    def bind(self, e: ir.Expr) -> ir.Expr:
        if self.lets is None or isinstance(e, (ir.Var, ir.Const)):
            return e
        name = self.lw._fresh_name("view_index")
        self.lets.append(ir.LetScalar(name, e.dtype, e))
        return ir.Var(name, e.dtype)

    def node(self, node, skip=()):
        changes = {}
        for f in fields(node):
            if f.name in skip:
                continue
            v = getattr(node, f.name)
            if isinstance(v, ir.Node):
                new = self.node(v)
                if new is not v:
                    changes[f.name] = new
            elif isinstance(v, tuple) and any(isinstance(x, ir.Node) for x in v):
                new = tuple(self.node(x) if isinstance(x, ir.Node) else x for x in v)
                if any(a is not b for a, b in zip(new, v)):
                    changes[f.name] = new
        if changes:
            node = replace(node, **changes)
        name = getattr(node, "name", None)
        if name not in self.views or not isinstance(node, (ir.Load, ir.Store, ir.Atomic)):
            return node
        view = self.views[name]
        indices, guard = root_indices(view, node.indices, self.bind)
        if isinstance(node, ir.Load):
            load = ir.Load(view.root, indices, node.dtype, span=node.span)
            return load if guard is None else ir.Select(guard, load, ir.Const(0, node.dtype), node.dtype, span=node.span)
        moved = replace(node, name=view.root, indices=indices)
        return moved if guard is None else ir.If(guard, (moved,), span=node.span)


def root_indices(view: View, indices: tuple, bind=lambda e: e) -> tuple:
    """(the parameter's indices of the element at `indices` of the view, the condition that the
    view's indices lie inside it where the parameter's bounds do not already say so, or None).

    The two shapes are cut into groups from the last dimension on, each group of view
    dimensions holding as many elements as its group of parameter dimensions (`K * K * C`
    against `K, K, C`; `F` against `F`), the fewest dimensions first; a group's indices are
    merged into one position and split again, the rest of the shapes (where no such cut is
    found) forming one group."""
    vd, rd = view.dims, view.root_dims
    out, guard = [], None
    for (v0, v1), (r0, r1) in _groups(vd, rd):
        idx, inside = _group_indices(indices[v0:v1], vd[v0:v1], rd[r0:r1], bind)
        out.extend(idx)
        if inside is not None:
            guard = inside if guard is None else ir.BinOp("and", guard, inside, BOOL)
    return tuple(out), guard


def _groups(vd, rd) -> list:
    """[((view start, stop), (parameter start, stop)), ...] in order, covering both shapes."""
    i, j, out = len(vd), len(rd), []
    while i > 0 and j > 0:
        cut = next(((p, t - p) for t in range(2, i + j + 1) for p in range(1, t)
                    if p <= i and t - p <= j and _product(vd[i - p:i]) == _product(rd[j - (t - p):j])), None)
        if cut is None or (cut[0] == i) != (cut[1] == j):  # what is left must hold nothing, or be a group itself
            break
        out.append(((i - cut[0], i), (j - cut[1], j)))
        i, j = i - cut[0], j - cut[1]
    if i or j:
        out.append(((0, i), (0, j)))
    return out[::-1]


def _product(dims) -> tuple:
    """A product of dimensions as (its constant factor, its other factors sorted by their text)."""
    const, factors = 1, []
    stack = list(dims)
    while stack:
        d = stack.pop()
        if isinstance(d, ir.BinOp) and d.op == "*":
            stack += [d.a, d.b]
        elif isinstance(d, ir.Const):
            const *= d.value
        else:
            factors.append(d)
    return const, tuple(sorted(factors, key=repr))


def _group_indices(lead, dims, rd, bind) -> tuple:
    """One group: the view's indices `lead` over `dims` as indices over the parameter's `rd`,
    each position `bind` gives a name to."""
    a, b = len(lead), len(rd)
    if a == 1 and b == 1:
        return (bind(lead[0]),), None
    guard = None
    for i, d in list(zip(lead, dims))[1:]:  # the first one's overflow leaves the parameter's first dimension
        inside = ir.BinOp("and", ir.BinOp(">=", i, ir.Const(0, I32), BOOL), ir.BinOp("<", i, d, BOOL), BOOL)
        guard = inside if guard is None else ir.BinOp("and", guard, inside, BOOL)
    wide = I64 if a > 1 and b > 1 else I32  # a position past 2^31 only when merged from several
    flat = _cast(lead[0], wide) if a else ir.Const(0, wide)
    for i, d in zip(lead[1:], dims[1:]):
        flat = ir.BinOp("+", ir.BinOp("*", flat, _cast(d, wide), wide), _cast(i, wide), wide)
    if b == 0:  # the view's extra dimensions are all of size 1
        zero = ir.BinOp("==", flat, ir.Const(0, wide), BOOL)
        return (), zero if guard is None else ir.BinOp("and", guard, zero, BOOL)
    if b == 1:
        return (bind(_cast(flat, I32)),), guard
    flat = bind(flat)
    nonneg = ir.BinOp(">=", flat, ir.Const(0, wide), BOOL)  # split() divides it as unsigned
    return tuple(split(flat, rd, bind)), nonneg if guard is None else ir.BinOp("and", guard, nonneg, BOOL)


def split(position: ir.Expr, dims, bind) -> list:
    """A non-negative i32 or i64 `position` as row-major i32 indices over `dims` (the first
    dimension's size is not read: past it, the first index is past it).  Unsigned division,
    which a non-negative position allows: one plain division a dimension, without the floor
    correction and its branches a signed `//` needs; each step named by `bind`."""
    wide = U64 if position.dtype == I64 else U32
    rest = bind(_cast(position, wide))
    out = []
    for d in reversed(dims[1:]):
        size = _cast(d, wide)
        quotient = bind(ir.BinOp("//", rest, size, wide))
        out.append(bind(_cast(ir.BinOp("-", rest, ir.BinOp("*", quotient, size, wide), wide), I32)))
        rest = quotient
    out.append(bind(_cast(rest, I32)))
    return out[::-1]


def _cast(e: ir.Expr, dt: DType) -> ir.Expr:
    if e.dtype == dt:
        return e
    if isinstance(e, ir.Const):
        return ir.Const(e.value, dt)
    return ir.Cast(e, dt)
