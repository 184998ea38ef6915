"""Warp-specialized pipelines for the sm_90a target: a `pipelined` loop that copies tiles from
global into shared memory and computes on them becomes a producer/consumer ring.

The block gets one more warpgroup than the kernel asks for (threads THREADS .. THREADS+127),
the producer.  It gives most of its registers away (`setmaxnreg`) and fills the stages: one
elected thread issues a TMA copy per 128-byte column segment of each tile and the stage's
"full" mbarrier completes when their bytes have landed.  The consumer warpgroups (the
kernel's own THREADS threads, so every layout the scheduler chose still holds) take the
registers, wait on "full", compute, and arrive on the stage's "empty" mbarrier, which the
producer waits on before it overwrites the stage.  A single wgmma gemm keeps one group in
flight across iterations: a stage is released one iteration late, once its wgmma is done.

The TMA needs a tensor map per tensor, encoded on the host (`runtime/tensormap.py`, and the C
launcher); the driver refuses tensors whose base or row pitch is not 16-byte aligned.  The
kernel then gets `tl_tma = 0` and its producer warpgroup copies element by element instead,
so every shape stays correct and only unaligned ones are slow.

When a loop does not fit (a copy the TMA cannot express, a statement that synchronizes the
block inside the loop, work before the loop that extra threads must not do), the sm_80 style
cp.async pipeline is generated as before.
"""
from __future__ import annotations

from dataclasses import dataclass

from .. import ir
from ..dtypes import DType
from ..ir.walk import statements, variables
from ..schedule.layout import parallel_layout
from .cnames import c_name, c_type
from .copies import PipelinePlan, _view2d

PRODUCER_THREADS = 128
PRODUCER_REGS = 40  # what the producer keeps: it only computes addresses
TILE_GROUP = 8  # a persistent kernel walks tiles in groups of 8 block rows (L2 reuse of B)
CLUSTER = 2  # blocks per cluster in a persistent kernel that multicasts a shared operand
REGISTER_FILE = 65536


@dataclass(frozen=True)
class TensorMapSpec:
    """One tensor map the launch passes: a tensor parameter seen by the TMA as a row-major
    tensor of its own rank, copied in boxes of `box_rows` x `box_cols` elements (one 128-byte
    column segment of a tile; leading dimensions 1)."""

    param: str
    dtype: DType
    shape: tuple  # the parameter's dims, ints or shape symbols, outermost first
    box_rows: int
    box_cols: int


@dataclass
class TmaLoad:
    copy: ir.Copy
    map_index: int
    rows: int
    cols: int
    multicast: bool = False  # the same tile for every block of the cluster: each loads a part for all


@dataclass
class WarpSpecPlan:
    pipeline: PipelinePlan
    loads: list  # TmaLoad per producer copy
    overlap: bool  # the loop computes one wgmma gemm, kept in flight across iterations


# CUtensorMapDataType (cuda.h) by element: the TMA moves bytes, so 8-bit types travel as UINT8.
_TMA_DTYPES = {"f16": 6, "bf16": 9, "f32": 7, "f64": 8, "i32": 3, "u32": 2, "i64": 5, "u64": 4,
               "i16": 1, "u16": 1, "i8": 0, "u8": 0, "f8e4m3": 0, "f8e5m2": 0, "bool": 0}


def tma_dtype(dt: DType) -> int:
    return _TMA_DTYPES[dt.name]


def consumer_registers(threads: int) -> int:
    """Registers per consumer thread after the producer gave its own away: the block holds
    (threads + 128) x R registers, R what `__launch_bounds__(threads + 128, 1)` allows."""
    total = threads + PRODUCER_THREADS
    per_thread = min(255, REGISTER_FILE // total // 8 * 8)
    share = (total * per_thread - PRODUCER_THREADS * PRODUCER_REGS) // threads // 8 * 8
    return min(240, share)


class WarpSpecialized:
    """Mixed into the sm_90a generator (`Sm90`)."""

    ws_loop: ir.For | None = None

    def find_warp_specialized_loop(self) -> None:
        """The one top-level pipelined loop to specialize, if the kernel allows it; decides
        the block size and the tensor maps before any code is emitted."""
        self.tensor_maps: list[TensorMapSpec] = []
        self.ws_loop = None
        self.persistent = False
        if self.k.threads % 128 or self.k.threads + PRODUCER_THREADS > 1024:
            return
        for i, s in enumerate(self.k.body):
            if isinstance(s, ir.For) and s.kind == "pipelined" and s.stages > 1:
                before = self.k.body[:i]
                if all(_thread_local(x, self.buffers) for x in before) and self.ws_plan(s) is not None:
                    self.ws_loop = s
                break
        self.decide_persistence()
        self.decide_cluster()
        if self.ws_loop is not None:
            self.ws = self.ws_plan(self.ws_loop)
            for load in self.ws.loads:
                load.multicast = self.cluster > 1 and self.shared_by_cluster(load.copy)
                load.map_index = self.tensor_map(load)

    def decide_cluster(self) -> None:
        """Two blocks of a cluster take two consecutive tiles of a persistent kernel's order,
        which (8 rows of tiles to a group) mostly share x: a tile they both copy then (one that
        does not depend on y, B of a GEMM) is copied once, each block loading half of its rows
        into both blocks' shared memory (TMA multicast), halving that operand's traffic out
        of L2; where the two tiles' x differ each block loads its own."""
        self.cluster = 1
        if not self.persistent or len(self.k.grid) < 2:
            return
        loads = self.ws_plan(self.ws_loop).loads
        shared = [x for x in loads if self.shared_by_cluster(x.copy)]
        # the blocks of a cluster wait on each other's stages: every tile must run as many
        # iterations, so the loop's length may read only sizes and scalar parameters
        same_length = self.same_for_every_tile(self.ws_loop.stop)
        if shared and same_length and all(x.rows % 16 == 0 for x in shared):
            self.cluster = CLUSTER

    def same_for_every_tile(self, e) -> bool:
        fixed = {*self.k.shape_symbols(), *(p.name for p in self.k.params if p.kind == "scalar")}
        return all(v.name in fixed for v in variables(e))

    def shared_by_cluster(self, c: ir.Copy) -> bool:
        """Whether both blocks of a cluster copy the same tile: its origin reads only the loop
        variable, the other block indices, scalar parameters and shape sizes (a scalar the
        kernel computes may depend on y, as a grouped GEMM's expert does)."""
        same = {self.ws_loop.var, *self.k.block_vars[:1], *self.k.block_vars[2:], *self.k.shape_symbols(),
                *(p.name for p in self.k.params if p.kind == "scalar")}
        return all(v.name in same for o in c.src.offsets for v in variables(o))

    def decide_persistence(self) -> None:
        """A kernel is persistent when it is the specialized loop between thread-local work and
        an epilogue that never waits for the whole block (the producer is still running then)."""
        self.persistent = False
        if self.ws_loop is None:
            return
        i = self.k.body.index(self.ws_loop)
        self.persistent = self.epilogue_free(self.k.body[i + 1:])

    def epilogue_free(self, stmts) -> bool:
        for s in stmts:
            if isinstance(s, ir.Copy):
                src = self.buffers.get(s.src.name)
                if src is None or src.scope not in ("fragment", "local") or s.dst.name not in self.params:
                    return False
            elif not self.barrier_free([s]):
                return False
        return True

    def block(self, stmts) -> None:
        """A persistent kernel's body is the specialized loop with the statements around it
        inside its tile loop."""
        if getattr(self, "persistent", False) and stmts is self.k.body:
            i = self.k.body.index(self.ws_loop)
            self.mark(self.ws_loop)
            self.emit_warp_specialized(self.ws_loop, before=stmts[:i], after=stmts[i + 1:])
            return
        super().block(stmts)

    @property
    def launch_threads(self) -> int:
        return self.k.threads + (PRODUCER_THREADS if self.ws_loop is not None else 0)

    def ws_plan(self, loop: ir.For) -> WarpSpecPlan | None:
        plan = self.pipeline_plan(loop)
        if plan is None or not self.barrier_free(plan.rest, in_loop=True):
            return None
        loads = []
        for p in plan.producers:
            load = self.tma_load(p)
            if load is None:
                return None
            loads.append(load)
        one_gemm = len(plan.rest) == 1 and isinstance(plan.rest[0], ir.Gemm) and self.uses_wgmma(plan.rest[0])
        return WarpSpecPlan(plan, loads, one_gemm)

    def tma_load(self, c: ir.Copy) -> TmaLoad | None:
        """A copy the TMA can make: a whole tile of 128-byte column segments (the swizzled
        layout) from a tensor of rank 2 to 5, its leading extents 1."""
        p, b = self.params[c.src.name], self.buffers[c.dst.name]
        if not 2 <= len(p.shape) <= 5 or b.layout.swizzle_bytes != 128 or len(b.shape) != 2:
            return None
        extents = list(c.src.extents)
        if any(e != 1 for e in extents[:-2]) or _view2d(extents) != tuple(b.shape):
            return None
        rows, cols = b.shape
        seg = 128 // b.dtype.itemsize
        if (cols * b.dtype.itemsize) % 128 or rows > 256:
            return None
        return TmaLoad(c, -1, rows, cols)

    def tensor_map(self, load: TmaLoad) -> int:
        """The index of the map a load uses (one per tensor and box), registered on first use."""
        p, b = self.params[load.copy.src.name], self.buffers[load.copy.dst.name]
        rows = load.rows // self.cluster if load.multicast else load.rows
        spec = TensorMapSpec(p.name, p.dtype, tuple(p.shape), rows, 128 // b.dtype.itemsize)
        if spec not in self.tensor_maps:
            self.tensor_maps.append(spec)
        return self.tensor_maps.index(spec)

    def barrier_free(self, stmts, in_loop: bool = False) -> bool:
        """Statements the consumers can run while the producer thread is busy elsewhere: none
        may wait for the whole block.  Inside the loop a `sync` only orders the producer's
        copies before the compute (the scheduler's barriers), which the stage's full barrier
        already does, so it is dropped — as long as the consumers write no shared memory."""
        for s in statements(stmts):
            if isinstance(s, ir.Gemm):
                if not self.uses_wgmma(s):
                    return False
            elif isinstance(s, ir.Parallel):
                if self.exchange_plan(s, parallel_layout(s, self.k)):
                    return False
            elif isinstance(s, (ir.Fill, ir.Store)):
                name = s.buffer if isinstance(s, ir.Fill) else s.name
                if name in self.buffers and self.buffers[name].scope == "shared":
                    return False
            elif isinstance(s, ir.Sync):
                if not in_loop:
                    return False
            elif not isinstance(s, (ir.LetScalar, ir.Assign, ir.If, ir.For, ir.Break, ir.Continue)):
                return False
        return True

    def stmt_Sync(self, s) -> None:
        if getattr(self, "in_consumer_loop", False):
            self.emit("// sync: the stage's full barrier already orders the copies before this")
            return
        super().stmt_Sync(s)

    # ---- emission ------------------------------------------------------------------------------
    def emit_warp_specialized(self, loop: ir.For, before=(), after=()) -> None:
        """The ring for `loop`.  Persistent (`before`/`after` given: the kernel's statements
        around the loop): each block loops over tiles (`tl::persistent_tile`, grouped so that a
        wave of blocks shares rows of A and columns of B in L2) and the producer runs ahead into
        the next tile's stages while the consumers store this one."""
        w = self.ws
        plan, S, T = w.pipeline, w.pipeline.stages, self.k.threads
        persistent = self.persistent
        stage_bytes = sum(load.rows * load.cols * self.buffers[load.copy.dst.name].dtype.itemsize for load in w.loads)
        offset = -(-self.k.smem_bytes // 8) * 8
        self.scratch_bytes = max(self.scratch_bytes, offset + 16 * S - self.k.smem_bytes)
        e = self.emit
        e(f"{{  // {'persistent, ' if persistent else ''}warp-specialized over {S} stages: threads {T}..{T + 127} "
          f"produce (TMA), {T // 128} consumer warpgroup{'s' if T > 128 else ''} compute")
        self.indent += 1
        e(f"unsigned long long* tl_full = reinterpret_cast<unsigned long long*>(tl_smem + {offset});")
        e(f"unsigned long long* tl_empty = tl_full + {S};")
        if persistent:
            extents = [self.expr(g) for g in self.k.grid] + ["1"] * (3 - len(self.k.grid))
            e(f"const int tl_tiles_x = {extents[0]}, tl_tiles_y = {extents[1]}, tl_tiles_z = {extents[2]};")
        else:
            e(f"const int tl_n = {self.expr(plan.loop.stop)};")
        e("if (threadIdx.x == 0) {")
        e(f"  for (int tl_s = 0; tl_s < {S}; ++tl_s) {{")
        e(f"    tl::mbar_init(tl_full + tl_s, tl_tma ? 1 : {PRODUCER_THREADS});")
        e(f"    tl::mbar_init(tl_empty + tl_s, {self.cluster * T // 32});  // one arrival per consumer warp"
          f"{' of the cluster' if self.cluster > 1 else ''}")
        e("  }")
        e("  tl::fence_barrier_init();")
        e("}")
        if self.cluster > 1:
            e(f"const unsigned tl_rank = tl::cluster_rank();  // this block's place in its cluster of {self.cluster}")
            e("tl::cluster_sync();  // the peer's barriers are ready before anyone copies into it")
        else:
            e("__syncthreads();")
        e(f"if (threadIdx.x >= {T}) {{  // the producer warpgroup")
        self.indent += 1
        e(f"tl::setmaxnreg_dec<{PRODUCER_REGS}>();")
        e(f"const int tl_worker = threadIdx.x - {T};")
        e("int tl_it = 0;  // position in the ring, counted across tiles")
        e("if (tl_tma) {")
        self.indent += 1
        e("if (tl_worker == 0) {")
        self.indent += 1
        for i in range(len(self.tensor_maps)):
            e(f"tl::prefetch_tensor_map(&tl_map{i});")
        self.over_tiles([x for x in before if not isinstance(x, ir.Fill)],
                        lambda: self.producer_loop(w, lambda: self.emit_tma_loads(w, stage_bytes)))
        self.indent -= 1
        e("}")
        self.indent -= 1
        e("} else {  // the host could not encode a tensor map (unaligned rows): copy element by element")
        self.indent += 1
        self.over_tiles([x for x in before if not isinstance(x, ir.Fill)],
                        lambda: self.producer_loop(w, lambda: self.emit_element_loads(w)))
        self.indent -= 1
        e("}")
        e("return;")
        self.indent -= 1
        e("}")
        e(f"tl::setmaxnreg_inc<{consumer_registers(T)}>();")
        e("int tl_it = 0;")

        def consume():
            self.consumer_loop(w)
            if persistent and self.cluster > 1:
                e("if (tl_valid) {  // a block past the last tile stores nothing")
                self.nested(after)
                e("}")
            elif persistent:
                self.block(after)
        self.over_tiles(before, consume)
        if self.cluster > 1:
            e("tl::cluster_sync();  // the peer may still arrive on this block's barriers until here")
        elif not persistent:
            e("__syncthreads();  // every consumer is past its last wait: the barriers' memory is free")
        self.indent -= 1
        e("}")

    def over_tiles(self, before, body) -> None:
        """`body` once per tile of this block: in a persistent kernel inside the tile loop, after
        the block's indices and the statements before the pipelined loop; otherwise once."""
        if not self.persistent:
            body()
            return
        e = self.emit
        names = [c_name(self.k.block_vars[i]) if i < len(self.k.block_vars) else f"tl_b{'xyz'[i]}" for i in range(3)]
        if self.cluster > 1:
            # the clusters walk groups of consecutive tiles; a block past the last tile still
            # copies its part for its peers and stores nothing
            C = self.cluster
            e("const int tl_tiles = tl_tiles_x * tl_tiles_y * tl_tiles_z;")
            e(f"for (int tl_pair = blockIdx.x / {C}; tl_pair < (tl_tiles + {C - 1}) / {C}; tl_pair += gridDim.x / {C}) {{")
            self.indent += 1
            e(f"int {', '.join(names)};  // this block's tile: in a persistent kernel the grid counts tiles")
            e(f"const bool tl_share = tl::cluster_tile<{TILE_GROUP}, {C}>(tl_pair, tl_tiles_x, tl_tiles_y, tl_tiles, "
              f"tl_rank, {', '.join(names)});")
            e(f"const bool tl_valid = tl_pair * {C} + static_cast<int>(tl_rank) < tl_tiles;")
            e("tl::unused(tl_share, tl_valid);")
        else:
            e("for (int tl_tile = blockIdx.x; tl_tile < tl_tiles_x * tl_tiles_y * tl_tiles_z; tl_tile += gridDim.x) {")
            self.indent += 1
            e(f"int {', '.join(names)};  // this block's tile: in a persistent kernel the grid counts tiles")
            e(f"tl::persistent_tile<{TILE_GROUP}>(tl_tile, tl_tiles_x, tl_tiles_y, {', '.join(names)});")
        for n in names:
            e(f"(void){n};")
        self.block(before)
        scalars = [c_name(x.name) for x in before if isinstance(x, ir.LetScalar)]
        if scalars:  # each role reads only some of them (a cast to void does not count for nvcc)
            e(f"tl::unused({', '.join(scalars)});")
        e(f"const int tl_n = {self.expr(self.ws_loop.stop)};")
        body()
        self.indent -= 1
        e("}")

    def producer_loop(self, w: WarpSpecPlan, loads) -> None:
        S = w.pipeline.stages
        e = self.emit
        e("for (int tl_k = 0; tl_k < tl_n; ++tl_k, ++tl_it) {")
        self.indent += 1
        e(f"const int tl_stage = tl_it % {S};")
        e(f"tl::mbar_wait(tl_empty + tl_stage, ((tl_it / {S}) & 1) ^ 1);  // the consumers released it")
        var = c_name(w.pipeline.loop.var)
        e(f"const int {var} = tl_k;")
        e(f"(void){var};")
        saved = self.staged(w.pipeline, "tl_it")
        loads()
        self.smem_base = saved
        self.indent -= 1
        e("}")

    def emit_tma_loads(self, w: WarpSpecPlan, stage_bytes: int) -> None:
        self.emit(f"tl::mbar_arrive_expect_tx(tl_full + tl_stage, {stage_bytes});")
        for load in w.loads:
            region = load.copy.src
            b = self.buffers[load.copy.dst.name]
            offs = [self.expr(o) for o in region.offsets]
            rank = len(offs)
            lead = ", ".join(offs[:-2]) or "0"
            if load.multicast:
                self.emit(f"tl::tma_load_tile_multicast<{c_type(b.dtype)}, {load.rows}, {load.cols}, {rank}, "
                          f"{self.cluster}>({self.smem_pointer(b.name)}, &tl_map{load.map_index}, tl_full + tl_stage, "
                          f"{offs[-1]}, {offs[-2]}, {{{lead}}}, tl_rank, tl_share);")
                continue
            self.emit(f"tl::tma_load_tile<{c_type(b.dtype)}, {load.rows}, {load.cols}, {rank}>("
                      f"{self.smem_pointer(b.name)}, &tl_map{load.map_index}, tl_full + tl_stage, {offs[-1]}, "
                      f"{offs[-2]}, {{{lead}}});")

    def release(self, barrier: str) -> str:
        """A consumer warp's arrival on a stage's empty barrier: in a cluster, on every block's,
        since each block's producer writes into all of them."""
        if self.cluster > 1:
            return f"tl::mbar_arrive_cluster<{self.cluster}>({barrier});"
        return f"tl::mbar_arrive({barrier});"

    def emit_element_loads(self, w: WarpSpecPlan) -> None:
        for load in w.loads:
            v = self.global_view(load.copy.src)
            b = self.buffers[load.copy.dst.name]
            self.emit(f"tl::copy_g2s_elements<{c_type(b.dtype)}, {load.rows}, {load.cols}, {PRODUCER_THREADS}, "
                      f"{b.layout.pad}, {b.layout.swizzle_bytes}>({self.smem_pointer(b.name)}, {v.base}, {v.stride}, "
                      f"{v.rows}, {v.cols}, {v.row0}, {v.col0}, tl_worker);")
        self.emit("tl::fence_proxy_async();  // plain stores, read next by the tensor cores")
        self.emit("tl::mbar_arrive(tl_full + tl_stage);")

    def consumer_loop(self, w: WarpSpecPlan) -> None:
        plan, S = w.pipeline, w.pipeline.stages
        e = self.emit
        var = c_name(plan.loop.var)
        e("for (int tl_k = 0; tl_k < tl_n; ++tl_k, ++tl_it) {")
        self.indent += 1
        e(f"const int tl_stage = tl_it % {S};")
        e(f"tl::mbar_wait(tl_full + tl_stage, (tl_it / {S}) & 1);")
        e("{")
        self.indent += 1
        e(f"const int {var} = tl_k;")
        e(f"(void){var};")
        saved = self.staged(plan, "tl_it")
        self.in_flight, self.in_consumer_loop = w.overlap, True
        self.block(plan.rest)
        self.in_flight, self.in_consumer_loop = False, False
        self.smem_base = saved
        self.indent -= 1
        e("}")
        if w.overlap:
            e("// the previous stage's wgmma has completed (one group stays in flight): release it")
            e(f"if (tl_k > 0 && threadIdx.x % 32 == 0) {self.release(f'tl_empty + (tl_it + {S - 1}) % {S}')}")
        else:
            e(f"if (threadIdx.x % 32 == 0) {self.release('tl_empty + tl_stage')}")
        self.indent -= 1
        e("}")
        if w.overlap:
            gemm = plan.rest[0]
            e("tl::wgmma_wait<0>();")
            e(f"tl::fence_registers<{self.buffers[gemm.c].shape[1] // 2}>({c_name(gemm.c)});")
            if self.persistent:
                e("// and the last stage, which the next tile's copies will overwrite")
                e(f"if (tl_n > 0 && threadIdx.x % 32 == 0) {self.release(f'tl_empty + (tl_it + {S - 1}) % {S}')}")


def _thread_local(s, buffers) -> bool:
    """Work before the loop that the producer's threads may also do: scalars (loops and
    branches over them included, as a grouped GEMM's search for its group) and clearing
    registers, nothing another thread could see."""
    if isinstance(s, (ir.LetScalar, ir.Assign, ir.Break, ir.Continue)):
        return True
    if isinstance(s, ir.Fill):
        return buffers[s.buffer].scope in ("fragment", "local")
    if isinstance(s, ir.For) and s.kind in ("serial", "unroll"):
        return all(_thread_local(x, buffers) for x in s.body)
    if isinstance(s, ir.If):
        return all(_thread_local(x, buffers) for x in (*s.then, *s.orelse))
    return False
