"""Typed AST of one specialized @kernel -> tile IR, before any scheduling decision.

Owns the translation of each construct: explicit casts wherever a value changes dtype (the IR
never converts implicitly), constants inlined as literals, per-thread variables hoisted to the
top of their block (Python scoping, C declarations), device functions inlined, regions of
copies given their extents from the other side.
"""
from __future__ import annotations

import itertools
import re
from dataclasses import replace

from .. import ir
from ..ir import walk
from . import const_cond, copy_global, copy_parts
from .cumsum import ScanLowerer
from . import im2col, views
from .param_dims import param_dim
from ..dtypes import BOOL, I32, DType
from ..parser import nodes as n
from ..typecheck import CheckedFunction
from ..typecheck import consteval, rules
from ..typecheck.literals import int_range
from ..typecheck.types import ScalarType, TensorType
from .persistent import PersistentLowerer
from .porting import PortingLowerer

_MATH = frozenset(ir.MATH_FUNCS) - {"pow", "fmod", "atan2"}


class LoweringError(Exception):
    """A construct the scheduler cannot lower yet (E068), or a value it cannot hold (`code`);
    carries a span and a hint for a diagnostic."""

    def __init__(self, message: str, span, code: str = "E068", hint: str | None = None):
        super().__init__(message)
        self.span, self.code, self.hint = span, code, hint


INDEX_LIMIT = (1 << 31) - 1  # past the end of any dimension: each fits an i32


def index_i32(e: ir.Expr, extent: int | None = None) -> ir.Expr:
    """An element index, or the offset of a region `extent` long, as the i32 the IR indexes
    with.  A 64-bit value is clamped first, so that one outside its dimension stays outside
    and the bounds checks read 0 and write nothing: an index into [-1, 2^31 - 1], an offset
    into [-extent, 2^31 - 1 - extent] (whose region, offset + extent, still fits an i32).  A
    plain conversion wrapped 2^32 + 3 to 3, an element in range, on both targets."""
    if not (e.dtype.is_int and e.dtype.bits > 32):
        return cast(e, I32)
    low, high = (-1, INDEX_LIMIT) if extent is None else (-extent, INDEX_LIMIT - extent)
    if isinstance(e, ir.Const):
        return ir.Const(min(max(int(e.value), low), high), I32, span=e.span)
    clamped = ir.BinOp("min", e, ir.Const(high, e.dtype), e.dtype)
    if e.dtype.kind == "int":
        clamped = ir.BinOp("max", clamped, ir.Const(low, e.dtype), e.dtype)
    return cast(clamped, I32)


def cast(e: ir.Expr, dt: DType) -> ir.Expr:
    if e.dtype == dt:
        return e
    if isinstance(e, ir.Const):
        return ir.Const(e.value, dt, span=e.span)
    if isinstance(e, ir.Call) and e.fn == "abs" and e.dtype.is_float and dt.is_float and dt.bits > e.dtype.bits:
        # |x| widened is |x widened|, exactly: the abs in the wider type, not in the narrow one and
        # rounded to it first (f32(abs(x)) of f16 x was fabsf, F2F to half and back an element:
        # std.reduce's norm_l1_axis0 and norm_inf_axis0)
        return ir.Call("abs", (cast(e.args[0], dt),), dt, span=getattr(e, "span", None))
    return ir.Cast(e, dt, span=getattr(e, "span", None))


def convert(e: ir.Expr, dt: DType, literal: bool) -> ir.Expr:
    """`e` converted into `dt` as an explicit conversion (`u8(x)`, `cast(x, f16)`) converts it: a
    constant's value converted by the language's rules (LANGUAGE.md section 3; a literal is its
    exact number, another constant the value its dtype holds: `f64(f16(0.1))`).  `cast` retypes
    a constant (a literal taking its operand's type, which holds it), so `f32(i8(300))` was 300.0,
    `u8(300.0)` 300 and `f64(f16(0.1))` 0.1 on every target, not 44, 255 and 0.0999755859375."""
    if isinstance(e, ir.Const) and e.dtype != dt:
        value = e.value if literal else _converted(e.value, e.dtype)
        converted = _converted(value, dt) if value is not None else None
        if converted is None:  # (into e8m0: each target's own conversion)
            return ir.Cast(e, dt, span=e.span)
        return ir.Const(converted, dt, span=e.span)
    return cast(e, dt)


def literal_expression(e) -> ir.Const | None:
    """A constant expression of integer literals (`1 << 40`, `2 ** 31`, `-(2 ** 7)`) as the
    literal of its exact value (T11: it takes the dtype of what it meets, which must hold it, or
    E157), or None.  Computed in its own weak i32 it wrapped: `i64(x) + (1 << 40)` added 0 and
    `f64(x) * 10 ** 12` multiplied by -727379968 on every target."""
    t = e.ty
    if not (isinstance(t, ScalarType) and t.weak and t.dtype.kind in ("int", "uint")):
        return None
    try:
        v = consteval.evaluate(e, {})
    except consteval.TooLarge as err:  # wrapped, `f32(2 ** 100)` was 0, and `i64(x) + 2 ** 100` escaped E157
        raise LoweringError("constant too large: this value does not fit in 64 bits", err.node.span, "E150",
                            consteval.RANGE_HINT) from None
    except consteval.NotConstant:
        return None
    return ir.Const(v, t.dtype, span=e.span) if isinstance(v, int) and not isinstance(v, bool) else None


def _converted(value, dt: DType):
    """The number a conversion of `value` into `dt` gives (as the interpreter's numerics.cast
    computes it for arrays): into bool `!= 0`; a float into an integer truncated and saturated,
    NaN 0; an integer into an integer wrapped; into a float rounded to nearest even (f8
    saturating); None for e8m0."""
    import math

    import numpy as np

    if dt.is_bool:
        return value != 0
    if dt.kind in ("int", "uint"):
        if isinstance(value, float):
            if math.isnan(value):
                return 0
            lo, hi = int_range(dt)
            return lo if value <= lo else hi if value >= hi else math.trunc(value)
        return dt.wrap(int(value))
    if dt.name == "e8m0":
        return None
    value = float(value)
    if dt.name.startswith("f8") and not math.isnan(value):  # saturating, as __NV_SATFINITE
        value = min(max(value, -dt.largest_finite()), dt.largest_finite())
    with np.errstate(over="ignore"):
        return float(dt.numpy().type(value))


def _one_test(a: ir.Expr, b: ir.Expr, names) -> bool:
    """Whether `a` and `b` are a shape symbol of `names` and the literal 1, in either order."""
    if isinstance(a, ir.Const):
        a, b = b, a
    return isinstance(a, ir.Var) and a.name in names and isinstance(b, ir.Const) and b.value == 1 \
        and not isinstance(b.value, bool)


class Lowerer(PortingLowerer, PersistentLowerer, ScanLowerer):
    def __init__(self, fn: CheckedFunction, program):
        self.fn, self.program = fn, program
        self.consts = fn.constants
        self.shape_symbols = set(fn.shape_symbols)
        self.params = {p.name: p for p in fn.params}
        self.buffers: dict[str, ir.Buffer] = {}
        self.scalars: dict[str, DType] = {}  # every per-thread scalar visible by name
        self.pending: list[ir.Stmt] = []  # statements an expression needs first (inlined calls)
        self.fresh = itertools.count()
        # Names an inlined call's scalars may not take: every word of the kernel's file (more than
        # its names, never fewer), then each name given out.
        self.taken = set(re.findall(r"\w+", program.sources.get(fn.module_path, "")))
        self.taken |= {p.name for p in fn.params} | {name for name, _, _ in _first_assignments(fn.body, True)}
        self.in_parallel = False
        self.renames: list[dict[str, str]] = []  # device-function parameter renames, innermost last

    # ---- kernel --------------------------------------------------------------------------------
    def kernel(self, index: int = 0) -> ir.Kernel:
        """The kernel of the `index`th grid of the function (each grid is one launch)."""
        at = [i for i, s in enumerate(self.fn.body) if isinstance(s, n.With)][index]
        grid_stmt = self.fn.body[at]
        if index < len(self.fn.grid_constants):  # the constants assigned in this grid
            self.consts = {**self.consts, **self.fn.grid_constants[index]}
        params = tuple(self._param(p) for p in self.fn.params if p.role in ("tensor", "scalar")) \
            + tuple(self._param(w) for w in self.fn.workspaces)  # alloc_global: after the parameters
        for p in self.fn.params:
            if p.role == "scalar":
                self.scalars[p.name] = p.type.dtype
        for s in self.shape_symbols:
            self.scalars[s] = I32
        ctx = grid_stmt.context
        # values assigned before the grid (LANGUAGE.md section 2): computed at the top of its body,
        # and by the launch where the grid reads them
        prelude = tuple(s for s in self.fn.body[:at] if isinstance(s, n.Assign))
        grid = tuple(cast(self.expr(_substituted(a, {s.target.id: s.value for s in prelude})), I32) for a in ctx.args)
        threads = next((self.const(k.value) for k in ctx.keywords if k.name == "threads"), 128)  # TileLang's default
        self.threads = int(threads)
        blocks = next((self.const(k.value) for k in ctx.keywords if k.name == "blocks_per_sm"), 0)
        dequant = next((self.const(k.value) for k in ctx.keywords if k.name == "dequant_ring"), False)
        tiles = next((self.const(k.value) for k in ctx.keywords if k.name == "persistent_tiles"), False)
        block_vars = tuple(t.id for t in grid_stmt.targets)
        for b in block_vars:
            self.scalars[b] = I32
        body = self.block(prelude + grid_stmt.body, hoist=True)
        block_vars, body = self.swizzled(block_vars, grid, body)  # use_swizzle (porting.py)
        constants = tuple(sorted((k, v) for k, v in self.consts.items()
                                 if self.fn.param(k) is not None and self.fn.param(k).role in ("const", "dtype")))
        body = views.resolve(self, body)
        body, buffers = without_unread(body, tuple(self.buffers.values()))
        return ir.Kernel(self.fn.name, params, grid[::1], block_vars, int(threads), buffers, body, constants,
                         min_blocks=int(blocks), dequant_ring=bool(dequant), persistent_tiles=bool(tiles), notes=tuple(self.__dict__.get("notes", ())), span=self.fn.node.name_span)

    def _param(self, p) -> ir.Param:
        if p.role == "scalar":
            return ir.Param(p.name, "scalar", p.type.dtype, span=p.span)
        dims = tuple(param_dim(d, self.consts, self.shape_symbols) for d in p.type.shape)  # K // 2 too
        return ir.Param(p.name, "tensor", p.type.dtype, dims, span=p.span)

    def const(self, e):
        from ..typecheck.consteval import evaluate
        return evaluate(e, self.consts)

    # ---- statements ------------------------------------------------------------------------------
    def block(self, stmts, hoist: bool = False) -> tuple:
        """Lower a statement list; with `hoist`, declare the scalars first assigned in it (outside
        nested parallel loops) at its top, so that every later use sees them as in Python."""
        out: list[ir.Stmt] = []
        if hoist:
            for name, dt, span in _first_assignments(stmts):
                if name in self.scalars or name in self.buffers:
                    continue
                self.scalars[name] = dt
                out.append(ir.LetScalar(name, dt, ir.Const(0, dt), span=span))
        for s in stmts:
            lowered = self.stmt(s)
            out.extend(self.pending)
            self.pending = []
            if lowered is None:
                continue
            out.extend(lowered if isinstance(lowered, list) else [lowered])
        return tuple(out)

    def stmt(self, s):
        return getattr(self, "stmt_" + type(s).__name__)(s)

    def stmt_Pass(self, s):
        return None

    def stmt_Break(self, s):
        return ir.Break(span=s.span)

    def stmt_Continue(self, s):
        return ir.Continue(span=s.span)

    def stmt_Return(self, s):
        raise LoweringError("'return' is only lowered inside inlined device functions", s.span)

    def stmt_Assign(self, s: n.Assign):
        if views.is_declaration(s):  # x_flat = view(x, ...): its accesses are x's (views.py)
            return views.declare(self, s)
        if _allocates(s):
            t = s.target.ty
            self.buffers[s.target.id] = ir.Buffer(s.target.id, t.scope, t.dtype,
                                                  tuple(int(self.const(d)) for d in t.shape), span=s.span)
            return None
        if isinstance(s.target, n.Subscript):
            name = s.target.value.id
            idx = self.indices(s.target.indices)
            return ir.Store(name, idx, cast(self.expr(s.value), s.target.ty.dtype), span=s.span)
        name = self.name(s.target.id)
        return ir.Assign(name, cast(self.expr(s.value), self.scalars[name]), span=s.span)

    def stmt_AugAssign(self, s: n.AugAssign):
        target = s.target
        current = self.expr(target)
        value = self.expr(s.value)
        combined = self.binop(s.op, current, value, target.ty, s.value.ty, s.span)
        if isinstance(target, n.Subscript):
            return ir.Store(target.value.id, self.indices(target.indices), cast(combined, target.ty.dtype), span=s.span)
        name = self.name(target.id)
        return ir.Assign(name, cast(combined, self.scalars[name]), span=s.span)

    def stmt_If(self, s: n.If):
        cond = self.condition(s.test)
        # what the test's inlined calls need runs before the `if` (the caller's block places
        # self.pending there), not at the top of the branch that lowering the body flushes it into
        before, self.pending = self.pending, []
        known = _known(cond)
        if known is not None:  # a test of bound constants (std.data.permute's `if P3 == 3:`): the taken branch
            self.declare_buffers(s.orelse if known else s.body)
            out = list(self.block(s.body if known else s.orelse))
        else:
            out = ir.If(cond, self.block(s.body), self.block(s.orelse), span=s.span)
        self.pending = before
        return out

    def declare_buffers(self, body) -> None:
        """The buffers allocated in a branch that a test of constants leaves out: the checker
        lets code after the `if` use them (an allocation is static), so they exist, unused by the
        branch (mutate seed 5215: `if False: mean = fragment(...)`, then `clear(mean)`, was a
        KeyError)."""
        for s in body:
            if isinstance(s, n.Assign) and not views.is_declaration(s) and _allocates(s):
                self.stmt_Assign(s)
            elif isinstance(s, n.If):
                self.declare_buffers(s.body)
                self.declare_buffers(s.orelse)

    def stmt_For(self, s: n.For):
        fresh = self.loop_variables(s)  # porting.py: an index an enclosing loop already uses is renamed
        if fresh is not None:
            return fresh
        kind = s.iter.func.id
        args = s.iter.args
        if kind == "parallel":
            extents = tuple(int(self.const(a)) for a in args)
            names = tuple(t.id for t in s.targets)
            saved = dict(self.scalars)
            for v in names:
                self.scalars[v] = I32
            self.in_parallel = True
            body = self.block(s.body, hoist=True)
            self.in_parallel = False
            self.scalars = saved
            return ir.Parallel(names, extents, body, span=s.span)
        if kind == "persistent":
            return self.persistent_loop(s)  # persistent.py
        var = s.targets[0].id
        had = self.scalars.get(var)
        self.scalars[var] = I32
        try:
            return self._serial_loop(s, kind, var, args)
        finally:  # a loop variable exists only inside its loop: a later `var = ...` declares its own
            if had is None:
                del self.scalars[var]
            else:
                self.scalars[var] = had

    def _serial_loop(self, s: n.For, kind: str, var: str, args):
        if kind == "range":
            lowered = [cast(self.expr(a), I32) for a in args]
            start, stop, step = (ir.Const(0, I32), lowered[0], ir.Const(1, I32)) if len(lowered) == 1 else \
                (lowered[0], lowered[1], lowered[2] if len(lowered) == 3 else ir.Const(1, I32))
            return ir.For(var, start, stop, step, "serial", 1, self.block(s.body), span=s.span)
        if kind == "pipelined" and len(args) == 2:  # pipelined(start, stop): porting.py
            return self.pipelined_range(s, var)
        count = cast(self.expr(args[0]), I32)
        stages = 1
        if kind == "pipelined":
            stages = next((int(self.const(k.value)) for k in s.iter.keywords if k.name in ("stages", "num_stages")), 2)
            stages = max(stages, 1)  # stages=0, TileLang's loop without prefetch, is one stage
        kind_ir = "unroll" if kind == "unroll" else "pipelined"
        return ir.For(var, ir.Const(0, I32), count, ir.Const(1, I32), kind_ir, stages, self.block(s.body), span=s.span)

    def stmt_ExprStmt(self, s: n.ExprStmt):
        call = s.expr
        if isinstance(call, n.Call) and isinstance(call.func, n.Name) and type(call.func.ty).__name__ == "BuiltinRef":
            return getattr(self, "tile_" + call.func.id.split("_")[0])(call, s.span)
        self.expr(call)  # a device-function call for its effects (print)
        return None

    # ---- tile statements -------------------------------------------------------------------------
    def tile_copy(self, call, span):
        src, dst = call.args
        src_shape, dst_shape = self._operand_shape(src), self._operand_shape(dst)
        copy = ir.Copy(self.operand(src, dst_shape), self.operand(dst, src_shape), span=span)
        if views.touches(self, copy):  # a view's side as a region in its shape, or element by element (views.py)
            return views.copy_as_region(self, copy) or views.copy_as_loop(self, copy)
        dtypes = {p.name: p.type.dtype for p in (*self.fn.tensor_params, *self.fn.workspaces)}  # alloc_global too
        if copy_global.is_global_to_global(copy, self.buffers):  # dQ[rows, :] into dQ_out[rows, :]
            return copy_global.as_copies(copy, self.buffers, dtypes, self.threads, self._fresh_name, self._fresh_indices)
        if copy_parts.is_part(copy, self.buffers):  # lse[k, :]: a part of a buffer, element by element
            return copy_parts.as_loop(copy, self.buffers, dtypes, self._fresh_indices)
        return copy

    def _fresh_name(self, stem: str) -> str:
        name = stem
        while name in self.taken:
            name = f"{stem}_{next(self.fresh)}"
        self.taken.add(name)
        return name

    def _fresh_indices(self, count: int) -> list[str]:
        names = []
        for axis in range(count):
            name = f"copy_{axis}"
            while name in self.taken:
                name = f"copy_{axis}_{next(self.fresh)}"
            self.taken.add(name)
            names.append(name)
        return names

    def _operand_shape(self, e):
        if isinstance(e, n.Name) and e.id in self.buffers:
            return self.buffers[e.id].shape
        if isinstance(e, n.Subscript):  # the dimensions it moves: not those a single index drops
            return tuple(None if d is None else int(self.const(d)) for x, d in zip(e.indices, e.ty.shape)
                         if isinstance(x, n.Slice) or d is None)
        return tuple(None for _ in e.ty.shape)

    def operand(self, e, other_shape):
        if isinstance(e, n.Name):
            if e.id in self.buffers:
                return ir.BufferRef(e.id, span=e.span)
            extents = tuple(other_shape)
            return ir.Region(e.id, tuple(ir.Const(0, I32) for _ in extents), extents, span=e.span)
        offsets, extents = [], []
        # The checker gave a single index that drops its dimension the extent 1; the others
        # without an extent line up with the other side's dimensions, in order.
        moved = [i for i, (x, d) in enumerate(zip(e.indices, e.ty.shape)) if isinstance(x, n.Slice) or d is None]
        other = dict(zip(moved, other_shape)) if len(moved) == len(other_shape) else {}
        for i, (idx, ext) in enumerate(zip(e.indices, e.ty.shape)):
            extents.append(int(self.const(ext)) if ext is not None else other.get(i))
            if isinstance(idx, n.Slice):
                offsets.append(index_i32(self.expr(idx.lower), extents[-1] or 1) if idx.lower is not None
                               else ir.Const(0, I32))
            else:
                offsets.append(index_i32(self.expr(idx), extents[-1] or 1))
        if any(x is None for x in extents):
            raise LoweringError("copy cannot tell the extent of this region", e.span)
        return ir.Region(e.value.id, tuple(offsets), tuple(extents), span=e.span)

    def tile_im2col(self, call, span):
        return im2col.lower(self, call, span)

    def tile_gemm(self, call, span):
        flags = {k.name: bool(self.const(k.value)) for k in call.keywords if k.name in ("trans_a", "trans_b")}
        precision = next((k.value.value for k in call.keywords if k.name == "precision"), "ieee")
        a, b, c = (x.id for x in call.args)
        before = self.tile_gemm_extras(call, c)  # porting.py: TileLang's clear_accum=True; hints noted
        gemm = ir.Gemm(a, b, c, flags.get("trans_a", False), flags.get("trans_b", False), precision, span=span)
        return [*before, gemm] if before else gemm

    def tile_fill(self, call, span):
        buf = self.buffers[call.args[0].id]
        return ir.Fill(buf.name, cast(self.expr(call.args[1]), buf.dtype), span=span)

    def tile_clear(self, call, span):
        buf = self.buffers[call.args[0].id]
        return ir.Fill(buf.name, ir.Const(0, buf.dtype), span=span)

    def tile_reduce(self, call, span):
        kw = {k.name: self.const(k.value) for k in call.keywords}
        src, dst = call.args
        rank = len(self.buffers[src.id].shape)
        dim = int(kw.get("dim", -1)) % rank  # TileLang's default: the last dimension
        return ir.Reduce(call.func.id.split("_", 1)[1], src.id, dst.id, dim, bool(kw.get("clear", True)), span=span)

    def tile_atomic(self, call, span):
        target, value = call.args
        if isinstance(value, n.Name) and value.id in self.buffers:  # a whole tile (porting.py)
            return self.tile_atomic_region(call, span)
        return ir.Atomic(call.func.id.split("_", 1)[1], target.value.id, self.indices(target.indices),
                         cast(self.expr(value), target.ty.dtype), span=span)

    def tile_sync(self, call, span):
        return ir.Sync(span=span)

    def tile_print(self, call, span):
        return ir.Print(call.args[0].value, tuple(self.expr(a) for a in call.args[1:]), self.in_parallel, span=span)

    def tile_device(self, call, span):  # device_assert
        if const_cond.truth(self.condition(call.args[0])) is True:
            return None  # decided by constants and true: nothing to check after each launch (const_cond.py)
        return ir.Assert(call.args[1].value, tuple(self.expr(a) for a in call.args[2:]), self.in_parallel, span=span,
                         cond=self.condition(call.args[0]))

    # ---- expressions -------------------------------------------------------------------------------
    def name(self, name: str) -> str:
        for renames in reversed(self.renames):
            if name in renames:
                return renames[name]
        return name

    def indices(self, idx) -> tuple:
        return tuple(index_i32(self.expr(i)) for i in idx)

    def condition(self, e) -> ir.Expr:
        v = self.expr(e)
        if v.dtype == BOOL:
            return v
        return ir.BinOp("!=", v, ir.Const(0, v.dtype), BOOL, span=getattr(e, "span", None))

    def expr(self, e) -> ir.Expr:
        return getattr(self, "expr_" + type(e).__name__)(e)

    def expr_Name(self, e: n.Name):
        name = self.name(e.id)
        if name in self.__dict__.get("shifted", ()):  # the index of pipelined(start, stop): porting.py
            return self.shifted[name]
        if name in self.scalars:
            return ir.Var(name, self.scalars[name], span=e.span)
        if e.id in self.consts:
            return ir.Const(self.consts[e.id], e.ty.dtype, span=e.span)
        raise LoweringError(f"'{e.id}' cannot be used as a value here", e.span)

    def expr_Constant(self, e: n.Constant):
        return ir.Const(e.value, e.ty.dtype, span=e.span)

    def expr_Subscript(self, e: n.Subscript):
        return ir.Load(e.value.id, self.indices(e.indices), e.ty.dtype, span=e.span)

    def binop(self, op, a: ir.Expr, b: ir.Expr, ta, tb, span) -> ir.Expr:
        if op in ("==", "!=") and self.fn.not_one and _one_test(a, b, self.fn.not_one):
            return ir.Const(op == "!=", BOOL, span=span)  # a size bound as not 1 (CheckedFunction.ones)
        if op in ("==", "!=", "<", "<=", ">", ">="):
            dt = rules.combine(ta, tb)
            return ir.BinOp(op, cast(a, dt), cast(b, dt), BOOL, span=span)
        dt = rules.arithmetic(op, ta, tb)  # `/` of integers is already f32 here (rule T3)
        a, b = cast(a, dt), cast(b, dt)
        if (folded := _folded_int(op, a, b, dt)) is not None:
            return ir.Const(folded, dt, span=span)
        return ir.BinOp(op, a, b, dt, span=span)

    def expr_BinOp(self, e: n.BinOp):
        if (literal := literal_expression(e)) is not None:
            return literal
        return self.binop(e.op, self.expr(e.left), self.expr(e.right), e.left.ty, e.right.ty, e.span)

    def expr_UnaryOp(self, e: n.UnaryOp):
        if (literal := literal_expression(e)) is not None:
            return literal
        if e.op == "not":
            return ir.UnaryOp("not", self.condition(e.operand), BOOL, span=e.span)
        x = cast(self.expr(e.operand), e.ty.dtype)
        if e.op == "+":
            return x
        return ir.UnaryOp(e.op, x, e.ty.dtype, span=e.span)

    def expr_BoolOp(self, e: n.BoolOp):
        values = [self.condition(v) for v in e.values]
        out = values[0]
        for v in values[1:]:
            out = ir.BinOp(e.op, out, v, BOOL, span=e.span)
        return out

    def expr_Compare(self, e: n.Compare):
        parts = []
        for op, a, b in zip(e.ops, e.operands, e.operands[1:]):
            parts.append(self.binop(op, self.expr(a), self.expr(b), a.ty, b.ty, e.span))
        out = parts[0]
        for p in parts[1:]:
            out = ir.BinOp("and", out, p, BOOL, span=e.span)
        return out

    def expr_IfExp(self, e: n.IfExp):
        dt = e.ty.dtype
        return ir.Select(self.condition(e.test), cast(self.expr(e.body), dt), cast(self.expr(e.orelse), dt), dt, span=e.span)

    def expr_Call(self, e: n.Call):
        ref = e.func.ty
        kind = type(ref).__name__
        if kind == "DTypeValue":
            return convert(self.expr(e.args[0]), ref.dtype, getattr(e.args[0].ty, "weak", False))
        if kind == "FunctionRef":
            return self.inline(e, ref.qualname)
        name = ref.name
        dt = e.ty.dtype
        if name == "cast":
            return convert(self.expr(e.args[0]), dt, getattr(e.args[0].ty, "weak", False))
        if name == "inf":
            return ir.Const(float("inf"), dt, span=e.span)
        ported = self.porting_call(e, name, dt)  # clamp, reinterpret, max_value, thread_index (porting.py)
        if ported is not None:
            return ported
        args = [self.expr(a) for a in e.args]
        if name in ("min", "max"):
            out = cast(args[0], dt)
            for a in args[1:]:
                out = ir.BinOp(name, out, cast(a, dt), dt, span=e.span)
            return out
        if name == "cdiv":
            a, b = cast(args[0], dt), cast(args[1], dt)
            if dt.kind == "uint":  # a - 1 wraps at a = 0
                rem = ir.BinOp("!=", ir.BinOp("%", a, b, dt), ir.Const(0, dt), BOOL)
                return ir.BinOp("+", ir.BinOp("//", a, b, dt), cast(rem, dt), dt, span=e.span)
            if isinstance(b, ir.Const) and b.value > 0:  # a size near 2^31 - 1 plus b would overflow an int
                return ir.BinOp("+", ir.BinOp("//", ir.BinOp("-", a, ir.Const(1, dt), dt), b, dt), ir.Const(1, dt), dt,
                                span=e.span)
            # any sign of b, as the constant evaluator's -(-a // b): (a + b - 1) // b was 0 for cdiv(3, -2)
            return ir.UnaryOp("-", ir.BinOp("//", ir.UnaryOp("-", a, dt), b, dt), dt, span=e.span)
        if name == "where":
            return ir.Select(self.condition(e.args[0]), cast(args[1], dt), cast(args[2], dt), dt, span=e.span)
        if name in ("pow", "fmod", "atan2"):
            return ir.Call(name, (cast(args[0], dt), cast(args[1], dt)), dt, span=e.span)
        if name in _MATH:
            return ir.Call(name, (cast(args[0], dt),), dt, span=e.span)
        raise LoweringError(f"{name}() cannot be lowered here", e.span)

    # ---- device functions ------------------------------------------------------------------------
    def inline(self, call: n.Call, qualname: str) -> ir.Expr:
        """Inline a device function: its parameters and locals become fresh scalars, its returns
        assignments to a fresh result, and the statements go before the current statement."""
        callee = self.program.functions[qualname]
        local = [(name, dt, span) for name, dt, span in _first_assignments(callee.body, include_parallel=True)
                 if name not in {p.name for p in callee.params}]
        # `<callee>_<k>_<name>`, with the first k that takes no name of the kernel or of an earlier
        # call (a user's `gelu_0_x` beside gelu(x)); the result is `..._return`, which no
        # parameter or local can be called (a keyword).
        while True:
            tag = f"{callee.name}_{next(self.fresh)}"
            renames = {name: f"{tag}_{name}" for name in [p.name for p in callee.params] + [x[0] for x in local]}
            result = f"{tag}_return"
            returned = f"{tag}_returned"  # the flag of an early return, where one is needed
            if not self.taken & {*renames.values(), result, returned} and returned not in renames.values():
                break
        self.taken |= {*renames.values(), result, returned}
        args = [self.expr(a) for a in call.args]
        for p, a in zip(callee.params, args):
            self.scalars[renames[p.name]] = p.type.dtype
            self.pending.append(ir.LetScalar(renames[p.name], p.type.dtype, cast(a, p.type.dtype), span=call.span))
        for name, dt, span in local:
            self.scalars[renames[name]] = dt
            self.pending.append(ir.LetScalar(renames[name], dt, ir.Const(0, dt), span=span))
        ret = callee.returns.dtype if callee.returns is not None else None
        if ret is not None:
            self.scalars[result] = ret
            self.pending.append(ir.LetScalar(result, ret, ir.Const(0, ret), span=call.span))
        outer_pending, self.pending = self.pending, []
        saved_consts = self.consts
        self.consts = {**callee.constants, **{k: v for k, v in saved_consts.items() if k not in callee.constants}}
        self.renames.append(renames)
        exit = {"flag": returned, "used": False}
        body = self._returning_block(list(callee.body), result, ret, exit)
        self.renames.pop()
        self.consts = saved_consts
        if exit["used"]:
            self.scalars[returned] = BOOL
            outer_pending.append(ir.LetScalar(returned, BOOL, ir.Const(False, BOOL), span=call.span))
        self.pending = outer_pending + self.pending + list(body)
        return ir.Var(result, ret, span=call.span) if ret is not None else ir.Const(0, I32)

    def _returning_block(self, stmts, result, ret, exit: dict) -> tuple:
        """`stmts` of an inlined device function, each `return` an assignment to `result`.  The
        statements after an `if` that may return go into both of its branches while none of
        them is another such `if`; otherwise they would be copied at every such `if`, 2^k copies
        for k of them, so they run instead while the flag `exit["flag"]` is unset, which every
        `return` sets from then on (`exit["used"]`)."""
        out: list = []
        guard = None  # the condition of the statements after an early return

        def emit(part):
            if guard is not None and part:
                out.append(ir.If(guard, tuple(part), ()))
            else:
                out.extend(part)

        for i, s in enumerate(stmts):
            if isinstance(s, n.Return):
                part = []
                if s.value is not None:
                    value = cast(self.expr(s.value), ret)
                    part, self.pending = self.pending + [ir.Assign(result, value, span=s.span)], []
                if exit["used"]:
                    part.append(ir.Assign(exit["flag"], ir.Const(True, BOOL), span=s.span))
                emit(part)
                return tuple(out)
            if isinstance(s, n.If) and _may_return(s):
                rest = stmts[i + 1:]
                flagged = any(_may_return(x) for x in rest if not isinstance(x, n.Return))
                exit["used"] = exit["used"] or flagged
                copied = [] if flagged else rest
                cond = self.condition(s.test)
                part, self.pending = self.pending, []
                then = self._returning_block(list(s.body) + copied, result, ret, exit)
                orelse = self._returning_block(list(s.orelse) + copied, result, ret, exit)
                emit(part + [ir.If(cond, then, orelse, span=s.span)])
                if not flagged:
                    return tuple(out)
                guard = ir.UnaryOp("not", ir.Var(exit["flag"], BOOL), BOOL)
                continue
            if _may_return(s):
                raise LoweringError("'return' inside a loop of a device function cannot be inlined yet; "
                                    "assign to a variable and return after the loop", s.span)
            lowered = self.stmt(s)
            part, self.pending = self.pending, []
            if lowered is not None:
                part.extend(lowered if isinstance(lowered, list) else [lowered])
            emit(part)
        return tuple(out)


_COMPARE = {"==": lambda a, b: a == b, "!=": lambda a, b: a != b, "<": lambda a, b: a < b, "<=": lambda a, b: a <= b,
            ">": lambda a, b: a > b, ">=": lambda a, b: a >= b, "and": lambda a, b: a and b, "or": lambda a, b: a or b}


def _known(e: ir.Expr) -> bool | None:
    """The value of a condition of constants only (a kernel's constants bound), else None: its
    branch not taken is never lowered, so that the scheduler's estimates (blocks_per_sm's
    scalars) and --emit ir see only the code that runs."""
    if isinstance(e, ir.Const):
        return bool(e.value)
    if isinstance(e, ir.UnaryOp) and e.op == "not":
        x = _known(e.x)
        return None if x is None else not x
    if isinstance(e, ir.BinOp) and e.op in _COMPARE:
        if e.op in ("and", "or"):
            a, b = _known(e.a), _known(e.b)
            return None if a is None or b is None else _COMPARE[e.op](a, b)
        if isinstance(e.a, ir.Const) and isinstance(e.b, ir.Const):
            return bool(_COMPARE[e.op](e.a.value, e.b.value))
    return None


_INT_FOLDS = {"+": lambda a, b: a + b, "-": lambda a, b: a - b, "*": lambda a, b: a * b,
              "//": lambda a, b: a // b, "%": lambda a, b: a % b}


def _folded_int(op: str, a: ir.Expr, b: ir.Expr, dt: DType) -> int | None:
    """The value of `a op b` for integer constants a and b where it is a value of `dt` (Python's
    floor division and remainder, the IR's; a division by 0 or a result that would wrap stays an
    operation), else None.  std.broadcast's `BN // 8` is then the constant 512: as a BinOp,
    cdiv(D3, BN // 8) lowered to the division of a negated size, and codegen/whole_runs.py took
    `bx % ... * (BN // 8)` for any multiple, so that the kernel did not qualify for TL_WHOLE_RUNS."""
    if op not in _INT_FOLDS or dt.kind not in ("int", "uint"):
        return None
    if not (isinstance(a, ir.Const) and isinstance(b, ir.Const)):
        return None
    if op in ("//", "%") and b.value == 0:
        return None
    value = _INT_FOLDS[op](int(a.value), int(b.value))
    lo, hi = (0, 2 ** dt.bits - 1) if dt.kind == "uint" else (-(2 ** (dt.bits - 1)), 2 ** (dt.bits - 1) - 1)
    return value if lo <= value <= hi else None


def _may_return(s) -> bool:
    if isinstance(s, n.Return):
        return True
    for field in ("body", "orelse"):
        if any(_may_return(x) for x in getattr(s, field, ())):
            return True
    return False


def _allocates(s: n.Assign) -> bool:
    """Whether `s` allocates a buffer (`x = fragment(...)`, shared, local)."""
    return isinstance(s.target.ty, TensorType) and s.target.ty.scope in ("shared", "fragment", "local")


def without_unread(body: tuple, buffers: tuple) -> tuple[tuple, tuple]:
    """(body, buffers) without the buffers and per-thread scalars that nothing reads, and the
    statements that only write them.  Their C would be a variable declared or set but never
    used, nvcc's warnings 177 and 550 (errors under -Werror); expressions have no side
    effects, so dropping them changes nothing else."""
    own = {b.name for b in buffers} | {s.name for s in walk.statements(body) if isinstance(s, ir.LetScalar)}
    while True:
        dead = own - _read_names(body)
        if not dead:
            return body, buffers
        body = _drop_writes(body, dead)
        buffers = tuple(b for b in buffers if b.name not in dead)
        own -= dead


def _read_names(body) -> set:
    reads = set()
    for s in walk.statements(body):
        for e in walk.statement_exprs(s):
            reads.update(x.name for x in walk.subexprs(e) if isinstance(x, (ir.Var, ir.Load)))
        if isinstance(s, ir.Copy):
            reads.add(s.src.name)
        elif isinstance(s, ir.Gemm):
            reads.update((s.a, s.b, s.c))
        elif isinstance(s, ir.Reduce):
            reads.update((s.src,) if s.clear else (s.src, s.dst))
        elif isinstance(s, ir.Scan):
            reads.add(s.src)
        elif isinstance(s, ir.Atomic):  # read, modified and written: kept as it is
            reads.add(s.name)
    return reads


def _drop_writes(body: tuple, dead: set) -> tuple:
    out = []
    for s in body:
        target = (s.dst.name if isinstance(s, ir.Copy) else s.buffer if isinstance(s, ir.Fill) else
                  s.dst if isinstance(s, (ir.Reduce, ir.Scan)) else
                  s.name if isinstance(s, (ir.LetScalar, ir.Assign, ir.Store)) else None)
        if target in dead:
            continue
        nested = {f: _drop_writes(getattr(s, f), dead) for f in ("body", "then", "orelse") if hasattr(s, f)}
        out.append(replace(s, **nested) if nested else s)
    return tuple(out)


def _substituted(e, values: dict):
    """`e` with the names in `values` replaced by their values, themselves substituted (each was
    assigned once, before the grid, from what came before it)."""
    if isinstance(e, n.Name) and e.id in values:
        return _substituted(values[e.id], values)
    if not hasattr(e, "__dataclass_fields__") or isinstance(e, n.Name):
        return e
    changes = {}
    for f in e.__dataclass_fields__:
        v = getattr(e, f)
        if f in ("span", "ty"):
            continue
        if isinstance(v, tuple):
            new = tuple(_substituted(x, values) for x in v)
        else:
            new = _substituted(v, values)
        if new is not v and new != v:
            changes[f] = new
    return n.replace(e, **changes) if changes else e


def _first_assignments(stmts, include_parallel: bool = False):
    """(name, dtype, span) of each scalar first assigned in `stmts`, in order; a parallel loop's
    own scalars belong to it and are skipped unless `include_parallel`."""
    seen: dict = {}

    def walk(body):
        for s in body:
            if isinstance(s, n.Assign) and isinstance(s.target, n.Name) and isinstance(s.target.ty, ScalarType):
                if s.target.id not in seen:
                    seen[s.target.id] = (s.target.id, s.target.ty.dtype, s.span)
            elif isinstance(s, n.For):
                if s.iter.func.id == "parallel" and not include_parallel:
                    continue
                walk(s.body)
            elif isinstance(s, n.If):
                walk(s.body)
                walk(s.orelse)
            elif isinstance(s, (n.With, n.While)):
                walk(s.body)

    walk(stmts)
    return list(seen.values())
