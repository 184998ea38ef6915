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

A shared access's column may also be the loop's column plus an offset that is a multiple of the
run (`xs[r // NB, r % NB * 32 + c]`: std.quant's quantize_mx, a tile row's blocks of 32 as the
rows of a fragment, 32 LDS.U16 and 32 STS.U8 a thread before), and a shared buffer the loop
reaches only as `buf[..., K * j + c]`, every c in [0, K) (std.quant's int4 pairs, xs[i, 2 * j]
and xs[i, 2 * j + 1]; ys likewise), moves K * RUN elements a run: one run of vectors, the
registers' K elements interleaved (quantize_int4: 32 LDS.U16 a thread -> 4 LDS.128;
dequantize_int4: 32 STS.U16 -> 4 STS.128).  A read that is the same element for every register
of a run (its indices read the column only as `j // D`, D a multiple of the run, or, of a shared
buffer, not at all) is read once a run (`run_invariant_reads`).

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
from ..ir.walk import loads, statement_exprs, statements, subexprs, variables, written_names
from ..schedule.layout import Blocked
from .byte_words import HALF_SELECT
from .cnames import c_name, c_type
from .hoist import names_set_inside
from .rare_runs import FLAG, takes_rare_runs
from .ranges import provably_within
from .whole_runs import note_origin, static_factor


# The general build's folded stores of a 16- or 8-bit fragment wider than 16 registers a thread
# that holds the stored dtype, each whole run by st.global.v4 (tl::FragmentStore's VECTOR_RUNS),
# where nvcc split the union store into 4-byte ones.  Off until the H200 has timed it
# (bench/queue/G_broadcast_pow_blocks.sh): std.broadcast's pow f16 at BLOCKS = 8, general build,
# sm_90a: 64 registers and 12 bytes of spills -> 53 and none; std.quant's dequantize_per_channel
# at its rule 36 -> 12 bytes; std.nn's rms_norm / layer_norm rules 115 -> 122 / 80 -> 79 registers.
# (The whole-runs build is unchanged: there nvcc keeps the 16-byte store.)
RAGGED_VECTOR_STORES = False


def wide_vector_stores(b: ir.Buffer, dtype) -> bool:
    """Whether fragment `b`'s folded store to a tensor of `dtype` takes VECTOR_RUNS."""
    return RAGGED_VECTOR_STORES and b.dtype == dtype and dtype.itemsize <= 2 and \
        isinstance(b.layout, Blocked) and b.layout.registers > 16


def runs_aligned(b: ir.Buffer, layout, stride: int = 1) -> bool:
    """Whether every run of blocked `layout` over shared buffer `b` (as its rows and columns;
    `stride` elements of `b` a column) starts aligned to the widest vector (4 bytes or more)
    that divides a run's bytes, in each stage of `b`: `b` unswizzled, its offset, its rows
    (padding included) and its stages multiples of that vector."""
    lay = b.layout  # a SharedLayout
    if not isinstance(layout, Blocked) or layout.vec < 2 or lay is None or lay.swizzle_bytes:
        return False
    run_bytes = layout.vec * stride * b.dtype.itemsize
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


def _column_blocks(e, column: str, run: int):
    """Whether index `e` reads `column` only as `column // D`, D a positive multiple of `run`
    (True), not at all (False), or otherwise (None)."""
    reads = sum(1 for x in subexprs(e) if isinstance(x, ir.Var) and x.name == column)
    blocks = sum(1 for x in subexprs(e) if isinstance(x, ir.BinOp) and x.op == "//" and isinstance(x.a, ir.Var)
                 and x.a.name == column and isinstance(x.b, ir.Const) and isinstance(x.b.value, int)
                 and not isinstance(x.b.value, bool) and x.b.value > 0 and x.b.value % run == 0)
    return None if reads > blocks else blocks > 0


def _phase(e, column: str):
    """`e` as `K * column + c` (K >= 2 and 0 <= c < K constants): (K, c, the `K * column`
    part); None when it is not that."""
    def times(x):
        if isinstance(x, ir.BinOp) and x.op == "*":
            for k, v in ((x.a, x.b), (x.b, x.a)):
                if isinstance(k, ir.Const) and type(k.value) is int and k.value >= 2 and \
                        isinstance(v, ir.Var) and v.name == column:
                    return k.value
        return None
    if times(e):
        return times(e), 0, e
    if isinstance(e, ir.BinOp) and e.op == "+":
        for m, c in ((e.a, e.b), (e.b, e.a)):
            k = times(m)
            if k and isinstance(c, ir.Const) and type(c.value) is int and 0 <= c.value < k:
                return k, c.value, m
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
        out = [st for st in p.body if isinstance(st, ir.Store) and st.name not in read and writes.count(st.name) == 1
               and self._run_writable(st, layout, column, inner)]
        top = [st for st in p.body if isinstance(st, ir.Store) and st not in out]
        for group in self._phase_groups(top, p, layout, column, inner).values():
            out += group
        return out

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
        offset = _column_offset(x.indices[-1], column, inner)
        if offset is None or static_factor(offset, self.k) % layout.vec:
            return False  # a column plus an offset that may leave a run unaligned
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
        accesses = [x for s in statements(p.body) for e in statement_exprs(s) for x in loads(e)]
        for group in self._phase_groups(accesses, p, layout, column, inner).values():
            out += [x for x in group if x not in out and x not in self.hoisted]
        return out

    def _phase_groups(self, accesses: list, p: ir.Parallel, layout, column: str, inner: set) -> dict:
        """{buffer: its accesses} for the shared buffers that `accesses` (the loop's loads, or its
        stores) reach only as `buf[..., K * column + c]` with the same other indices and every c
        in [0, K) among them: a run of the loop's registers covers K * RUN consecutive elements,
        moved as one run of vectors (std.quant's int4 pairs, xs[i, 2 * j] and xs[i, 2 * j + 1]).
        The buffer one stage, unswizzled, those runs aligned, each access provably inside it,
        and the other indices constant along a run."""
        by_name: dict = {}
        for x in accesses:
            by_name.setdefault(x.name, []).append(x)
        loaded = {x.name for s in statements(p.body) for e in statement_exprs(s) for x in loads(e)}
        stored = [st.name for st in statements(p.body) if isinstance(st, (ir.Store, ir.Atomic))] + \
            [st.dst.name for st in statements(p.body) if isinstance(st, ir.Copy)]
        out = {}
        for name, xs in by_name.items():
            b = self.buffers.get(name)
            if b is None or b.scope != "shared" or name in self.smem_base or b.dtype.packed or b.layout is None or \
                    b.layout.stages != 1:
                continue
            is_store = isinstance(xs[0], ir.Store)
            if (name in loaded) if is_store else (name in stored):
                continue  # read and written in the loop
            if is_store and stored.count(name) != len(xs):
                continue  # another write of it (an atomic, a copy) in the loop
            phases = [_phase(x.indices[-1], column) for x in xs]
            if None in phases or len({k for k, _, _ in phases}) != 1:
                continue
            k = phases[0][0]
            cs = [c for _, c, _ in phases]
            if sorted(set(cs)) != list(range(k)) or (is_store and len(cs) != k):
                continue
            others = {tuple(self.expr(i) for i in x.indices[:-1]) for x in xs}
            if len(others) != 1 or any(v.name in inner for x in xs for i in x.indices[:-1] for v in variables(i)):
                continue
            if not runs_aligned(b, layout, k) or any(self.bounds(name, x.indices) is not None for x in xs):
                continue
            out[name] = xs
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
        # `&` of the tests, not `&&`: no branch for nvcc to copy each tap's loads into (layout.cuh)
        rest = [f"({self.expr(i)} >= 0) & ({self.expr(i)} < {self.dim_text(d)})"
                for i, d in zip(x.indices[:-1], dims[:-1]) if not provably_within([i], [d], self.ranges)]
        col = self.expr(x.indices[-1])
        offset = self.global_offset(x.name, x.indices)
        self.emit(f"tl::load_run_global<{alias}::RUN>({name}, {c_name(x.name)} + {offset}, "
                  f"{' & '.join(rest) if rest else 'true'}, {col}, {self.dim_text(dims[-1])});")

    def run_invariant_reads(self, p: ir.Parallel, layout, reads: list) -> list:
        """The loop's reads of a tensor parameter or a shared buffer (not written in the loop, not
        in `reads`, not hoisted already) whose indices read the column only as `column // D`, D a
        multiple of the run (a shared buffer's: or not at all), and no name set inside the loop:
        the same element for every register of a run (its first column is a multiple of the run,
        its row one), read once a run.  nvcc did not see it: std.quant's dequantize_mx read its
        scale es[i, j // 32] with an LDS.U8 a register, quantize_int4 its inv[i] with an LDS and
        the row's index (3 more instructions) a register."""
        if not isinstance(layout, Blocked) or layout.vec < 2 or len(p.vars) not in (1, 2):
            return []
        column = p.vars[-1]
        inner = names_set_inside(p.body) - {column}
        written = written_names(p.body)
        out = []
        for s in statements(p.body):
            for e in statement_exprs(s):
                for x in loads(e):
                    if x in out or x in reads or x in self.hoisted or x.name in written or x.dtype.packed:
                        continue
                    b = self.buffers.get(x.name)
                    if x.name not in self.params and (b is None or b.scope != "shared" or x.name in self.smem_base):
                        continue
                    if any(isinstance(y, ir.Load) for i in x.indices for y in subexprs(i)):
                        continue
                    if any(v.name in inner for i in x.indices for v in variables(i)):
                        continue
                    found = [_column_blocks(i, column, layout.vec) for i in x.indices]
                    if None not in found and (any(found) or x.name not in self.params):
                        out.append(x)  # a parameter's read of no column: hoist.py's, per row slot
        return out

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
            dtype = self.params[c.dst.name].dtype
            wide = ", true" if wide_vector_stores(b, dtype) else ""
            self.emit(f"const tl::FragmentStore<{self.fragment(b.name).c_layout}, {c_type(dtype)}{wide}> "
                      f"{name}({view.base}, {view.stride}, {view.rows}, {view.cols}, {view.row0}, {view.col0});")
            stores.append((name, c_name(b.name)))
        self.emit("#pragma unroll")
        self.emit(f"for (int tl_r0 = 0; tl_r0 < {alias}::REGS; tl_r0 += {alias}::RUN) {{")
        self.indent += 1
        self.emit(f"if (!{alias}::valid(threadIdx.x, tl_r0)) continue;  // a run is valid or not as a whole")
        column = p.vars[-1]
        plain = [x for x in reads if _phase(x.indices[-1], column) is None]
        phased = self._by_run([x for x in reads if x not in plain], column)  # [(K, its first access, accesses)]
        names = []
        for x in plain:
            name = f"tl_run{self.hoist_names}"
            self.hoist_names += 1
            names.append(name)
            self.emit(f"{c_type(x.dtype)} {name}[{alias}::RUN];")
        wide = []
        for k, x, _ in phased:
            wide.append(f"tl_run{self.hoist_names}")
            self.hoist_names += 1
            self.emit(f"{c_type(x.dtype)} {wide[-1]}[{k} * {alias}::RUN];  // {k} elements a register")
        invariant = self.run_invariant_reads(p, layout, reads)
        once = []
        for x in invariant:
            once.append(f"tl_once{self.hoist_names}")
            self.hoist_names += 1
            self.emit(f"{c_type(x.dtype)} {once[-1]};  // the same element for the run's every register")
        if reads or invariant or not writes:
            kind = "" if any(x.name in self.params for x in reads) else "shared "
            self.emit(f"{{  // the run's {kind}reads, one vector each")
            self.indent += 1
            self.declare_loop_vars(p, alias, "tl_r0")
            for x, name in zip(plain, names):
                if x.name in self.params:
                    self._emit_global_run(x, alias, name, p, layout)
                else:
                    self.emit(f"tl::load_run<{alias}::RUN>({name}, &{self.element(x.name, x.indices, x.span)});")
            for (k, x, _), name in zip(phased, wide):
                self.emit(f"tl::load_run<{k} * {alias}::RUN>({name}, &{self.element(x.name, x.indices, x.span)});")
            for x, name in zip(invariant, once):
                self.emit(f"{name} = {self.load(x)};")
            self.indent -= 1
            self.emit("}")
        for x, name in zip(plain, names):
            self.hoisted[x] = f"{name}[tl_e]"
        for (k, _, xs), name in zip(phased, wide):
            for x in xs:
                self.hoisted[x] = f"{name}[{k} * tl_e + {_phase(x.indices[-1], column)[1]}]"
        for x, name in zip(invariant, once):
            self.hoisted[x] = name
        saved_writes, self.run_writes = self.run_writes, {}
        for st in writes:
            self.run_writes[st] = f"tl_wrun{self.hoist_names}"
            self.hoist_names += 1
            self.emit(f"{c_type(self.buffers[st.name].dtype)} {self.run_writes[st]}[{alias}::RUN];")
        select = None if reads or invariant or writes else self.half_select(p, layout)  # byte_words.py
        rare = select is None and not writes and takes_rare_runs(p, self.buffers)  # pow's test once a run
        if rare:
            self.emit(f"bool {FLAG} = false;  // an element of the run takes pow's special cases (rare_runs.py)")
        self.emit("#pragma unroll")
        if select is not None:
            self.emit(f"for (int tl_w = 0; tl_w < {alias}::RUN / 4; ++tl_w) {{  // {HALF_SELECT}")
            self.emit(f"  {self.half_select_call(select, 'tl_r0 + 4 * tl_w')}")
            self.emit("}")
        elif rare:
            self._run_pass(p, alias, FLAG)
            self.emit(f"if (__builtin_expect({FLAG}, 0)) {{  // the run again, by pow's selects")
            self.indent += 1
            self.emit("#pragma unroll")
            self._run_pass(p, alias, "")
            self.indent -= 1
            self.emit("}")
        else:
            self._run_pass(p, alias, None)
        if writes:
            self.emit("{  // the run's shared stores, one vector each")
            self.indent += 1
            self.declare_loop_vars(p, alias, "tl_r0")
            for st in writes:
                if _phase(st.indices[-1], column) is None:
                    self.emit(f"tl::store_run<{alias}::RUN>(&{self.element(st.name, st.indices, st.span)}, "
                              f"{self.run_writes[st]});")
            for k, first, xs in self._by_run([st for st in writes if _phase(st.indices[-1], column)], column):
                t = c_type(self.buffers[first.name].dtype)
                name = f"tl_wrun{self.hoist_names}"
                self.hoist_names += 1
                self.emit(f"{t} {name}[{k} * {alias}::RUN];  // the registers' {k} elements interleaved")
                self.emit("#pragma unroll")
                self.emit(f"for (int tl_e = 0; tl_e < {alias}::RUN; ++tl_e) {{")
                for st in sorted(xs, key=lambda st: _phase(st.indices[-1], column)[1]):
                    self.emit(f"  {name}[{k} * tl_e + {_phase(st.indices[-1], column)[1]}] = {self.run_writes[st]}[tl_e];")
                self.emit("}")
                self.emit(f"tl::store_run<{k} * {alias}::RUN>(&{self.element(first.name, first.indices, first.span)}, "
                          f"{name});")
            self.indent -= 1
            self.emit("}")
        self.run_writes = saved_writes
        for name, frag in stores:
            self.emit(f"{name}.run({frag}, tl_r0);")
        for x in (*reads, *invariant):
            self.hoisted.pop(x, None)
        self.indent -= 1
        self.emit("}")

    def _run_pass(self, p: ir.Parallel, alias: str, rare_flag) -> None:
        """The loop over a run's registers, the body once each (`rare_flag`: rare_runs.py's pass)."""
        self.emit(f"for (int tl_e = 0; tl_e < {alias}::RUN; ++tl_e) {{")
        self.indent += 1
        self.emit("const int tl_r = tl_r0 + tl_e;")
        self.declare_loop_vars(p, alias, "tl_r")
        saved, self.rare_flag = self.rare_flag, rare_flag
        self.block(p.body)
        self.rare_flag = saved
        self.indent -= 1
        self.emit("}")

    @staticmethod
    def _by_run(accesses: list, column: str) -> list:
        """Accesses `buf[..., K * column + c]` grouped by buffer: [(K, the one of c = 0 (where the
        run starts), the group's accesses)]."""
        groups: dict = {}
        for x in accesses:
            groups.setdefault(x.name, []).append(x)
        out = []
        for xs in groups.values():
            k = _phase(xs[0].indices[-1], column)[0]
            first = next(x for x in xs if _phase(x.indices[-1], column)[1] == 0)
            out.append((k, first, xs))
        return out

    def declare_loop_vars(self, p: ir.Parallel, alias: str, reg: str, void: bool = True) -> None:
        """The loop's variables at register `reg` of `alias` (one: its column; two: row, column),
        each marked used with `void`."""
        for v, axis in zip(p.vars, ("row", "col") if len(p.vars) == 2 else ("col",)):
            self.emit(f"const int {c_name(v)} = {alias}::{axis}(threadIdx.x, {reg});")
            if void:
                self.emit(f"(void){c_name(v)};")
