"""What a kernel ported from TileLang reaches for, checked: TileLang's names for builtins tlc
spells otherwise (`if_then_else`, `infinity`, `ceildiv`), bit casts (`reinterpret`), dtype
extremes (`max_value`, `min_value`), the thread index (`thread_index()`,
`get_thread_binding()`), tile-level atomics (`atomic_add(C[r, c], acc)`) and the performance
hints (`use_swizzle`, `annotate_layout`, gemm's `policy=`).

The thread index is the one value that differs between the threads of a block outside a
`parallel` loop.  The checker follows it: a scalar assigned from it, or assigned under control
flow that depends on it, is *per thread* (`thread_names`), and so is every statement under such
control flow.  Per-thread code may compute scalars, branch and loop, and store, update
atomically or print elements of global and shared tensors; the tile statements (which the
block runs together), `parallel` loops and local buffers may not depend on it (E225, E226), nor
may a `parallel` loop's body read it (E224): which thread runs which index there is the
compiler's choice."""
from __future__ import annotations

from ..dtypes import I32, lookup
from ..parser import nodes as n
from ..parser.nodes import replace
from . import rules
from .builtins import ALIASES, TILE_STATEMENTS
from .env import BUFFER
from .literals import literal_value
from .types import (FRAGMENT, GLOBAL, LOCAL, SHARED, BuiltinRef, DTypeValue, ScalarType, StrType, TensorType,
                    VoidType, describe)

THREAD_INDEX = ("thread_index", "get_thread_binding")
GEMM_POLICIES = ("Square", "FullRow", "FullCol")
# gemm's keywords as TileLang spells them, beside tlc's trans_a, trans_b, precision
GEMM_TILELANG = ("transpose_A", "transpose_B", "policy", "clear_accum", "k_pack", "wg_wait")
_TILE_ONLY = (TILE_STATEMENTS - {"print", "device_assert", "atomic_add", "atomic_max", "atomic_min"}) | {"use_swizzle", "annotate_layout"}


class PortingChecker:
    thread_names: frozenset = frozenset()  # per-thread scalars (see the module docstring)
    thread_control = 0  # > 0 inside control flow that depends on the thread index
    thread_used = False  # thread_index() was read: only then is anything per thread
    parallel_loops = 0  # serial loops open where the current parallel loop began (break and continue)

    # ---- builtins ------------------------------------------------------------------------------
    def porting_builtin(self, e: n.Call, name: str):
        if name in ALIASES:  # checked and lowered as tlc's own builtin; messages keep the name written
            canonical = ALIASES[name]
            return self._call_builtin(replace(e, func=replace(e.func, ty=BuiltinRef(canonical))), canonical)
        if name == "reinterpret":
            return self._reinterpret(e)
        if name in ("max_value", "min_value"):
            if not self._arity(e, name, 1):
                return e
            dt = self.expr(e.args[0])
            if not isinstance(dt.ty, DTypeValue):
                if dt.ty is not None:
                    self.error("E035", f"{name}() takes a dtype, such as {name}(f16)", e.args[0].span)
                return e
            return replace(e, args=(dt,), ty=ScalarType(dt.ty.dtype, const=True))
        return self._thread_index(e, name)

    def _reinterpret(self, e: n.Call):
        """`reinterpret(x, dtype)`, or TileLang's order `reinterpret(dtype, x)`: the bits of x read
        as `dtype`, which has x's width."""
        if not self._arity(e, "reinterpret", 2):
            return e
        first = self.expr(e.args[0])
        if first.ty is None:
            return e
        if isinstance(first.ty, DTypeValue):
            dt, x = first, self.value(e.args[1])
        else:
            dt, x = self.expr(e.args[1]), self.value(e.args[0])
            if dt.ty is not None and not isinstance(dt.ty, DTypeValue):
                self.error("E035", f"reinterpret() takes a value and a dtype, found {describe(dt.ty)}", dt.span,
                           "write reinterpret(x, u32)")
                return e
        if x.ty is None or dt.ty is None:
            return e
        src = x.ty.dtype
        to = dt.ty.dtype
        if isinstance(x.ty, ScalarType) and x.ty.weak and src.is_int:
            src = _literal_bits_type(literal_value(self, x), to.bits)
            if src is None:
                self.error("E220", f"reinterpret() to {to} takes {to.bits} bits; this literal does not fit in them",
                           x.span)
                return e
            x = replace(x, ty=ScalarType(src, const=True))
        if src.is_bool or to.is_bool:
            self.error("E221", "reinterpret() does not take bool: a bool's bits are not a number's",
                       (x if src.is_bool else dt).span, "compare instead: x != 0, or convert: u8(flag)")
            return e
        if src.bits != to.bits:
            same = ", ".join(d for d in ("i8 u8 f8e4m3 f8e5m2", "i16 u16 f16 bf16", "i32 u32 f32", "i64 u64 f64")
                             [[8, 16, 32, 64].index(src.bits)].split() if d != src.name)
            self.error("E220", f"reinterpret() keeps the bits, so both dtypes have one width: {src} is {src.bits} bits, "
                       f"{to} is {to.bits}", e.span,
                       f"to convert the value, write cast(x, {to}); {src} reinterprets as {same}")
            return e
        args = (x, dt) if not isinstance(first.ty, DTypeValue) else (dt, x)
        ty = TensorType(to, x.ty.shape, x.ty.scope) if isinstance(x.ty, TensorType) else ScalarType(to)
        return replace(e, args=args, ty=ty)

    def _thread_index(self, e: n.Call, name: str):
        if not self._arity(e, name, 0, 1 if name == "get_thread_binding" else 0):
            return e
        if e.args:
            dim = self.const_value(e.args[0], "the dimension of get_thread_binding()")
            if dim is None:
                return e
            if dim != 0:
                self.error("E222", f"a tlc block has one dimension of threads; get_thread_binding({dim}) names another",
                           e.args[0].span, "write get_thread_binding() or thread_index(), 0 to threads - 1")
                return e
        if self.kind != "kernel" or not self.in_grid or self.in_parallel:
            where = ("inside a parallel loop, which thread runs which index is the compiler's choice"
                     if self.in_parallel else "it exists only inside a kernel's grid block")
            self.error("E223", f"{name}() is read outside parallel loops in a kernel's grid block; {where}", e.span,
                       "use the parallel loop's indices" if self.in_parallel else None)
            return e
        self.thread_used = True
        return replace(e, args=(), ty=ScalarType(I32))

    def spec_of_dtype_attribute(self, s: n.Assign) -> n.Assign:
        """`buf = fragment(acc.dtype[BM])` as `fragment(f32[BM])`, acc's dtype by its name."""
        call = s.value
        spec = call.args[0] if len(call.args) == 1 else None
        if not (isinstance(spec, n.Subscript) and isinstance(spec.value, n.Attribute) and spec.value.attr == "dtype"):
            return s
        dt = self.expr(spec.value)
        if not isinstance(dt.ty, DTypeValue):
            return s  # reported; the allocation reports the spec too
        named = n.Name(dt.ty.dtype.name, spec.value.span)
        return replace(s, value=replace(call, args=(replace(spec, value=named),)))

    # ---- the thread index through statements ---------------------------------------------------
    def reads_thread(self, node) -> bool:
        """Whether a checked expression reads the thread index, directly or through a scalar."""
        return self.thread_used and _reads(node, self.thread_names)

    def per_thread_assignment(self, name: str, value) -> None:
        if self.thread_control or (value is not None and self.reads_thread(value)):
            self.thread_names = self.thread_names | {name}

    def thread_branch(self, test) -> bool:
        """Entering a body under `test`: whether it depends on the thread index."""
        dep = self.reads_thread(test)
        self.thread_control += dep
        return dep

    def tile_under_thread(self, what: str, node, span) -> bool:
        """E225 for a tile statement or parallel loop that depends on the thread index."""
        if not (self.thread_control or (node is not None and self.reads_thread(node))):
            return False
        self.error("E225", f"{what} runs in all the block's threads together, but here it depends on the thread index",
                   span, "compute per thread with scalars and element stores; keep tile statements and parallel "
                   "loops outside code that depends on thread_index()")
        return True

    def parallel_reads_thread(self, body) -> None:
        """E224 at the first per-thread scalar a parallel loop's body reads."""
        if not self.thread_names:
            return
        hit = _first_name(body, self.thread_names)
        if hit is not None:
            self.error("E224", f"'{hit.id}' depends on the thread index, which a parallel loop does not see: "
                       "which thread runs which index is the compiler's choice", hit.span,
                       "use the loop's indices, or compute the value outside thread-dependent code")

    def local_store_per_thread(self, target, value, span) -> bool:
        base = target.value.ty if isinstance(target, n.Subscript) else None
        if not (isinstance(base, TensorType) and base.scope == LOCAL):
            return False
        if self.thread_control or self.reads_thread(target) or self.reads_thread(value):
            self.error("E226", "a local buffer written in code that depends on the thread index: tlc models "
                       "local buffers per parallel index, not per thread", span,
                       "keep the per-thread value in a scalar, or write it into a shared buffer at the thread's index")
            return True
        return False

    # ---- statements ------------------------------------------------------------------------------
    def porting_statement(self, s: n.ExprStmt, name: str):
        """A tile atomic, a hint, or gemm with `policy=`; None for any other statement."""
        call = s.expr
        if name in _TILE_ONLY or name in ("atomic_add", "atomic_max", "atomic_min") and _tile_atomic(self, call):
            if self.tile_under_thread(f"{name}(...)", call, call.span):
                return s
        if name == "gemm" and any(k.name in GEMM_TILELANG for k in call.keywords):
            return self._gemm_tilelang(s, call)
        if name in ("use_swizzle", "annotate_layout"):
            return self._hint(s, call, name)
        if name in ("atomic_add", "atomic_max", "atomic_min") and _tile_atomic(self, call):
            return self._tile_atomic(s, call, name)
        return None

    def _gemm_tilelang(self, s, call):
        """gemm with TileLang's keywords: transpose_A/B (trans_a/b), clear_accum=True (the
        accumulator cleared first), and the hints policy=, k_pack=, wg_wait= (accepted, noted
        as ignored when lowered)."""
        kept, rest = [], []
        for k in call.keywords:
            if k.name in ("transpose_A", "transpose_B"):
                rest.append(replace(k, name="trans_" + k.name[-1].lower()))
            elif k.name == "policy":
                v = k.value
                word = v.attr if isinstance(v, n.Attribute) and isinstance(v.value, n.Name) \
                    and v.value.id == "GemmWarpPolicy" else v.value if isinstance(v, n.Constant) \
                    and isinstance(v.value, str) else None
                if word not in GEMM_POLICIES:
                    self.error("E227", "gemm policy must be GemmWarpPolicy.Square, .FullRow or .FullCol", v.span,
                               "tlc accepts TileLang's warp policies and lays the warps out itself")
                    return s
                kept.append(n.Keyword("policy", n.Constant(word, v.span, StrType()), k.span))
            elif k.name in GEMM_TILELANG:
                value = self.const_value(k.value, k.name)
                if value is None:
                    return s
                if k.name == "clear_accum" and not isinstance(value, bool) or \
                        k.name != "clear_accum" and (not isinstance(value, int) or isinstance(value, bool) or value < 0):
                    self.error("E227", f"gemm {k.name} must be {'True or False' if k.name == 'clear_accum' else 'a non-negative integer'}"
                               f", found {value!r}", k.value.span)
                    return s
                kept.append(n.Keyword(k.name, n.Constant(value, k.value.span, ScalarType(I32 if k.name != "clear_accum"
                                                                                          else lookup("bool"), const=True)),
                                      k.span))
            else:
                rest.append(k)
        checked = self.tile_statement(replace(s, expr=replace(call, keywords=tuple(rest))), "gemm")
        if not isinstance(checked.expr, n.Call) or checked.expr.ty is None:
            return checked
        return replace(checked, expr=replace(checked.expr, keywords=checked.expr.keywords + tuple(kept)))

    def _hint(self, s, call, name):
        if self.kind != "kernel" or not self.in_grid or self.in_parallel or self.depth != 2:
            self.error("E228", f"{name}(...) is a hint for the whole kernel: it belongs at the top of the grid block",
                       call.span, "move it directly under 'with grid(...)'")
            return s
        if name == "annotate_layout":  # accepted and ignored: tlc chooses layouts (DESIGN.md)
            if self._arity(call, name, 1) and not isinstance(call.args[0], n.DictExpr):
                self.error("E228", "annotate_layout() takes a dict {buffer: layout}", call.args[0].span)
            return replace(s, expr=replace(call, args=(), func=replace(call.func, ty=BuiltinRef(name)), ty=VoidType()))
        if not self._arity(call, name, 0, 3, ("panel_size", "order", "enable")):
            return s
        given = dict(zip(("panel_size", "order", "enable"), call.args))
        given.update({k.name: k.value for k in call.keywords})
        panel = self.const_value(given["panel_size"], "panel_size") if "panel_size" in given else None
        if panel is None or not isinstance(panel, int) or isinstance(panel, bool) or not 1 <= panel <= 65535:
            if panel is not None or "panel_size" not in given:
                self.error("E228", f"use_swizzle() needs panel_size, an integer from 1 to 65535, found {panel!r}",
                           given.get("panel_size", call).span)
            return s
        order = given.get("order")
        if order is not None and not (isinstance(order, n.Constant) and order.value in ("row", "col", "column")):
            self.error("E228", 'use_swizzle order must be "row" or "column"', order.span)
            return s
        enable = self.const_value(given["enable"], "enable") if "enable" in given else True
        if enable is None:
            return s
        args = (n.Constant(panel, call.span, ScalarType(I32, const=True)),
                n.Constant("row" if order is None or order.value == "row" else "column", call.span, StrType()),
                n.Constant(bool(enable), call.span, ScalarType(lookup("bool"), const=True)))
        return replace(s, expr=replace(call, args=args, keywords=(), func=replace(call.func, ty=BuiltinRef(name)),
                                       ty=VoidType()))

    def _tile_atomic(self, s, call, name):
        """`atomic_add(C[r, c], tile)`: every element of a fragment or shared tile added atomically
        into the region of C at (r, c); elements outside C are skipped."""
        if self.kind != "kernel" or not self.in_grid or self.in_parallel:
            self.error("E060", f"{name}(...) of a whole tile works on tiles and cannot be inside a 'parallel' loop"
                       if self.in_parallel else f"{name}(...) is only allowed inside a kernel's grid block", call.span,
                       f"inside a parallel loop, update single elements: {name}(C[i, j], v)" if self.in_parallel else None)
            return s
        if not self._arity(call, name, 2, keywords=("order",) if name == "atomic_add" else ()):
            return s
        dst = self._operand(call.args[0], f"destination of {name}")
        src = self.expr(call.args[1])
        if dst is None or src.ty is None:
            return s
        if dst.ty.scope not in (GLOBAL, SHARED):
            self.error("E229", f"{name} of a tile updates a global tensor or a shared buffer, not a {dst.ty.scope} buffer",
                       call.args[0].span)
            return s
        if src.ty.scope not in (FRAGMENT, SHARED):
            self.error("E229", f"{name} of a tile adds a fragment or shared buffer, found {describe(src.ty)}",
                       call.args[1].span)
            return s
        dims = tile_dims(dst, src.ty.rank)
        if dims is None:
            self.error("E229", f"{name} of a {src.ty.rank}-D tile into a region of {dst.ty.rank} dimensions"
                       + (f", {sum(isinstance(x, n.Slice) for x in dst.indices)} of them sliced"
                          if isinstance(dst, n.Subscript) and any(isinstance(x, n.Slice) for x in dst.indices) else ""),
                       call.span, "slice one dimension for each of the tile's, or give the region's origin: C[r, c]")
            return s
        for a, b in zip((dst.ty.shape[d] for d in dims), src.ty.shape):
            va, vb = (self.dim_value(a) if a is not None else None), self.dim_value(b)
            if va is not None and vb is not None and va != vb:
                self.error("E229", f"{name} of a tile of shape {src.ty} into a region of another shape", call.span)
                return s
        if not rules.assignable(ScalarType(src.ty.dtype), dst.ty.dtype):
            self.error("E033", f"cannot {name.split('_')[1]} {src.ty.dtype} elements into a {dst.ty.dtype} tensor "
                       "without a cast", call.args[1].span,
                       f"TileLang converts silently; tlc never narrows: copy the tile into a {dst.ty.dtype} fragment "
                       f"first, copy({call.args[1].id}, t), and update with t" if isinstance(call.args[1], n.Name) else None)
            return s
        keywords = ()
        for k in call.keywords:  # order=(counter element, turn): atomic_add's alone (_arity)
            order = self._order(k, dst)
            if order is None:
                return s
            keywords = (replace(k, value=order),)
        return replace(s, expr=self.statement_call(replace(call, args=(dst, src), keywords=keywords)))

    def _order(self, k, dst):
        """`order=(counts[i], turn)` of a tile's atomic_add into a global tensor: the update waits
        for `turn` earlier updates counted in the i32 element `counts[i]` of a global tensor,
        then counts itself; the checked pair, or None after an E383."""
        o = k.value
        if dst.ty.scope != GLOBAL:
            self.error("E383", "atomic_add(..., order=) orders updates of a global tensor, not of a shared buffer",
                       k.span)
            return None
        if not isinstance(o, n.TupleExpr) or len(o.elts) != 2:
            self.error("E383", "atomic_add's order= is a pair: (counter element, turn)", k.span,
                       "order=(counts[b, h, row_block], turn), counts an i32 tensor that starts at 0")
            return None
        counter, turn = o.elts
        if not isinstance(counter, n.Subscript) or any(isinstance(i, n.Slice) for i in counter.indices):
            self.error("E383", "atomic_add's order= counts in one element of a tensor: (counts[i, j], turn)",
                       counter.span)
            return None
        c = self.expr(counter)
        if c.ty is None:
            return None
        base = c.value.ty
        if base.scope != GLOBAL or c.ty.dtype.name != "i32":
            self.error("E383", f"atomic_add's order= counts in an i32 element of a global tensor, not in an element "
                       f"of {describe(base)}", counter.span)
            return None
        t = self.integer(turn, "atomic_add's turn")
        return replace(o, elts=(c, t), ty=VoidType())  # (typed: statement_call leaves it)


def tile_dims(dst, rank: int) -> list[int] | None:
    """The dimensions of a tile atomic's region that the tile's run along, in order: its
    slices where it has any (its single indices drop theirs, as in copy), else its last `rank`
    (an origin, `C[b, r, c]`); None where they do not match the tile's rank."""
    if not isinstance(dst, n.Subscript):
        return list(range(rank)) if dst.ty.rank == rank else None
    slices = [i for i, x in enumerate(dst.indices) if isinstance(x, n.Slice)]
    if slices:
        return slices if len(slices) == rank else None
    return list(range(len(dst.indices) - rank, len(dst.indices))) if len(dst.indices) >= rank else None


def _tile_atomic(checker, call) -> bool:
    """An atomic whose operand is a whole buffer (`atomic_add(C[r, c], acc)`), not one value."""
    if len(call.args) != 2 or not isinstance(call.args[1], n.Name):
        return False
    sym = checker.scope.lookup(call.args[1].id)
    return sym is not None and sym.kind == BUFFER


def _literal_bits_type(v, bits: int):
    """The integer dtype of `bits` bits that holds the literal value `v`, signed first."""
    if v is None or isinstance(v, bool):
        return None
    for dt in (lookup(f"i{bits}"), lookup(f"u{bits}")):
        lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if dt.kind == "int" else (0, (1 << bits) - 1)
        if lo <= v <= hi:
            return dt
    return None


def _children(node):
    if isinstance(node, tuple):
        return node
    slots = getattr(type(node), "__slots__", ())
    return tuple(getattr(node, f) for f in slots if f not in ("span", "ty"))


def _reads(node, names) -> bool:
    stack = [node]
    while stack:
        x = stack.pop()
        if isinstance(x, n.Call) and isinstance(x.func, n.Name) and isinstance(x.func.ty, BuiltinRef) \
                and x.func.ty.name in THREAD_INDEX:
            return True
        if isinstance(x, n.Name) and x.id in names:
            return True
        stack.extend(c for c in _children(x) if c is not None and not isinstance(c, (str, int, float, bool)))
    return False


def _first_name(node, names):
    stack = [node]
    while stack:
        x = stack.pop()
        if isinstance(x, n.Name) and x.id in names:
            return x
        stack.extend(reversed([c for c in _children(x) if c is not None and not isinstance(c, (str, int, float, bool))]))
    return None
