"""Warp-specialized pipelines, the decisions: which pipelined loop becomes a producer/consumer
ring, whether the kernel is persistent and runs in clusters, the tensor maps and block size
it asks of its launch.  The package docstring (`__init__.py`) says what the kernels look like."""

from __future__ import annotations

from dataclasses import dataclass

from ... import ir
from ...dtypes import DType
from ...ir.walk import statements, variables
from ...schedule.layout import parallel_layout, wgmma_accumulator
from ...schedule.sm_limits import REGISTERS_PER_SM
from ..copies import PipelinePlan, _view2d

PRODUCER_THREADS = 128
PRODUCER_REGS = 40  # what the producer keeps: it only computes addresses
TILE_GROUP = 8  # a persistent kernel walks tiles in groups of 8 block rows (L2 reuse of B)
CLUSTER = 2  # blocks per cluster in a persistent kernel that multicasts a shared operand


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
    store: bool = False  # the epilogue stores through this map (tl_tma's bit 1), else copies load (bit 0)


@dataclass
class TmaLoad:
    copy: ir.Copy
    map_index: int
    rows: int
    cols: int
    multicast: bool = False  # the same tile for every block of the cluster: each loads a part for all


@dataclass
class StagedStore:
    """The epilogue's `copy(acc, C[...])` of a persistent kernel, made through shared memory:
    each consumer warpgroup stages its `rows` rows at `offset` of the dynamic shared memory and
    stores them with the TMA through map `map_index`."""

    copy: ir.Copy
    map_index: int
    rows: int  # rows of the tile per consumer warpgroup (one TMA box high)
    offset: int  # byte offset of the staging buffer (1024-aligned), after the ring's barriers
    nbytes: int


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
    per_thread = min(255, REGISTERS_PER_SM // total // 8 * 8)
    share = (total * per_thread - PRODUCER_THREADS * PRODUCER_REGS) // threads // 8 * 8
    return min(240, share)


class WarpSpecPlanning:
    """The decisions of a warp-specialized kernel (mixed into `Sm90` through `WarpSpecialized`):
    which loop, persistence, clusters, the tensor maps and the block size."""

    ws: WarpSpecPlan | None = None  # the specialized loop's plan, None when the kernel has none
    staged_epilogue: StagedStore | None = None  # the epilogue's store through shared memory and the TMA

    @property
    def ws_loop(self) -> ir.For | None:
        return self.ws.pipeline.loop if self.ws is not None else None

    def find_warp_specialized_loop(self) -> None:
        """The one top-level pipelined loop to specialize, if the kernel allows it, and whether
        the kernel is persistent and clustered: decides the block size and the tensor maps
        before any code is emitted."""
        self.tensor_maps: list[TensorMapSpec] = []
        self.ws, self.persistent, self.cluster, self.staged_epilogue = None, False, 1, None
        if self.k.threads % 128 or self.k.threads + PRODUCER_THREADS > 1024:
            return
        for i, s in enumerate(self.k.body):
            if isinstance(s, ir.For) and s.kind == "pipelined" and s.stages > 1:
                if all(_thread_local(x, self.buffers) for x in self.k.body[:i]):
                    self.ws = self.ws_plan(s)
                break
        if self.ws is None:
            return
        # persistent when the epilogue never waits for the whole block (the producer is still
        # running then)
        self.persistent = self.epilogue_free(self.k.body[i + 1:])
        self.cluster = self.cluster_size()
        for load in self.ws.loads:
            load.multicast = self.cluster > 1 and self.shared_by_cluster(load.copy)
            load.map_index = self.tensor_map(load)
        self.staged_epilogue = self.staged_store(self.k.body[i + 1:]) if self.persistent else None

    def staged_store(self, after) -> StagedStore | None:
        """The epilogue's store of the accumulator tile to a tensor, if the TMA can make it
        from a staging buffer that fits beside the ring: a top-level `copy` of a whole wgmma
        accumulator to a tile of a tensor parameter (rank 2 to 5, leading extents 1) of 2- or
        4-byte elements, in whole 128-byte segments."""
        copies = [s for s in after if isinstance(s, ir.Copy)]
        if len(copies) != 1:
            return None
        c = copies[0]
        frag, p = self.buffers.get(c.src.name), self.params.get(c.dst.name)
        if not isinstance(c.src, ir.BufferRef) or not isinstance(c.dst, ir.Region) or frag is None or p is None \
                or frag.scope != "fragment" or len(frag.shape) != 2 or not 2 <= len(p.shape) <= 5:
            return None
        extents = list(c.dst.extents)
        if frag.layout != wgmma_accumulator(frag.shape, self.k.threads) or any(e != 1 for e in extents[:-2]) \
                or _view2d(extents) != tuple(frag.shape):
            return None
        rows, cols = frag.shape
        size = p.dtype.itemsize
        groups = self.k.threads // 128
        if size not in (2, 4) or (cols * size) % 128 or rows % groups or rows // groups > 256:
            return None
        offset = -(-self.ring_end // 1024) * 1024
        nbytes = rows * cols * size
        if offset + nbytes > self.target.smem_per_block:
            return None
        spec = TensorMapSpec(p.name, p.dtype, tuple(p.shape), rows // groups, 128 // size, store=True)
        self.tensor_maps.append(spec)
        return StagedStore(c, len(self.tensor_maps) - 1, rows // groups, offset, nbytes)

    def cluster_size(self) -> int:
        """Two blocks of a cluster take two consecutive tiles of a persistent kernel's order,
        which (8 rows of tiles to a group) mostly share x: a tile they both copy then (one that
        does not depend on y, B of a GEMM) is copied once, each block loading half of its rows
        into both blocks' shared memory (TMA multicast), halving that operand's traffic out
        of L2; where the two tiles' x differ each block loads its own."""
        if not self.persistent or len(self.k.grid) < 2:
            return 1
        shared = [x for x in self.ws.loads if self.shared_by_cluster(x.copy)]
        # the blocks of a cluster wait on each other's stages: every tile must run as many
        # iterations, so the loop's length may read only sizes and scalar parameters
        same_length = self.same_for_every_tile(self.ws_loop.stop)
        return CLUSTER if shared and same_length and all(x.rows % 16 == 0 for x in shared) else 1

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

    def epilogue_free(self, stmts) -> bool:
        for s in stmts:
            if isinstance(s, ir.Copy):
                src = self.buffers.get(s.src.name)
                if src is None or src.scope not in ("fragment", "local") or s.dst.name not in self.params:
                    return False
            elif not self.barrier_free([s]):
                return False
        return True

    @property
    def ring_barriers(self) -> int:
        """Byte offset of the ring's mbarriers in dynamic shared memory: after the kernel's
        buffers, 8-aligned; a full and an empty barrier (8 bytes each) per stage."""
        return -(-self.k.smem_bytes // 8) * 8

    @property
    def ring_end(self) -> int:
        return self.ring_barriers + 16 * self.ws.pipeline.stages

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
