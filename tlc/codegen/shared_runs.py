"""Shared-memory reads of a parallel loop taken a run at a time, and its folded stores.

A parallel loop over a blocked layout runs as an unrolled loop over a thread's registers, each
run of `vec` of them `vec` consecutive columns.  An element read of a shared buffer at the
loop's column (`w_staged[j]`, as schedule/pipeline_rows.py leaves a staged weight) is then
`vec` scalar loads of neighbouring elements, which nvcc does not merge (the plain layer_norm's
f16 weights and biases: 64 LDS.U16 a thread a row, with bank conflicts, where 8 LDS.128 read
the same bytes).  Such reads are taken here as one vector load per run, at the run's start:
the loop becomes a loop over runs holding a loop over a run's registers.

A read qualifies when the loop's layout is blocked with runs of at least two elements, the
buffer is shared, one stage, unswizzled, not written in the loop and not aliased to another
buffer, its rows (padding included) and its offset keep a run's bytes aligned to the widest
vector that divides them, its last index is the loop's column variable itself and its other
indices read neither that variable nor a name set inside the loop (the row variable is
constant along a run), and it is provably inside the buffer (no bounds check).

A tensor parameter's read qualifies too when its last index is the loop's column plus an offset
that reads no name set inside the loop (`x[n, ih, iw, c0 + j]`: a depthwise convolution's tap,
whose scalar 2-byte loads were most of its time; a row vector `b[bx * 256 + j]`, std.elementwise's
add_row), in runs of 4 bytes or more, the tensor not written in the loop and its other indices
(if any) as above: tl::load_run_global takes each run as vectors
where the run lies inside the tensor and its address is aligned, decided per run at run time
(the other indices' bounds, the column's, the pointer's alignment), element by element otherwise.

A loop with copies folded into it (`Parallel.stores`, schedule/fold_stores.py) runs as the same
loop over runs, each run's registers of the copied fragments stored once the run is computed.

Element stores to a shared buffer at the loop's column (`run[i, j] = A(t[i, j]) + ...`, std.reduce's
scans filling their shared tile) are taken the same way: each register's value goes to a run
held in registers, and the run to shared memory as vectors once it is computed, where nvcc left
one scalar store a register, each with its own padded address (about 10 SASS instructions an
element of cumsum's loop).  A store qualifies as a read does (the buffer shared, one stage,
unswizzled, runs aligned, its last index the column itself, its other indices constant along a
run, provably inside the buffer), and besides: it is a statement of the loop's body itself (not
under an `if`: every register of a run is stored), the only write of that buffer in the loop,
and the loop reads no element of that buffer (a read would see the run before its store).
"""
from __future__ import annotations

from .. import ir
from ..ir.walk import loads, statement_exprs, statements, variables, written_names
from ..schedule.layout import Blocked
from .cnames import c_name, c_type
from .hoist import names_set_inside
from .ranges import provably_within
from .whole_runs import note_origin


def runs_aligned(b: ir.Buffer, layout) -> bool:
    """Whether every run of blocked `layout` over shared buffer `b` (as its rows and columns)
    starts aligned to the widest vector (4 bytes or more) that divides a run's bytes, in each
    stage of `b`: `b` unswizzled, its offset, its rows (padding included) and its stages
    multiples of that vector."""
    lay = b.layout  # a SharedLayout
    if not isinstance(layout, Blocked) or layout.vec < 2 or lay is None or lay.swizzle_bytes:
        return False
    run_bytes = layout.vec * b.dtype.itemsize
    vbytes = next(v for v in (16, 8, 4, 2, 1) if run_bytes % v == 0)
    row_bytes = (b.shape[-1] + lay.pad) * b.dtype.itemsize
    return vbytes >= 4 and b.smem_offset is not None and b.smem_offset % vbytes == 0 and \
        (len(b.shape) == 1 or row_bytes % vbytes == 0) and (lay.bytes // lay.stages) % vbytes == 0


def _column_offset(e, column: str, inner: set):
    """`e` as the column variable plus an offset that reads no name set inside the loop (the
    offset, or Const 0 for the column itself); None when it is not that."""
    if isinstance(e, ir.Var) and e.name == column:
        return ir.Const(0, e.dtype)
    if isinstance(e, ir.BinOp) and e.op == "+":
        for a, b in ((e.a, e.b), (e.b, e.a)):
            if isinstance(b, ir.Var) and b.name == column and not any(v.name in inner for v in variables(a)):
                return a
    return None


class SharedRunGen:
    """Mixed into the generators: `shared_run_reads` and `shared_run_writes` say which loads and
    stores of a loop qualify, `run_loop` emits the loop that moves them a run at a time."""

    run_writes: dict | None = None  # a qualifying ir.Store -> the registers of its run, in run_loop

    def shared_run_writes(self, p: ir.Parallel, layout) -> list:
        if not isinstance(layout, Blocked) or layout.vec < 2 or len(p.vars) not in (1, 2):
            return []
        column = p.vars[-1]
        inner = names_set_inside(p.body) | {column}
        nested = list(statements(p.body))
        read = {x.name for st in nested for e in statement_exprs(st) for x in loads(e)}
        writes = [st.name for st in nested if isinstance(st, (ir.Store, ir.Atomic))] + \
            [st.dst.name for st in nested if isinstance(st, ir.Copy)]
        return [st for st in p.body if isinstance(st, ir.Store) and st.name not in read and writes.count(st.name) == 1
                and self._run_writable(st, layout, column, inner)]

    def _run_writable(self, st: ir.Store, layout, column: str, inner: set) -> bool:
        b = self.buffers.get(st.name)
        return b is not None and not b.dtype.packed and self._shared_run_access(st, layout, column, inner)

    def _shared_run_access(self, x, layout, column: str, inner: set) -> bool:
        """Whether element access `x` (a Load or a Store) of a shared buffer is a run of `layout`:
        the buffer one stage, unswizzled, its runs aligned; the last index the column itself,
        the others constant along a run; provably inside the buffer."""
        b = self.buffers.get(x.name)
        if b is None or b.scope != "shared" or x.name in self.smem_base:
            return False
        if not runs_aligned(b, layout) or b.layout.stages != 1:
            return False
        last = x.indices[-1]
        if not (isinstance(last, ir.Var) and last.name == column):
            return False
        if any(v.name in inner for i in x.indices[:-1] for v in variables(i)):
            return False
        return self.bounds(x.name, x.indices) is None

    def shared_run_reads(self, p: ir.Parallel, layout) -> list:
        if not isinstance(layout, Blocked) or layout.vec < 2 or len(p.vars) not in (1, 2):
            return []
        column = p.vars[-1]
        inner = names_set_inside(p.body) | {column}
        written = written_names(p.body)
        out = []
        for s in statements(p.body):
            for e in statement_exprs(s):
                for x in loads(e):
                    if x in out or x in self.hoisted or not self._run_readable(x, layout, column, inner, written):
                        continue
                    out.append(x)
        return out

    def _run_readable(self, x: ir.Load, layout, column: str, inner: set, written: set) -> bool:
        if x.name in self.params:
            return self._global_run_readable(x, layout, column, inner, written)
        return x.name not in written and self._shared_run_access(x, layout, column, inner)

    def _global_run_readable(self, x: ir.Load, layout, column: str, inner: set, written: set) -> bool:
        """A tensor parameter's element read at the loop's column plus an offset constant along
        the run (`x[n, ih, iw, c0 + j]`, a depthwise convolution's tap), in runs of 4 bytes or
        more: taken a run at a time as vectors where the run lies inside the tensor and is
        aligned (tl::load_run_global decides per run), element by element otherwise."""
        if x.name in written or x.dtype.packed or layout.vec * x.dtype.itemsize < 4:
            return False
        if _column_offset(x.indices[-1], column, inner) is None:
            return False
        return not any(v.name in inner for i in x.indices[:-1] for v in variables(i))

    def _emit_global_run(self, x: ir.Load, alias: str, name: str, p: ir.Parallel, layout) -> None:
        """`name` = the run of `x` that starts at this thread's run (the loop's variables are the
        run's first register's): its other indices' bounds once, the column's per run.  The
        run's first column is a multiple of RUN plus the read's offset: whole or outside the
        tensor under TL_WHOLE_RUNS where the offset is a multiple of RUN too (whole_runs.py)."""
        note_origin(self, x.name, _column_offset(x.indices[-1], p.vars[-1], set()), layout)
        dims = self.tensor_dims(x.name)
        rest = [f"{self.expr(i)} >= 0 && {self.expr(i)} < {self.dim_text(d)}"
                for i, d in zip(x.indices[:-1], dims[:-1]) if not provably_within([i], [d], self.ranges)]
        col = self.expr(x.indices[-1])
        offset = self.global_offset(x.name, x.indices)
        self.emit(f"tl::load_run_global<{alias}::RUN>({name}, {c_name(x.name)} + {offset}, "
                  f"{' && '.join(rest) if rest else 'true'}, {col}, {self.dim_text(dims[-1])});")

    def run_loop(self, p: ir.Parallel, layout, alias: str, reads: list, writes: tuple = ()) -> None:
        """The loop over the registers of `layout` as runs: each run's `reads` loaded first as
        vectors (tl::load_run), then the body once per register of the run (a store of `writes`
        into the run's registers), then each of `writes` stored as vectors (tl::store_run) and
        the run of each fragment the loop's folded copies store (tl::FragmentStore, fold_stores.py)."""
        stores = []
        for c in p.stores:
            b = self.buffers[c.src.name]
            view = self.global_view(c.dst)
            self._check_shapes(view.shape, self.buffer_shape2d(b, b), c)
            name = f"tl_store{self.hoist_names}"
            self.hoist_names += 1
            self.emit(f"// {c.src.name} -> {c.dst.name}: stored a run at a time, as the loop finishes each")
            self.emit(f"const tl::FragmentStore<{self.fragment(b.name).c_layout}, {c_type(self.params[c.dst.name].dtype)}> "
                      f"{name}({view.base}, {view.stride}, {view.rows}, {view.cols}, {view.row0}, {view.col0});")
            stores.append((name, c_name(b.name)))
        self.emit("#pragma unroll")
        self.emit(f"for (int tl_r0 = 0; tl_r0 < {alias}::REGS; tl_r0 += {alias}::RUN) {{")
        self.indent += 1
        self.emit(f"if (!{alias}::valid(threadIdx.x, tl_r0)) continue;  // a run is valid or not as a whole")
        names = []
        for x in reads:
            name = f"tl_run{self.hoist_names}"
            self.hoist_names += 1
            names.append(name)
            self.emit(f"{c_type(x.dtype)} {name}[{alias}::RUN];")
        if reads or not writes:
            kind = "" if any(x.name in self.params for x in reads) else "shared "
            self.emit(f"{{  // the run's {kind}reads, one vector each")
            self.indent += 1
            self.declare_loop_vars(p, alias, "tl_r0")
            for x, name in zip(reads, names):
                if x.name in self.params:
                    self._emit_global_run(x, alias, name, p, layout)
                else:
                    self.emit(f"tl::load_run<{alias}::RUN>({name}, &{self.element(x.name, x.indices, x.span)});")
            self.indent -= 1
            self.emit("}")
        for x, name in zip(reads, names):
            self.hoisted[x] = f"{name}[tl_e]"
        saved_writes, self.run_writes = self.run_writes, {}
        for st in writes:
            self.run_writes[st] = f"tl_wrun{self.hoist_names}"
            self.hoist_names += 1
            self.emit(f"{c_type(self.buffers[st.name].dtype)} {self.run_writes[st]}[{alias}::RUN];")
        self.emit("#pragma unroll")
        self.emit(f"for (int tl_e = 0; tl_e < {alias}::RUN; ++tl_e) {{")
        self.indent += 1
        self.emit("const int tl_r = tl_r0 + tl_e;")
        self.declare_loop_vars(p, alias, "tl_r")
        self.block(p.body)
        self.indent -= 1
        self.emit("}")
        if writes:
            self.emit("{  // the run's shared stores, one vector each")
            self.indent += 1
            self.declare_loop_vars(p, alias, "tl_r0")
            for st in writes:
                self.emit(f"tl::store_run<{alias}::RUN>(&{self.element(st.name, st.indices, st.span)}, "
                          f"{self.run_writes[st]});")
            self.indent -= 1
            self.emit("}")
        self.run_writes = saved_writes
        for name, frag in stores:
            self.emit(f"{name}.run({frag}, tl_r0);")
        for x in reads:
            self.hoisted.pop(x, None)
        self.indent -= 1
        self.emit("}")

    def declare_loop_vars(self, p: ir.Parallel, alias: str, reg: str, void: bool = True) -> None:
        """The loop's variables at register `reg` of `alias` (one: its column; two: row, column),
        each marked used with `void`."""
        for v, axis in zip(p.vars, ("row", "col") if len(p.vars) == 2 else ("col",)):
            self.emit(f"const int {c_name(v)} = {alias}::{axis}(threadIdx.x, {reg});")
            if void:
                self.emit(f"(void){c_name(v)};")
