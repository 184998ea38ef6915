"""The interpreter's executor: runs a kernel's statements block by block over the grid.

Owns the execution model.  Outside `Parallel`, a statement runs once per block (every thread
would do the same thing; an atomic or a store happens once).  A `Parallel` runs its body once
with each index variable bound to a broadcast `np.arange`, so every per-thread value inside it
is an array over the parallel extents.  Control flow inside it is masked: `If` runs each branch
under the lanes that take it, a serial loop runs until its last lane is done, and `break` /
`continue` switch lanes off.  The same code runs uniform code, where a mask is a Python bool.

Per-thread state written inside a `Parallel` belongs to one run of its body (the verifier
enforces this): `LetScalar`s there are arrays, and a local buffer gets a private copy per index.
Buffers start as NaN (integers as 0), so a read before any write shows on the CPU as well.

The thread index (`thread_index()`, outside parallel loops only) is a lane per thread of the
block: `np.arange(threads)`.  What is computed from it is an array over the threads, and the
same masked execution runs the statements that read it once per thread, as the GPU does.
"""
from __future__ import annotations

import re
import sys
from dataclasses import replace

import numpy as np

from .. import device_assert, print_format
from ..dtypes import DType
from ..ir.nodes import (Assign, Atomic, BinOp, Break, BufferRef, Call, Cast, Const, Continue, Copy,
                        Fill, For, Gemm, If, Kernel, LetScalar, Load, Parallel, Print, Reduce, Assert,
                        Scan, Select, Store, Sync, UnaryOp, Var)
from ..runtime.grid import GridError, grid_extents, launches_blocks
from . import numerics as nx
from . import scan, tiles
from .args import Bound, InterpError
from .ring import run_warp_specialized


# The interpreter stops a `while` loop at this many iterations (LANGUAGE.md section 2): a loop
# that runs longer is most likely endless, and a CPU test should fail, not hang.
WHILE_LIMIT = 1 << 20


class _Loop:
    """Control state of the innermost serial loop: lanes that broke, lanes that continued."""

    __slots__ = ("broken", "continued")

    def __init__(self) -> None:
        self.broken = False
        self.continued = False


def _and(a, b):
    if a is True:
        return b
    if b is True:
        return a
    if a is False or b is False:
        return False
    return np.logical_and(a, b)


def _or(a, b):
    if a is False:
        return b
    if b is False:
        return a
    if a is True or b is True:
        return True
    return np.logical_or(a, b)


def _and_not(a, b):
    if b is False:
        return a
    if b is True:
        return False
    return np.logical_not(b) if a is True else np.logical_and(a, np.logical_not(b))


def _any(m) -> bool:
    return m if isinstance(m, bool) else bool(m.any())


def _uniform(v) -> bool:
    try:  # np.ndim(v), without its dispatch: this runs for most statements and loads
        return v.ndim == 0
    except AttributeError:  # a Python bool (a mask) or number
        return np.ndim(v) == 0


# C printf conversions; Python's % formatting takes them without C's length modifiers
_PRINTF = re.compile(r"%([-+ #0]*\d*(?:\.\d+)?)(?:hh|h|ll|l|L|z|j|t)?([diouxXeEfFgGcs%])")


def _numbers(values) -> list:
    return [float(v) if nx.dtype_of(v).is_float else int(v) for v in values]


def _printf(fmt: str, values) -> str:
    py_fmt = _PRINTF.sub(lambda m: f"%{m.group(1)}{'d' if m.group(2) == 'u' else m.group(2)}", fmt)
    args = tuple(float(v) if nx.dtype_of(v).is_float else int(v) for v in values)
    try:
        return print_format.as_line(py_fmt) % args
    except (TypeError, ValueError) as e:
        raise InterpError(f"print format {fmt!r} does not fit its {len(args)} "
                          f"argument{'s' * (len(args) != 1)}: {e}") from None


class Machine:
    def __init__(self, kernel: Kernel, bound: Bound):
        self.k = kernel
        self.tensors = bound.tensors
        self.base_env = dict(bound.scalars)
        self.constants = {n: v for n, v in kernel.constants if not isinstance(v, DType)}
        self.dtypes: dict[str, DType] = {p.name: p.dtype for p in kernel.params}
        self.dtypes.update({b.name: b.dtype for b in kernel.buffers})
        self.env: dict[str, object] = {}
        self.buffers: dict[str, np.ndarray] = {}
        self.lifted: dict[str, np.ndarray] = {}  # local buffers private to each parallel index
        self.lanes: tuple[np.ndarray, ...] | None = None  # parallel index grids
        self.loop: _Loop | None = None
        self.consts: dict[int, object] = {}
        self.locals_of: dict[int, tuple[str, ...]] = {}
        self.eval_of = {Const: self.e_const, Var: self.e_var, BinOp: self.e_binop,
                        UnaryOp: self.e_unop, Call: self.e_call, Cast: self.e_cast,
                        Select: self.e_select, Load: self.e_load}
        self.exec_of = {Copy: self.s_copy, Gemm: self.s_gemm, Fill: self.s_fill,
                        Reduce: self.s_reduce, Scan: self.s_scan, Atomic: self.s_atomic, Sync: self.s_sync,
                        Print: self.s_print, Assert: self.s_assert, LetScalar: self.s_let, Assign: self.s_assign,
                        Store: self.s_store, For: self.s_for, Parallel: self.s_parallel,
                        If: self.s_if, Break: self.s_break, Continue: self.s_continue}

    # ---- grid -------------------------------------------------------------------------------

    def run(self) -> None:
        self.env = dict(self.base_env)
        # the grid as a launch computes it (Python integers: an i32 cast does not wrap 2**40 to
        # an empty grid) and within the GPU's limits, so that the interpreter refuses what a
        # launch refuses
        values = {k: v.item() if isinstance(v, np.generic) else v for k, v in self.base_env.items()}
        try:
            extents = grid_extents(self.k, values)
        except GridError as e:
            raise InterpError(str(e)) from None
        extents += [1] * (3 - len(extents))
        try:
            launches_blocks(self.k.name, extents)
        except GridError as e:
            raise InterpError(str(e)) from None
        if self.k.warp_spec is not None:  # producer and consumers over the ring (ring.py)
            run_warp_specialized(self, extents)
            return
        self.grid_x = extents[0]
        for bz in range(extents[2]):
            for by in range(extents[1]):
                for bx in range(extents[0]):
                    self.enter_block(bx, by, bz)
                    self.block(self.k.body, True)

    def enter_block(self, bx: int, by: int, bz: int) -> None:
        """A block's start: the kernel's scalars, its indices, fresh buffers."""
        self.env = dict(self.base_env)
        for name, v in zip(self.k.block_vars, (bx, by, bz)):
            self.env[name] = np.int32(v)
        self.buffers = {b.name: self.alloc(b.dtype, b.shape) for b in self.k.buffers}

    @staticmethod
    def alloc(dt: DType, shape) -> np.ndarray:
        return np.full(shape, np.nan if dt.is_float else 0, dtype=nx.np_dtype(dt))

    # ---- expressions ------------------------------------------------------------------------

    def eval(self, e):
        return self.eval_of[type(e)](e)

    def e_const(self, e: Const):
        v = self.consts.get(id(e))
        if v is None:
            v = self.consts[id(e)] = nx.const(e.value, e.dtype)
        return v

    def e_var(self, e: Var):
        v = self.env.get(e.name)
        if v is None:
            return nx.const(self.constants[e.name], e.dtype)
        return v

    def e_binop(self, e: BinOp):
        return nx.binop(e.op, self.eval(e.a), self.eval(e.b), e.dtype)

    def e_unop(self, e: UnaryOp):
        return nx.unop(e.op, self.eval(e.x), e.dtype)

    def e_call(self, e: Call):
        if e.fn == "thread_index":  # one lane per thread of the block (see the module docstring)
            return np.arange(self.k.threads, dtype=np.int32)
        if e.fn == "grid_blocks":  # every block of the grid runs here, a launch_fill kernel's too
            return np.int32(self.grid_x)
        return nx.call(e.fn, [self.eval(a) for a in e.args], e.dtype)

    def e_cast(self, e: Cast):
        return nx.cast(self.eval(e.x), e.dtype)

    def e_select(self, e: Select):
        return nx.select(self.eval(e.cond), self.eval(e.a), self.eval(e.b), e.dtype)

    def target(self, name: str) -> tuple[np.ndarray, tuple]:
        """The array behind a name and the index prefix that picks the current lane's copy."""
        if name in self.lifted:
            return self.lifted[name], self.lanes
        arr = self.tensors.get(name)
        return (arr if arr is not None else self.buffers[name]), ()

    def e_load(self, e: Load):
        arr, prefix = self.target(e.name)
        idx = [self.eval(i) for i in e.indices]
        if not prefix and all(_uniform(i) for i in idx):
            t = tuple(int(i) for i in idx)
            if all(0 <= i < n for i, n in zip(t, arr.shape)):
                return arr[t]
            return arr.dtype.type(0)
        valid = self.in_bounds(arr.shape[len(prefix):], idx)
        if valid is True:
            return arr[prefix + tuple(idx)]
        if arr.size == 0:  # an empty tensor (conv2d_bwd_data's dy of a 0-wide output): every lane reads 0
            return np.zeros(np.shape(valid), arr.dtype)
        safe = tuple(np.where(valid, i, 0) for i in idx)
        return np.where(valid, arr[prefix + safe], arr.dtype.type(0))

    @staticmethod
    def in_bounds(shape, idx):
        """True when every index is inside `shape`, else the mask of lanes that are."""
        valid = True
        for i, n in zip(idx, shape):
            ok = (i >= 0) & (i < n)
            try:  # np.all(ok) without its dispatch (a NumPy bool or array of them, most often)
                every = ok.all()
            except AttributeError:  # a Python bool
                every = np.all(ok)
            if not every:
                valid = _and(valid, np.asarray(ok))
        return valid

    # ---- statements -------------------------------------------------------------------------

    def block(self, body, mask) -> None:
        loop = self.loop
        for s in body:
            m = mask
            if loop is not None and (loop.broken is not False or loop.continued is not False):
                m = _and_not(mask, _or(loop.broken, loop.continued))
                if not _any(m):
                    return
            self.exec_of[type(s)](s, m)

    def operand(self, o):
        """A copy side: (array, dtype, offsets, extents)."""
        arr, _ = self.target(o.name)
        dt = self.dtypes[o.name]
        if isinstance(o, BufferRef):
            return arr, dt, (0,) * arr.ndim, arr.shape
        if o.dims is not None:  # a view of the tensor (schedule/views.py): its memory in the view's shape
            arr = arr.view()
            arr.shape = tuple(int(self.eval(d)) for d in o.dims)  # no copy: writes reach the tensor
        return arr, dt, tuple(int(self.eval(x)) for x in o.offsets), tuple(o.extents)

    def s_copy(self, s: Copy, mask) -> None:
        src, _, so, se = self.operand(s.src)
        dst, ddt, do, de = self.operand(s.dst)
        tiles.copy(src, so, se, dst, ddt, do, de)

    def s_gemm(self, s: Gemm, mask) -> None:
        b = self.buffers
        tiles.gemm(b[s.a], b[s.b], b[s.c], self.dtypes[s.a], self.dtypes[s.c], s.trans_a, s.trans_b, s.precision)

    def s_fill(self, s: Fill, mask) -> None:
        self.buffers[s.buffer][...] = nx.cast(self.eval(s.value), self.dtypes[s.buffer])

    def s_reduce(self, s: Reduce, mask) -> None:
        b = self.buffers
        tiles.reduce(s.kind, b[s.src], self.dtypes[s.src], s.dim, b[s.dst], self.dtypes[s.dst],
                     s.clear)

    def s_scan(self, s: Scan, mask) -> None:
        scan.scan(s.kind, self.buffers[s.src], s.dim, s.reverse, self.buffers[s.dst], self.dtypes[s.dst])

    def s_sync(self, s: Sync, mask) -> None:
        pass  # statements run in program order; there is nothing to wait for

    def s_let(self, s: LetScalar, mask) -> None:
        self.env[s.name] = nx.cast(self.eval(s.value), s.dtype)

    def s_assign(self, s: Assign, mask) -> None:
        old = self.env[s.name]  # a let scalar keeps its declared dtype
        v = nx.cast(self.eval(s.value), nx.dtype_of(old))
        self.env[s.name] = v if mask is True else np.where(mask, v, old)

    def scatter_args(self, name: str, indices, value, mask):
        """For a store or atomic: (array, full index tuple, values), lanes already selected;
        None when no lane writes."""
        arr, prefix = self.target(name)
        idx = [self.eval(i) for i in indices]
        v = nx.cast(self.eval(value), self.dtypes[name])
        valid = _and(mask, self.in_bounds(arr.shape[len(prefix):], idx))
        if valid is False:
            return None
        if valid is True:
            if not prefix and all(_uniform(i) for i in idx) and _uniform(v):
                return arr, tuple(idx), v
            # lanes may write one element with different values: broadcast, last lane wins
            parts = np.broadcast_arrays(*prefix, *idx, v)
            return arr, tuple(parts[:-1]), parts[-1]
        parts = np.broadcast_arrays(*prefix, *idx, v, valid)
        sel = parts[-1]
        return arr, tuple(p[sel] for p in parts[:-2]), parts[-2][sel]

    def s_store(self, s: Store, mask) -> None:
        got = self.scatter_args(s.name, s.indices, s.value, mask)
        if got is not None:
            arr, idx, v = got
            arr[idx] = v

    _ATOMIC = {"add": "+", "max": "max", "min": "min"}

    def s_atomic(self, s: Atomic, mask) -> None:
        if s.kind == "turn_wait":
            return  # blocks run one after another here: their updates land in block order
        if s.kind == "turn_done":
            s = replace(s, kind="add")
        got = self.scatter_args(s.name, s.indices, s.value, mask)
        if got is None:
            return
        arr, idx, v = got
        dt = self.dtypes[s.name]
        if all(_uniform(i) for i in idx):
            if self.lanes is None:  # outside a parallel loop: once per block
                arr[idx] = nx.binop(self._ATOMIC[s.kind], arr[idx], v, dt)
                return
            # every lane of a parallel loop updates the one element, as every iteration on
            # the GPU does (scatter_args gave the lanes' common index and value once)
            lanes = int(np.prod(np.broadcast_shapes(*(np.shape(g) for g in self.lanes))))
            idx, v = tuple(np.full(lanes, i) for i in idx), np.full(lanes, v, dtype=np.asarray(v).dtype)
        # ufunc.at applies repeated indices one after another, as atomics serialize
        ufunc = {"add": np.add, "max": np.fmax if dt.is_float else np.maximum,
                 "min": np.fmin if dt.is_float else np.minimum}[s.kind]
        idx = np.broadcast_arrays(*idx, v)
        ufunc.at(arr, tuple(idx[:-1]), idx[-1])

    def s_print(self, s: Print, mask) -> None:
        values = [self.eval(a) for a in s.args]
        if self.lanes is None and _uniform(mask) and all(_uniform(v) for v in values):
            sys.stdout.write(_printf(s.fmt, values))
            return
        # per parallel index, or per thread where the thread index reaches it
        lanes = self.lanes if self.lanes is not None else (np.arange(self.k.threads),)
        shape = np.broadcast_shapes(*(g.shape for g in lanes))
        active = np.broadcast_to(True if mask is True else mask, shape)
        full = [np.broadcast_to(v, shape) for v in values]
        for lane in zip(*np.nonzero(active)):
            sys.stdout.write(_printf(s.fmt, [v[lane] for v in full]))

    def s_assert(self, s: Assert, mask) -> None:
        """Raises DeviceAssertError at the first lane (in C order) where the condition is false."""
        failed = _and_not(mask, self.eval(s.cond))
        if not _any(failed):
            return
        values = [self.eval(a) for a in s.args]
        block = tuple(int(self.env.get(v, 0)) for v in self.k.block_vars) + (0, 0, 0)
        where = f"block ({block[0]}, {block[1]}, {block[2]})"
        if _uniform(failed) and all(_uniform(v) for v in values):
            raise device_assert.failure(device_assert.site_of(s), _numbers(values), where + ", thread 0")
        lanes = self.lanes if self.lanes is not None else (np.arange(self.k.threads),)
        shape = np.broadcast_shapes(np.shape(failed), *(np.shape(g) for g in lanes), *(np.shape(v) for v in values))
        lane = tuple(int(i[0]) for i in np.nonzero(np.broadcast_to(failed, shape)))
        got = _numbers(np.broadcast_to(v, shape)[lane] for v in values)
        at = f"index ({', '.join(map(str, lane))})" if self.lanes is not None else f"thread {lane[0]}"
        raise device_assert.failure(device_assert.site_of(s), got, f"{where}, {at}")

    def s_if(self, s: If, mask) -> None:
        c = self.eval(s.cond)
        if _uniform(c):
            self.block(s.then if bool(c) else s.orelse, mask)
            return
        taken, other = _and(mask, c), _and_not(mask, c)
        if s.then and _any(taken):
            self.block(s.then, taken)
        if s.orelse and _any(other):
            self.block(s.orelse, other)

    def s_break(self, s: Break, mask) -> None:
        self.loop.broken = _or(self.loop.broken, mask)

    def s_continue(self, s: Continue, mask) -> None:
        self.loop.continued = _or(self.loop.continued, mask)

    def s_for(self, s: For, mask) -> None:
        start, stop, step = (self.eval(x) for x in (s.start, s.stop, s.step))
        if np.any(step == 0):
            raise InterpError(f"kernel '{self.k.name}': loop '{s.var}' has step 0")
        dt = nx.dtype_of(start)
        outer, loop = self.loop, _Loop()
        self.loop = loop
        try:
            if _uniform(start) and _uniform(stop) and _uniform(step):
                vtype = nx.np_dtype(dt).type
                for i in range(int(start), int(stop), int(step)):
                    if s.kind == "while" and i == WHILE_LIMIT:
                        raise InterpError(f"kernel '{self.k.name}': a while loop{_line(s)} ran {WHILE_LIMIT} times "
                                          "without ending; the interpreter stops it there (an endless loop?)")
                    loop.continued = False
                    m = _and_not(mask, loop.broken)
                    if not _any(m):
                        break
                    self.env[s.var] = vtype(i)
                    self.block(s.body, m)
            else:  # bounds differ between lanes: run to the longest, masking finished lanes
                start, stop, step = (np.asarray(x, np.int64) for x in (start, stop, step))
                trips = np.maximum(0, np.where(step > 0, stop - start + step - 1,
                                               start - stop - step - 1) // np.abs(step))
                for t in range(int(trips.max(initial=0))):
                    loop.continued = False
                    m = _and_not(_and(mask, t < trips), loop.broken)
                    if not _any(m):
                        break
                    self.env[s.var] = nx.cast(start + t * step, dt)
                    self.block(s.body, m)
        finally:
            self.loop = outer

    def s_parallel(self, s: Parallel, mask) -> None:
        n = len(s.extents)
        grids = tuple(np.arange(x, dtype=np.int32).reshape([x if d == k else 1 for d in range(n)])
                      for k, x in enumerate(s.extents))
        for v, g in zip(s.vars, grids):
            self.env[v] = g
        shape = tuple(s.extents)
        for name in self.locals_in(s):
            buf = self.buffers[name]
            self.lifted[name] = np.broadcast_to(buf, shape + buf.shape).copy()
        outer = self.loop
        self.lanes, self.loop = grids, None
        try:
            self.block(s.body, True)
        finally:
            self.lanes, self.loop, self.lifted = None, outer, {}
        self.block(s.stores, mask)  # folded copies: what they mean is a copy after the loop

    def locals_in(self, s: Parallel) -> tuple[str, ...]:
        """The local buffers that a parallel body touches (cached per node)."""
        got = self.locals_of.get(id(s))
        if got is None:
            local = {b.name for b in self.k.buffers if b.scope == "local"}
            got = self.locals_of[id(s)] = tuple(sorted(local & _names(s.body)))
        return got


def _line(s) -> str:
    span = getattr(s, "span", None)
    return f" at {span.file}:{span.line}" if span is not None else ""


def _names(body) -> set[str]:
    """Every buffer or tensor name that a statement list reads or writes."""
    out: set[str] = set()

    def expr(e) -> None:
        if isinstance(e, Load):
            out.add(e.name)
        for f in ("a", "b", "x", "cond"):
            sub = getattr(e, f, None)
            if sub is not None and not isinstance(sub, (str, DType)):
                expr(sub)
        for sub in getattr(e, "args", ()) + getattr(e, "indices", ()):
            expr(sub)

    def stmts(ss) -> None:
        for s in ss:
            for f in ("name", "buffer"):
                if isinstance(getattr(s, f, None), str):
                    out.add(getattr(s, f))
            for f in ("value", "cond", "start", "stop", "step"):
                if getattr(s, f, None) is not None:
                    expr(getattr(s, f))
            for sub in getattr(s, "indices", ()) + getattr(s, "args", ()):
                expr(sub)
            for f in ("body", "then", "orelse"):
                stmts(getattr(s, f, ()))

    stmts(body)
    return out
