"""Copies between global, shared, fragment and local tiles, and pipelined loops (cp.async
running `stages - 1` iterations ahead).  Every copy is viewed as a 2-D tile (rows x cols, a
1-D tile is one row) and handed to a tl:: primitive; the global side is a row-major tensor
given by its base pointer, stride, size and origin.  Row gathers and scatters (rows found by
index arithmetic) are row_gathers.py's."""
from __future__ import annotations

from .. import ir
from ..frozen import record
from ..ir.walk import loads, statements, subexprs, variables, written_names
from ..schedule import gather_rows
from ..schedule.ring_loads import stage_elements
from ..schedule.warpspec import after_scalar_lets
from .cexpr import CodegenError
from .cnames import c_name, c_type
from .ranges import open_range
from .row_gathers import RowGatherGen
from .shared_runs import runs_aligned
from .whole_runs import note as note_whole_run


@record
class PipelinePlan:
    loop: ir.For
    stages: int
    producers: list  # the leading copies into staged shared buffers
    rest: list  # what computes on the current stage
    stage_elems: dict  # staged buffer -> elements per stage


@record
class GlobalView:
    """A region of a global tensor as 2-D: `base` points at its first row's row 0 (leading dims
    of extent 1 folded in), `rows`/`cols` the tensor's sizes, `row0`/`col0` the origin."""

    base: str
    stride: str
    rows: str
    cols: str
    row0: str
    col0: str
    shape: tuple[int, int]


def batch_test(parts) -> str:
    """C: whether a load batch's copies ((view, layout) each) take its one basic block: each
    tile seen alone (row 0 of its rows), g2f_whole's test of its runs' columns, then its rows
    [row0, row0 + its rows) inside the view's.  The tile's base is aligned where the tensor's
    is (g2f_whole also asks the stride to be whole vectors), so the tensor's is passed: copies
    of one tensor's columns share one test, computed alike in every iteration of a loop and
    taken out of it; tiles of the same rows one test of them.  The rows' half and the columns'
    are joined by `&`: with `&&` the columns' test after the rows' stayed in the loop
    (sum_axis0), and before them ptxas spilled 8 bytes of flash_bwd's first grid
    (tests/schedule/test_carried_gemm.py); the columns' half first spilled 8 bytes of the plain
    layer_norm (tests/schedule/test_batch_loads.py).  A part (view, layout, True) is a vector's tile
    from a column never negative (`CopyGen.flat_origin`): g2f_whole_flat's test of its runs."""
    cols: list = []
    rows: list = []
    for v, lay, *flat in parts:
        test = (f"tl::g2f_whole_flat<{lay}>({v.base}, {v.cols}, {v.col0})" if flat and flat[0] else
                f"tl::g2f_whole<{lay}>({v.base}, {v.stride}, {v.shape[0]}, {v.cols}, 0, {v.col0})")
        cols += [test] if test not in cols else []
        if v.row0 == "0" and v.rows == str(v.shape[0]):  # the tensor's rows are the tile's (a vector)
            continue
        r0 = f"static_cast<long long>({v.row0})"
        test = f"{r0} >= 0 && {r0} + {v.shape[0]} <= static_cast<long long>({v.rows})"
        rows += [test] if test not in rows else []
    # both halves evaluated (`&`), neither short-circuiting the other
    return " && ".join(cols) if not rows else f"({' && '.join(rows)}) & ({' && '.join(cols)})"


def _offset_by_run_time(e: ir.Expr, k: ir.Kernel, seen: frozenset = frozenset()) -> bool:
    """Whether a copy's column origin adds a run-time size (a scalar parameter or a shape symbol,
    directly or through the kernel's scalars): std.data.pad's `c0 - left`, split's `Na + c0`.
    Such a tile may start between two vectors of aligned rows, and its copy into a fragment
    takes tl::copy_g2f's shifted runs (layout.cuh); a product with a constant keeps no offset
    (`j * BN`), and origins of block and loop indices alone never have the path, which NVVM's
    ld.global.nc loads would not survive."""
    if isinstance(e, ir.Cast):
        return _offset_by_run_time(e.x, k, seen)
    if isinstance(e, ir.BinOp) and e.op in ("+", "-"):
        return _offset_by_run_time(e.a, k, seen) or _offset_by_run_time(e.b, k, seen)
    if isinstance(e, ir.BinOp) and e.op == "*":
        return not isinstance(e.a, ir.Const) and not isinstance(e.b, ir.Const) and \
            (_offset_by_run_time(e.a, k, seen) or _offset_by_run_time(e.b, k, seen))
    if not isinstance(e, ir.Var):
        return False
    if any(p.name == e.name and p.kind == "scalar" for p in k.params) or \
            any(e.name == d for p in k.params for d in p.shape or () if isinstance(d, str)):
        return True
    if e.name in seen:
        return False
    return any(_offset_by_run_time(s.value, k, seen | {e.name}) for s in statements(k.body)
               if isinstance(s, ir.Assign) and s.name == e.name)


# STMATRIX (sm_90a): a copy of a 16-bit fragment in an mma accumulator layout into a shared tile
# whose rows are 16-byte pieces (swizzled, or a multiple of 8 elements long) is stmatrix's, four
# 8x8 matrices an instruction (tl::copy_f2s_stmatrix) where copy_f2s made a 32-bit store a pair:
# bench/attention_bwd_fused.tl's dS, 16 STS a thread, each at an address of its own held in a
# register (session 25's samples: 14% of the one-grid step there) -> 4 STSM. Off until the H200
# times it.
STMATRIX = False


def _view2d(extents) -> tuple[int, int] | None:
    """The 2-D shape of a tile whose non-1 extents are its last one or two."""
    ext = list(extents)
    while len(ext) > 2 and ext[0] == 1:
        ext.pop(0)
    if len(ext) > 2:
        return None
    return (1, ext[0]) if len(ext) == 1 else (ext[0], ext[1])


def _row_axis(extents) -> int | None:
    """The dimension a region's rows run along when it is not the one before the last: the
    one other than the last whose extent is not 1 (`Q[b, r:r+BM, h, :]` of a (batch, seq,
    heads, dim) tensor: axis 1).  None when that is the usual one or there are two."""
    axes = [i for i, e in enumerate(extents[:-1]) if e != 1]
    return axes[0] if len(axes) == 1 and axes[0] != len(extents) - 2 else None


class CopyGen(RowGatherGen):
    def global_view(self, region: ir.Region) -> GlobalView:
        p = self.params[region.name]
        if region.dims is None:
            dims = [self.dim_text(d) for d in p.shape]
        else:  # a view of the tensor (schedule/views.py): its memory in the view's shape
            dims = [f"({self.expr(d)})" for d in region.dims]
        offs = [self.expr(o) for o in region.offsets]
        row = _row_axis(region.extents)
        if row is not None:
            return self.strided_view(region, dims, offs, row)
        shape = _view2d(region.extents)
        if shape is None:
            raise CodegenError("copies of tiles with more than 2 dimensions are not supported by the CUDA target yet",
                               region.span)
        rank = len(dims)
        name = c_name(region.name)
        if rank == 1:
            return GlobalView(name, dims[0], "1", dims[0], "0", offs[0], shape)
        lead = rank - 2
        base = name
        rows = dims[-2]
        if lead:
            offset = f"static_cast<long long>({offs[0]})"
            for o, d in zip(offs[1:lead], dims[1:lead]):
                offset = f"({offset} * {d} + {o})"
            tail = " * ".join(f"static_cast<long long>({d})" for d in dims[lead:])
            base = f"({name} + {offset} * {tail})"
            inside = " && ".join(f"{o} >= 0 && {o} < {d}" for o, d in zip(offs[:lead], dims[:lead]))
            rows = f"(({inside}) ? {dims[-2]} : 0)"
        return GlobalView(base, dims[-1], rows, dims[-1], offs[-2], offs[-1], shape)

    def strided_view(self, region: ir.Region, dims, offs, row: int) -> GlobalView:
        """Rows along `row` and columns along the last dimension, the others fixed by single
        indices: rows are `stride` = the product of the later sizes apart, columns contiguous
        (so the copy primitives still move 16-byte vectors when the sizes allow)."""
        name, last = c_name(region.name), len(dims) - 1
        fixed = [i for i in range(last) if i != row]
        start = 1 if row == 0 else 0  # the outermost fixed index (rows along axis 0 start at 0)
        offset = f"static_cast<long long>({offs[start]})"
        for i in range(start + 1, last):
            offset = f"({offset} * {dims[i]} + {offs[i] if i != row else 0})"
        base = f"({name} + {offset} * static_cast<long long>({dims[last]}))"
        stride = " * ".join(f"static_cast<long long>({d})" for d in dims[row + 1:])
        inside = " && ".join(f"{offs[i]} >= 0 && {offs[i]} < {dims[i]}" for i in fixed)
        return GlobalView(base, f"({stride})", f"(({inside}) ? {dims[row]} : 0)", dims[last], offs[row], offs[last],
                          (region.extents[row], region.extents[last]))

    def buffer_shape2d(self, b: ir.Buffer, ref) -> tuple[int, int]:
        extents = ref.extents if isinstance(ref, ir.Region) else b.shape
        shape = _view2d(extents)
        if shape is None:
            raise CodegenError("copies of tiles with more than 2 dimensions are not supported by the CUDA target yet",
                               ref.span)
        return shape

    def stmt_Copy(self, c: ir.Copy, async_copy: bool = False) -> None:
        src, dst = c.src, c.dst
        sb, db = self.buffers.get(src.name), self.buffers.get(dst.name)
        if sb is None and db is None:
            raise CodegenError("a copy between two global tensors", c.span)
        if (sb is not None and isinstance(src, ir.Region)) or (db is not None and isinstance(dst, ir.Region)):
            if any(not isinstance(o, ir.Const) or o.value != 0 for o in (src if sb is not None and isinstance(src, ir.Region) else dst).offsets):
                raise CodegenError("copies of a part of a shared or fragment buffer are not supported by the CUDA "
                                   "target yet; copy whole buffers", c.span)
        if sb is None:
            view = self.global_view(src)
            self.copy_from_global(view, src, db, c, async_copy)
        elif db is None:
            view = self.global_view(dst)
            self.copy_to_global(view, dst, sb, c)
        else:
            self.copy_between_buffers(sb, db, c)

    def _check_shapes(self, view_shape, buf_shape, c):
        if tuple(view_shape) != tuple(buf_shape):
            raise CodegenError(f"a copy between a {view_shape[0]}x{view_shape[1]} region and a "
                               f"{buf_shape[0]}x{buf_shape[1]} tile is not supported by the CUDA target yet", c.span)

    def flat_origin(self, v: GlobalView, region) -> bool:
        """Whether a fragment's copy of `region` (viewed as `v`) is a tile of a vector (a 1-D
        tensor, or one viewed flat: an element-wise tile op's) from a column that the known
        ranges prove never negative (a block index times the tile): tl::copy_g2f_flat and
        copy_f2g_flat (layout.cuh) then test each run's first column against the vector's size
        alone, one 64-bit compare, in the TL_WHOLE_RUNS build."""
        if v.rows != "1" or v.row0 != "0" or v.shape[0] != 1:
            return False
        lo = open_range(region.offsets[-1], getattr(self, "ranges", None) or {})[0]
        return lo is not None and lo >= 0

    def copy_from_global(self, v: GlobalView, region, b: ir.Buffer, c, async_copy: bool) -> None:
        p = self.params[region.name]
        shape = self.buffer_shape2d(b, b)
        self._check_shapes(v.shape, shape, c)
        rows, cols = shape
        args = f"{v.stride}, {v.rows}, {v.cols}, {v.row0}, {v.col0}"
        T, U = c_type(p.dtype), c_type(b.dtype)
        if b.scope == "shared":
            lay = b.layout
            dst = self.smem_pointer(b.name)
            if p.dtype == b.dtype:
                self.emit(f"tl::copy_g2s<{T}, {rows}, {cols}, {self.k.threads}, {lay.pad}, {lay.swizzle_bytes}, "
                          f"{'true' if async_copy else 'false'}>({dst}, {v.base}, {args});")
            else:
                self.emit(f"tl::copy_g2s_convert<{T}, {U}, {rows}, {cols}, {self.k.threads}, {lay.pad}, "
                          f"{lay.swizzle_bytes}>({dst}, {v.base}, {args});")
        elif b.scope == "fragment":
            info = self.fragment(b.name)
            shifted = ", true" if _offset_by_run_time(region.offsets[-1], self.k) else ""
            if not shifted:  # a shifted copy keeps its paths in the TL_WHOLE_RUNS build
                note_whole_run(self, region, b.layout)
            if c.keep_l2:  # a gather's tile (schedule/l2_policy.py): loads with an L2 evict_last policy
                self.emit(f"tl::copy_g2f<{info.c_layout}, {'true' if shifted else 'false'}, true>("
                          f"{c_name(b.name)}, {v.base}, {args});")
            elif not shifted and self.flat_origin(v, region):
                self.emit(f"tl::copy_g2f_flat<{info.c_layout}>({c_name(b.name)}, {v.base}, {v.cols}, {v.col0});")
            else:
                self.emit(f"tl::copy_g2f<{info.c_layout}{shifted}>({c_name(b.name)}, {v.base}, {args});")
        else:
            self.emit(f"tl::copy_g2l<{T}, {U}, {rows}, {cols}>({c_name(b.name)}, {v.base}, {args});")

    def copy_batch(self, copies) -> None:
        """Copies from tensors into fragments whose loads are issued together
        (schedule/batch_loads.py): where every copy's tile lies inside its tensor's rows and
        every run of it inside the columns, the loads of all, then the conversions of all (one
        basic block); elsewhere one by one (`batch_test`: the rows one test of the tile's
        origin a copy, the runs' columns g2f_whole's of the tile seen alone, whose row bounds
        then fold away).  g2f_whole's row bounds of the tensor (64-bit clamps of each tile's
        origin) were 25 SASS instructions a tile of the column tile ops' loop, 100 on
        sum_axis0's hot path (f16, (16384, 8192), nvcc sm_90a); the columns' test is now the
        same in every iteration, hoisted out of the loop."""
        parts = []
        for c in copies:
            b = self.buffers.get(c.dst.name)
            view = self.global_view(c.src)
            self._check_shapes(view.shape, self.buffer_shape2d(b, b), c)
            parts.append((c, b, view, self.fragment(b.name).c_layout,
                          not _offset_by_run_time(c.src.offsets[-1], self.k) and self.flat_origin(view, c.src)))
            # g2f_whole's alignment test is compiled out under TL_WHOLE_RUNS, shifted or not
            note_whole_run(self, c.src, b.layout, shifted=_offset_by_run_time(c.src.offsets[-1], self.k))
        self.mark(copies[0])
        tests = batch_test([(v, lay, flat) for _, _, v, lay, flat in parts])
        self.emit(f"if ({tests}) {{  // load batch {copies[0].batch}: every load, then the conversions")
        self.indent += 1
        for k, (_, _, v, lay, _) in enumerate(parts):
            self.emit(f"const auto tl_batch{k} = tl::g2f_load<{lay}>({v.base}, {v.stride}, {v.row0}, {v.col0});")
        for k, (_, b, _, _, _) in enumerate(parts):
            self.emit(f"tl::g2f_convert({c_name(b.name)}, tl_batch{k});")
        self.indent -= 1
        self.emit("} else {")
        self.indent += 1
        for c, *_ in parts:
            self.stmt(c)
        self.indent -= 1
        self.emit("}")

    def copy_to_global(self, v: GlobalView, region, b: ir.Buffer, c) -> None:
        p = self.params[region.name]
        shape = self.buffer_shape2d(b, b)
        self._check_shapes(v.shape, shape, c)
        rows, cols = shape
        args = f"{v.stride}, {v.rows}, {v.cols}, {v.row0}, {v.col0}"
        T, U = c_type(b.dtype), c_type(p.dtype)
        if b.scope == "shared":
            lay = b.layout
            self.emit(f"tl::copy_s2g<{T}, {U}, {rows}, {cols}, {self.k.threads}, {lay.pad}, {lay.swizzle_bytes}>("
                      f"{v.base}, {self.smem_pointer(b.name)}, {args});")
        elif b.scope == "fragment":
            info = self.fragment(b.name)
            note_whole_run(self, region, b.layout)
            if self.flat_origin(v, region):
                self.emit(f"tl::copy_f2g_flat<{info.c_layout}>({v.base}, {c_name(b.name)}, {v.cols}, {v.col0});")
            else:
                self.emit(f"tl::copy_f2g<{info.c_layout}>({v.base}, {c_name(b.name)}, {args});")
        else:
            self.emit(f"tl::copy_l2g<{T}, {U}, {rows}, {cols}>({v.base}, {c_name(b.name)}, {args});")

    def stmatrix_store(self, s: ir.Buffer, d: ir.Buffer) -> bool:
        """Whether the copy of fragment `s` into shared `d` is stmatrix's (STMATRIX)."""
        from ..schedule.layout import MmaAccumulator

        lay = s.layout
        if not (STMATRIX and getattr(self, "arch", "").startswith("sm_90") and isinstance(lay, MmaAccumulator)
                and s.dtype == d.dtype and s.dtype.name in ("f16", "bf16") and len(s.shape) == 2):
            return False
        wm, wn = lay.warp_tile
        sw = d.layout.swizzle_bytes
        rows_ok = sw == 128 or (sw == 0 and (s.shape[1] + d.layout.pad) % 8 == 0)  # rows of 16-byte pieces
        return wn % 16 == 0 and (wm * wn // 32) % 8 == 0 and rows_ok

    def copy_between_buffers(self, s: ir.Buffer, d: ir.Buffer, c) -> None:
        ss, ds = self.buffer_shape2d(s, s), self.buffer_shape2d(d, d)
        self._check_shapes(ss, ds, c)
        rows, cols = ss
        T, U = c_type(s.dtype), c_type(d.dtype)
        kinds = (s.scope, d.scope)
        if kinds == ("shared", "shared"):
            self.emit(f"tl::copy_s2s<{T}, {U}, {rows}, {cols}, {self.k.threads}, {s.layout.pad}, {s.layout.swizzle_bytes}, "
                      f"{d.layout.pad}, {d.layout.swizzle_bytes}>({self.smem_pointer(d.name)}, {self.smem_pointer(s.name)});")
        elif kinds == ("shared", "fragment"):
            info = self.fragment(d.name)
            runs = ", true" if runs_aligned(s, d.layout) else ""  # a run at a time as vectors
            self.emit(f"tl::copy_s2f<{info.c_layout}, {T}, {U}, {rows}, {cols}, {s.layout.pad}, {s.layout.swizzle_bytes}"
                      f"{runs}>({c_name(d.name)}, {self.smem_pointer(s.name)});")
        elif kinds == ("fragment", "shared"):
            info = self.fragment(s.name)
            if self.stmatrix_store(s, d):  # FlashAttention 3's dS store: stmatrix, four 8x8 matrices at a time
                self.emit(f"tl::copy_f2s_stmatrix<{info.c_layout}, {U}, {rows}, {cols}, {d.layout.pad}, "
                          f"{d.layout.swizzle_bytes}>({self.smem_pointer(d.name)}, {c_name(s.name)});")
                return
            self.emit(f"tl::copy_f2s<{info.c_layout}, {T}, {U}, {rows}, {cols}, {d.layout.pad}, {d.layout.swizzle_bytes}>("
                      f"{self.smem_pointer(d.name)}, {c_name(s.name)});")
        elif kinds == ("fragment", "fragment") and s.layout == d.layout:
            info = self.fragment(s.name)
            self.emit("#pragma unroll")
            self.emit(f"for (int tl_r = 0; tl_r < {info.regs}; ++tl_r) {c_name(d.name)}[tl_r] = "
                      f"tl::cvt<{U}>({c_name(s.name)}[tl_r]);")
        elif kinds == ("fragment", "fragment"):
            self.exchange_copy(s, d, rows, cols)  # layouts that differ: through shared memory (exchanges.py)
        elif kinds == ("local", "local"):
            self.emit(f"for (int tl_i = 0; tl_i < {rows * cols}; ++tl_i) {c_name(d.name)}[tl_i] = "
                      f"tl::cvt<{U}>({c_name(s.name)}[tl_i]);")
        else:
            raise CodegenError(f"a copy from a {s.scope} buffer to a {d.scope} buffer"
                               f"{' of another layout' if kinds == ('fragment', 'fragment') else ''} is not supported "
                               "by the CUDA target yet", c.span)

    # ---- pipelined loops ---------------------------------------------------------------------
    def pipeline_plan(self, loop: ir.For) -> PipelinePlan | None:
        """How a pipelined loop becomes a cp.async ring of `stages` buffers, or None when its
        shape does not allow it (the caller then emits a plain loop with synchronous copies)."""
        split = gather_rows.split(loop, self.params, self.buffers)
        if split is None:
            return None
        producers, rest = split
        rest = after_scalar_lets(rest, self.buffers)
        stage_elems = {gather_rows.dst_name(p): stage_elements(self.buffers[gather_rows.dst_name(p)])
                       for p in producers}
        return PipelinePlan(loop, loop.stages, producers, rest, stage_elems)

    def pipeline(self, loop: ir.For) -> bool:
        plan = self.pipeline_plan(loop)
        if plan is None:
            return False
        self.emit_pipeline(plan, overlap=False)
        return True

    def staged(self, plan: PipelinePlan, iteration: str) -> dict:
        """The shared bases while an iteration's stage is current (restore the returned dict)."""
        saved = dict(self.smem_base)
        for name, n in plan.stage_elems.items():
            self.smem_base[name] = f"({c_name(name)} + (({iteration}) % {plan.stages}) * {n})"
        return saved

    def issue(self, plan: PipelinePlan, iteration: str) -> None:
        var = c_name(plan.loop.var)
        self.emit(f"const int {var} = {iteration};")
        self.emit(f"(void){var};")
        saved = self.staged(plan, iteration)
        for p in plan.producers:
            if isinstance(p, ir.Parallel):
                self.gather_async(gather_rows.row_gather(p, self.params, self.buffers))
            else:
                self.stmt_Copy(p, async_copy=True)
        self.smem_base = saved

    def emit_pipeline(self, plan: PipelinePlan, overlap: bool) -> None:
        """The ring: a prologue issues `stages - 1` iterations' copies; each iteration waits for
        its own, then issues the copies `stages - 1` ahead into the stage consumed last and
        computes.  With `overlap` the computing comes first and may leave work in flight (the
        target's `drain` finishes it): the overwrite then waits for a second barrier."""
        S, var = plan.stages, c_name(plan.loop.var)
        self.emit(f"{{  // pipelined over {S} stages: copies run {S - 1} iterations ahead through cp.async")
        self.indent += 1
        self.emit(f"const int tl_n = {self.expr(plan.loop.stop)};")
        self.emit(f"for (int tl_s = 0; tl_s < {S - 1}; ++tl_s) {{")
        self.indent += 1
        self.emit("if (tl_s < tl_n) {")
        self.indent += 1
        self.issue(plan, "tl_s")
        self.indent -= 1
        self.emit("}")
        self.emit("tl::cp_async_commit();")
        self.indent -= 1
        self.emit("}")
        ahead = self.table_loads(plan)
        for x, name in ahead.items():
            self.emit(f"int {name} = 0;")
        self.read_table_loads(plan, ahead, f"{S - 1}", "the first copies' table entries the loop issues")
        self.emit("for (int tl_k = 0; tl_k < tl_n; ++tl_k) {")
        self.indent += 1
        self.emit(f"tl::cp_async_wait<{S - 2}>();")
        self.after_async_copies()
        self.emit("__syncthreads();")

        def prefetch():
            self.emit(f"if (tl_k + {S - 1} < tl_n) {{")
            self.indent += 1
            for name in ahead.values():
                self.emit(f"const int {name}_now = tl::opaque({name});")
            self.hoisted.update({x: f"{name}_now" for x, name in ahead.items()})
            self.issue(plan, f"tl_k + {S - 1}")
            for x in ahead:
                self.hoisted.pop(x, None)
            self.indent -= 1
            self.emit("}")
            self.emit("tl::cp_async_commit();")
            self.read_table_loads(plan, ahead, f"tl_k + {S}", "the next copies' table entries, read an iteration ahead")

        if not overlap:
            prefetch()
        self.emit("{")
        self.indent += 1
        self.emit(f"const int {var} = tl_k;")
        self.emit(f"(void){var};")
        saved = self.staged(plan, "tl_k")
        self.block(plan.rest)
        self.smem_base = saved
        self.indent -= 1
        self.emit("}")
        if overlap:
            self.emit("__syncthreads();  // every warpgroup is done with the stage the prefetch overwrites")
            prefetch()
        self.indent -= 1
        self.emit("}")
        if overlap:
            self.drain()
        self.emit("tl::cp_async_wait<0>();")
        self.emit("__syncthreads();")
        self.keep_last_stage(plan)
        self.indent -= 1
        self.emit("}")

    def table_loads(self, plan: PipelinePlan) -> dict:
        """The loads of tensor parameters in the ring's copy offsets that read the loop's
        variable (a page table's entry: MLA decode's `KV[pages[b, first // PAGE + kb], ...]`),
        each to the name of a register that holds it for the next copies (the same names at each
        call).  Read one iteration ahead of their copies, their latency runs under the
        iteration's compute; read where the copies are issued, each iteration waited for it
        (a global load's latency, L2 or DRAM) before its first cp.async and its compute.  Only
        read-only parameters, 32-bit integer entries, indices that load nothing themselves."""
        var = plan.loop.var
        written = written_names(plan.loop.body)
        out: dict = {}
        for p in plan.producers:
            if not isinstance(p, ir.Copy) or not isinstance(p.src, ir.Region):
                continue
            for o in p.src.offsets:
                for x in loads(o):
                    if x in out or x.name not in self.params or x.name in written or x.dtype.name not in ("i32", "u32"):
                        continue
                    if any(isinstance(y, ir.Load) for i in x.indices for y in subexprs(i)):
                        continue
                    if var in {v.name for i in x.indices for v in variables(i)}:
                        out[x] = f"tl_ahead{len(out)}"
        return out

    def read_table_loads(self, plan: PipelinePlan, ahead: dict, iteration: str, why: str) -> None:
        """The entries of `ahead` for the copies of `iteration`, if the loop has one."""
        if not ahead:
            return
        self.emit(f"if ({iteration} < tl_n) {{  // {why}")
        self.indent += 1
        # the iteration through tl::opaque: an entry at an index the compiler sees as the same in
        # every lane went to a uniform register right after its load, which waited for it there
        self.emit(f"const int {c_name(plan.loop.var)} = tl::opaque({iteration});")
        for x, name in ahead.items():
            self.emit(f"{name} = {self.load(x)};")
        self.indent -= 1
        self.emit("}")

    def keep_last_stage(self, plan: PipelinePlan) -> None:
        """After the drained ring, the last iteration's stage of each buffer that code after
        the loop uses (`For.keep_last_stage`) copied into stage 0, which that code names; an
        empty loop leaves the buffers as they were (the interpreter's plain loop does too)."""
        kept = [name for name in plan.loop.keep_last_stage if name in plan.stage_elems]
        if not kept:
            return
        S = plan.stages
        self.emit(f"if (tl_n > 0 && (tl_n - 1) % {S} != 0) {{  // after the loop {', '.join(kept)}: the last "
                  "iteration's tile")
        self.indent += 1
        for name in kept:
            T = c_type(self.buffers[name].dtype)
            self.emit(f"tl::copy_stage_to_first<{T}, {plan.stage_elems[name]}, {self.k.threads}>("
                      f"{self.smem_pointer(name)}, (tl_n - 1) % {S});")
        self.after_async_copies()  # a wgmma after the loop reads these stores through the async proxy
        self.emit("__syncthreads();")
        self.indent -= 1
        self.emit("}")

    def drain(self) -> None:
        """Finish what an overlapped pipeline left in flight (the sm_90a target's wgmma)."""
