"""The tile IR of a warp-specialized kernel: what `schedule/warpspec.py` decided, recorded on
the `Kernel` (`Kernel.warp_spec`) for the code generator to render (`codegen/warpspec/`), the
interpreter to run (`interp/ring.py`) and `--emit ir` to show (`printer.py`).

One pipelined loop of the kernel's body becomes a ring of `stages` shared-memory stages: a
producer warpgroup (`producer_threads` more threads than the kernel asks for) copies each
iteration's tiles into stage `it % stages` of their buffers and completes that stage's "full"
mbarrier; the consumer warpgroups (the kernel's own threads) wait on it, run the loop's other
statements on that stage and arrive on its "empty" mbarrier, which the producer waits on before
it writes the stage again.  `it` counts iterations across the tiles of a persistent kernel.
"""
from __future__ import annotations

from typing import Any

from ..dtypes import DType
from ..frozen import frozen
from .nodes import Node


@frozen
class Im2colWindow(Node):
    """What an im2col map's encoding needs beyond the image's sizes (ir.Im2colTile's): the
    output pixels' windows' top-left corners are `lower + stride * (oh, ow)` (w then h), `out`
    (Exprs of the shape symbols `symbols`, w then h) pixels a row and rows an image; `columns`
    nonzero: C must be a multiple of it (a tile of im2col's flattened columns)."""

    lower: tuple
    stride: tuple
    out: tuple
    symbols: tuple
    columns: int = 0


@frozen
class ViewDims(Node):
    """A tensor seen in another shape (a view's region, Region.dims): its `dims` (Exprs of the
    shape symbols `symbols`, outermost first), which the launch computes from their values."""

    dims: tuple
    symbols: tuple


@frozen
class TensorMapSpec(Node):
    """One tensor map the launch passes: a tensor parameter seen by the TMA as a row-major
    tensor of its own rank, copied in boxes of `box_rows` x `box_cols` elements (one 128-byte
    column segment of a tile), the rows along dimension `row_axis` (outermost first; None: the
    one before the last) and every other dimension 1 (a weight's [F, K, K, C] tile of one
    kernel position: rows along F).  `swizzle` False: the box lands as written, unswizzled (a
    one-row box of `box_cols` elements into a 1-D shared buffer: attention's per-query
    statistics, StageLoad's `flat`)."""

    param: str
    dtype: DType
    shape: tuple  # the parameter's dims, ints or shape symbols, outermost first
    box_rows: int
    box_cols: int
    store: bool = False  # the epilogue stores through this map (tl_tma's bit 1), else copies load (bit 0)
    row_axis: int | None = None
    swizzle: bool = True  # CU_TENSOR_MAP_SWIZZLE_128B, else SWIZZLE_NONE
    # an im2col map (cuTensorMapEncodeIm2col) of an NHWC image: its box is `box_rows` pixels of
    # `box_cols` channels (StageLoad.im2col)
    im2col: Im2colWindow | None = None
    # the map sees the tensor in a view's shape (the epilogue's copy to a view: std.conv's y as
    # [N * OH * OW, F])
    view: ViewDims | None = None

    @property
    def launch_sizes(self) -> tuple:
        """What the launch gives the map's encoding (runtime/tensormap.py): the tensor's sizes,
        and an im2col map's window's shape symbols after them; a view's map, its symbols."""
        if self.view is not None:
            return self.view.symbols
        return self.shape + self.im2col.symbols if self.im2col is not None else self.shape

    def box(self) -> list:
        """The box, innermost dimension first (as cuTensorMapEncodeTiled takes it); an im2col
        map's: channels a pixel, pixels."""
        if self.im2col is not None:
            return [self.box_cols, self.box_rows]
        rank = len(self.view.dims) if self.view is not None else len(self.shape)
        out = [self.box_cols] + [1] * (rank - 1)
        if rank > 1:
            out[rank - 1 - (rank - 2 if self.row_axis is None else self.row_axis)] = self.box_rows
        return out


# CUtensorMapDataType (cuda.h) by element: the TMA moves bytes, so 8-bit types travel as UINT8.
# Here, beside the spec, for the launch (runtime/tensormap.py) as much as for the code generator.
_TMA_DTYPES = {"f16": 6, "bf16": 9, "f32": 7, "f64": 8, "i32": 3, "u32": 2, "i64": 5, "u64": 4,
               "i16": 1, "u16": 1, "i8": 0, "u8": 0, "f8e4m3": 0, "f8e5m2": 0, "bool": 0}


def tma_dtype(dt: DType) -> int:
    """The `CUtensorMapDataType` of a tensor map over elements of `dt`."""
    return _TMA_DTYPES[dt.name]


@frozen
class StageLoad(Node):
    """The producer's copy at `index` of the ring loop's body: a tile of `rows` x `cols` into
    stage `it % stages` of `buffer`, whose stages lie `stage_elems` elements apart, through
    tensor map `tensor_map` (its rows along the tensor's dimension `row_axis`, None: the one
    before the last); `multicast`: each block of the cluster loads 1/cluster of its rows
    into every block's stage (the tile is the same for all of them).  `gather`: the statement is
    a row gather (schedule/gather_rows.py: an implicit GEMM's im2col tile), which every producer
    thread moves in 16-byte cp.async vectors, each thread arriving on the stage's full barrier
    once its own have landed (no tensor map: `tensor_map` is -1).  `flat`: one unswizzled box
    fills the stage: a 1-D buffer of `cols` elements (rows 1) along the tensor's last
    dimension, or a 2-D tile of `rows` x `cols`, unpadded (schedule/dequant_ring.py: a
    dequantizing kernel's scales and zero points).
    `im2col`: the statement is an `im2col` loop (ir.Im2colTile) the TMA loads in its im2col
    mode, one box a 128-byte column segment; where the host could not encode the map (the
    tile's columns not within one kernel position), the producer's threads gather it."""

    index: int
    buffer: str
    rows: int
    cols: int
    stage_elems: int
    tensor_map: int
    multicast: bool = False
    gather: bool = False
    row_axis: int | None = None
    flat: bool = False
    im2col: Any = None  # ir.Im2colTile
    # an im2col tile whose window is the identity (schedule/im2col_tma.identity_window, behind
    # TILED_IDENTITY): one tiled box a column segment of the image seen as [N * H * W, C] (its
    # map a view's), from row (n * H + h) * W + w of its first pixel's corner
    tiled: bool = False


@frozen
class StagedStore(Node):
    """The epilogue's `copy(acc, C[...])` at `index` of the kernel's body, made through shared
    memory: each consumer warpgroup stages its `rows` rows at byte `offset` (`nbytes` in all)
    and the TMA stores them through map `tensor_map`.

    `in_stage`: a persistent ring whose shared memory leaves no room beside it (attention's
    forward, FlashAttention 3's O over V) stages the tile in the ring's own buffer instead,
    that of load `in_stage` (a position in `loads`: attention's K, read by the deferred gemm's
    first gemm alone) at the stage of the tile's last iteration, `offset` the buffer's: each
    warpgroup writes there once every consumer warp's last first gemm is done (the tile loads'
    empty barrier, `tile_done`), and that stage is released to the producer only once the
    warpgroup's store has read it (its issuing thread arrives for the warpgroup's warps), not
    right after the loop.  A tile that ran no iteration stores from registers.

    `more`: the indices of further such copies after the ring (the same fragment shape, layout and
    tensor: std.gemm's block-scaled f8 at BN = 256, a tile's two 128-column halves), each staged
    `nbytes` after the one before and stored through the same map; `reuse`: where only one
    part's buffer fits beside the ring, all in that one, each part after the first waiting until
    the store before it has read it."""

    index: int
    tensor_map: int
    rows: int
    offset: int
    nbytes: int
    in_stage: int | None = None
    more: tuple[int, ...] = ()
    reuse: bool = False


@frozen
class BulkReduce(Node):
    """An `atomic_add(C[...], acc)` of the consumers' loop (the parallel loop at `index` of the
    loop's body, porting.py's lowering of the tile add) made by the TMA's bulk reduction: the
    consumers write the f32 wgmma accumulator into a staging buffer at byte `offset` (`nbytes`,
    the 128-byte swizzled layout of a TMA store's), and one consumer thread adds it into the
    tensor through map `tensor_map` (cp.reduce.async.bulk.tensor .add), one box of the tile's
    rows by one 128-byte column segment at a time, in one bulk group.  The buffer is written
    again once that group has read it; where the add takes a turn (`order=`), the turn is
    counted once the group is complete.  FlashAttention 3's dQ: the same bytes as per-thread
    reds, a few instructions of one thread.  With `buffers` 2 (`nbytes` holding both) iteration
    `it` stages into buffer `it % 2`, so that one add may still be reading the other."""

    index: int
    tensor_map: int
    offset: int
    nbytes: int
    buffers: int = 1


@frozen
class SplitK(Node):
    """Split-K in a persistent kernel (schedule/split_k.py): the grid's third dimension, block
    variable `var`, counts `parts` parts of the K loop (an expression of the sizes, the grid's
    third extent).  After its loop a part other than the last writes the f32 fragment `acc`
    into slot (tile, part) of the module's `slots` partial tiles, each thread its registers as
    float4s at (r * threads + thread), and counts itself on the tile's counter (a release);
    the last part waits until the count reads parts - 1 (an acquire), adds the slots of parts
    0, 1, ... in that order into its registers, sets the counter back to 0 for the next launch
    and runs the kernel's epilogue.  The tile of (x, y) is y * tiles_x + x, its slots
    tile * (parts - 1) + part; the rule keeps tiles * parts within `slots`."""

    var: str
    parts: Any  # ir.Expr
    acc: str
    slots: int


@frozen
class StreamK(Node):
    """Stream-K in a persistent kernel (schedule/stream_k.py): the blocks walk the tiles whole and
    then the tail's K steps in even runs, `tl::StreamWalk`'s segments (tile, k0, k1), each running
    the loop's steps k0 .. k1 - 1 (in clusters, the clusters walk their tile pairs).  A segment that ends a tile without starting it stores the f32
    fragment `acc` into its block's slot (of `slots`, the split-K slots: each thread its registers
    as float4s at r * threads + thread) and counts itself on the tile's counter (a release); the
    one that starts it waits for its contributors' count (an acquire), adds their slots in block
    order, sets the counter back to 0 and runs the epilogue.  `steps` is the tile's K steps in
    sizes alone (the walk computes it once).  With `sized`, the grid's third dimension (block
    variable `var`) only sizes the launch to a wave where the tiles are fewer (the walk takes
    x * y tiles); else the kernel is split-K's too and streams where the launch has one part,
    or, where `prefer` (an i32 expression of the sizes, 1 or 0: stream_k.prefer_expr) is 1,
    instead of split-K's parts, the grid's z then a wave's worth of units (stream_k.units_expr)."""

    acc: str
    steps: Any  # ir.Expr
    slots: int
    sized: bool = False
    var: str = ""
    prefer: Any = None  # ir.Expr


@frozen
class TileOrder(Node):
    """A persistent kernel: the grid counts tiles and each block walks them, `group` rows of
    tiles at a time (so that a wave of blocks shares rows of A and columns of B in L2), in
    clusters of `cluster` blocks that take consecutive tiles."""

    group: int
    cluster: int = 1
    # the tiles' loop lengths grow with x (a causal attention's query blocks): tile t is
    # tl::paired_tile's (x from both ends of its row, then y, then z; group unused) and a block
    # takes tiles 2u and 2u + 1 together, u = its index + k * blocks, so every block's work is
    # about the same
    pairs: bool = False
    # (for lengths that grow with x, instead of pairs: schedule/warpspec.py DYNAMIC_TILES) each
    # block takes its next tile from a counter in device memory (an atomic add by the producer,
    # handed to the consumers through a two-slot ring in shared memory, `sched_offset`), in the
    # order tl::heavy_tile gives the counts (x from its end down, then y, then z: the longest of
    # a row first, a row's tiles together for L2), so that the last tiles taken are the
    # shortest and no block is left the longest (FlashAttention 3's dynamic scheduler); a count
    # past the tiles ends both roles, and the last block to take one sets the counter back to 0
    dynamic: bool = False


@frozen
class DeferredGemm(Node):
    """The ring loop's last statement, a wgmma gemm (attention's P @ V), run one iteration late:
    iteration it issues it for iteration it - 1 (on that stage) right after issuing its own gemm
    at `after` (S = Q @ K.T), so that the tensor cores run it while the statements after `after`
    (the softmax) run; it must be complete before statement `wait` (the first that writes its A
    or touches its accumulator).  After the loop the last iteration's runs.  Indices are the
    loop body's; the loop's order of effects is unchanged (the interpreter runs it in place)."""

    gemm: int
    after: int
    wait: int
    # two or three consumer warpgroups of their own rows take turns issuing the two gemms, in
    # warpgroup order (named barriers turn_barrier(n) + its index), so that one's softmax runs
    # while the others' products keep the tensor cores busy (FlashAttention 3's inter-warpgroup
    # ping-pong; its three warpgroups' round robin at head dim 64)
    pingpong: bool = False
    # statements after `wait` that only scale the deferred gemm's accumulator (attention's
    # acc *= rescale) run right before it is issued, in the next iteration (or after the loop)
    # under the first gemm's work on the tensor cores, rather than before that gemm's issue
    # (FlashAttention 3's rescale_o between its two products); the effects' order is the same
    before_issue: tuple[int, ...] = ()


PINGPONG_BARRIER = 3  # the named barriers of two warpgroups' turns: 3 and 4 (1 and 2 are the staged store's)
# three warpgroups' turns: 9, 10, 11 (the staged store takes 1 to 3, a warpgroup's own barrier 6 to 8)
TURN3_BARRIER = 9
# the producer warpgroup's own (a dynamic tile order's count, read by all its threads)
PRODUCER_BARRIER = 12


def turn_barrier(warpgroups: int) -> int:
    """The first named barrier of the consumer warpgroups' turns (DeferredGemm.pingpong)."""
    return PINGPONG_BARRIER if warpgroups == 2 else TURN3_BARRIER
# the consumers' own barrier (WarpSpecialization.consumer_barrier): bar.sync over the consumer
# threads alone, which the producer warpgroup (still copying) never reaches
CONSUMER_BARRIER = 5
# a consumer warpgroup's own barrier (WarpSpecialization.warpgroup_syncs): 6 + its index
WARPGROUP_BARRIER = 6
# the consumers' barrier at which some of them only arrive (WarpSpecialization.arrivals): not
# CONSUMER_BARRIER, since a thread arriving there and then syncing at that barrier's next use
# would count twice towards one phase
HANDOVER_BARRIER = 8


@frozen
class WarpSpecialization(Node):
    """The roles, the ring and its barriers of a warp-specialized kernel (module docstring)."""

    loop: int  # index of the ring's pipelined loop in the kernel's body
    stages: int
    loads: tuple[StageLoad, ...]  # the producer's role: the loop body's leading copies
    consumer: tuple[int, int]  # the consumers' role: loop.body[start:stop] (the copies' syncs dropped)
    producer_threads: int
    producer_registers: int  # setmaxnreg.dec: it only computes addresses
    consumer_registers: int  # setmaxnreg.inc: the registers the producer gave away
    barriers: int  # byte offset of the full mbarriers (8 bytes per stage), the empty ones after them
    # on a stage's full barrier when the producer copies element by element (TMA: 1); a ring with
    # row gathers: each producer thread's cp.async arrival and one a producer warp, plus 1 for
    # the TMA's bytes where it also copies tiles through the TMA
    full_arrivals: int
    empty_arrivals: int  # on a stage's empty barrier: one per consumer warp (of the cluster)
    release_lag: int  # 1: a stage is released one iteration late (its wgmma stays in flight)
    tensor_maps: tuple[TensorMapSpec, ...]
    tile_order: TileOrder | None = None  # persistent, else one tile per block
    store: StagedStore | None = None
    # statements before the ring's loop (indices into the kernel's body) that only the consumer
    # threads run: copies into shared memory (attention's Q tile), whose thread mapping is the
    # kernel's THREADS; the producer's extra threads skip them and meet the barrier after them.
    # A kernel with any is persistent only where those that copy are its tile_loads.
    consumer_only: tuple[int, ...] = ()
    # of consumer_only, the copies into shared memory that the consumers make after the ring's
    # setup, meeting at CONSUMER_BARRIER after them, so that the producer's first copies are on
    # their way meanwhile (attention's Q tile and its first K and V tiles load together); the
    # kernel's syncs before the loop are left out (these copies are its only shared writes there)
    late_copies: tuple[int, ...] = ()
    deferred: DeferredGemm | None = None  # with release_lag 1: a stage is released once its deferred gemm is done
    # the named barrier (CONSUMER_BARRIER) over the consumer threads that the consumers' loop
    # syncs on where its statements meet in shared memory (a reduction's partials, a fragment
    # copied into a shared buffer that a gemm reads: MLA decode's warpgroups side by side), or
    # 0: none (each consumer warpgroup's work is its own)
    consumer_barrier: int = 0
    # with consumer_barrier: the loop body's syncs (indices) the consumers keep, as that named
    # barrier; the others only ordered the producer's copies (the stage's full barrier does) and
    # stand before any shared write of the iteration with a barrier after them before one
    kept_syncs: tuple[int, ...] = ()
    # the loop body's syncs (indices) each consumer warpgroup meets at alone, at named barrier
    # WARPGROUP_BARRIER + its index (128 threads): after a fragment copied into a shared buffer
    # whose rows each warpgroup writes are the rows its own wgmma reads as A (stage_operand.py's
    # dS), before that gemm; the body's other syncs are left out (its wgmma waits order the
    # previous iteration's reads before the next writes)
    warpgroup_syncs: tuple[int, ...] = ()
    # with consumer_barrier: the loop body's parallel loops (indices) that read a fragment
    # another consumer warpgroup holds (Parallel.exchange: one_warpgroup.py's row factors), its
    # holders writing it into scratch after the ring's barriers and the consumers meeting at
    # that named barrier before the loop; each with whether a barrier must follow the loop
    # (False: one the consumers keep comes before the next shared write, the next iteration's
    # included, so the scratch is read before it is written again)
    exchanges: tuple[tuple[int, bool], ...] = ()
    # with consumer_barrier: kept syncs (indices) that order only reads before them (no shared
    # write since the last barrier, the last iteration's included), each with the consumer
    # threads below which some write shared memory after it before the next barrier: those
    # wait at named barrier HANDOVER_BARRIER, the threads from there up only arrive and go on
    # (one_warpgroup.py's warpgroup 1, which reads P and the factors and writes neither)
    arrivals: tuple[tuple[int, int], ...] = ()
    # (producer, consumer) setmaxnreg of the generic build (compiled without TL_TMA_FLAGS's bit 0:
    # a launch whose maps the host could not encode, the C launcher's), where it differs from
    # producer_registers and consumer_registers, the build whose maps all encode: an im2col load's
    # fallback gathers the tile's rows through cp.async, its rows' pixel positions held over the
    # loop, which 40 registers spill, so that build's producer keeps a gatherer's; None: one
    # split for both builds
    generic_registers: tuple[int, int] | None = None
    # the producer's and the consumers' K loops kept rolled (`#pragma unroll 1`) where the
    # consumers' body is one wgmma gemm: NVVM otherwise unrolls them by the ring's stages and
    # ptxas's time follows the HGMMA count.  Measured on the H200 (bench/results/
    # gemm_rolled_k-h200-twentieth.txt, std.gemm matmul f16): NVRTC 498 -> 297 ms at 8192^3,
    # 635 -> 391 at 4096^3, the kernel as fast (1.034x -> 1.041x and 0.982x -> 0.984x torch.mm)
    rolled: bool = False
    # a persistent kernel's copies before the ring's loop (StageLoads whose index is the
    # kernel body's; each also in consumer_only) that the producer makes through the TMA once
    # a tile, after the first iteration's, into their own buffer (attention's Q tile): they
    # complete the barrier tile_full after the ring's, which the consumers wait on before the
    # loop, and the consumer warps arrive on tile_empty after it once their loop is done, which
    # the producer waits on before the next tile's copies
    tile_loads: tuple[StageLoad, ...] = ()
    # with tile_loads and a deferred gemm: the loop body's statement (the deferred's first gemm,
    # attention's S = Q @ K.T) that alone reads their buffers; the consumer warps arrive on
    # tile_empty in the loop's last iteration as soon as it is done, so that the next tile's Q
    # loads under that iteration's softmax, its P @ V and the epilogue.  None: after the loop
    tile_done: int | None = None
    # the consumers' tile adds made by the TMA's bulk reduction, staged after the ring's
    # barriers (and the staged store's buffer)
    reduces: tuple[BulkReduce, ...] = ()
    # split-K (SplitK): the parts of K a tile's units take, the last one's fixup before the epilogue
    split_k: SplitK | None = None
    # stream-K (StreamK): the tail's K steps handed out evenly, the finishers' fixup before the epilogue
    stream_k: StreamK | None = None
    # with a deferred gemm: the loads (positions in `loads`) that it alone reads (attention's V,
    # read by P @ V one iteration late), each stage with a full and an empty barrier of their own
    # (full_late, empty_late at `late_barriers`), so that the other loads' stage (K) is released
    # as soon as the first gemm is done and only theirs one iteration late: the deferred gemm
    # then needs no third stage (FlashAttention 3's separate K and V pipelines, two stages)
    late_loads: tuple[int, ...] = ()
    # several blocks an SM (a dequantizing ring: schedule/dequant_ring.py): no setmaxnreg (every
    # thread keeps the launch bounds' share), launch bounds (threads + 128, blocks_per_sm), and a
    # persistent launch of as many blocks as the SMs hold at once
    blocks_per_sm: int = 1

    @property
    def late_barriers(self) -> int:
        """Byte offset of the late loads' full barriers (their empty ones after them)."""
        return self.barriers + 16 * self.stages + (16 if self.tile_loads else 0)

    @property
    def sched_offset(self) -> int:
        """Byte offset of a dynamic tile order's ring (TileOrder.dynamic): full[2], empty[2]
        mbarriers, then the two slots' tile counts (i32)."""
        return self.late_barriers + (16 * self.stages if self.late_loads else 0)

    @property
    def ring_end(self) -> int:
        """Byte offset past the ring's barriers (and the tile loads' pair, the late loads' own,
        a dynamic tile order's ring)."""
        dynamic = self.tile_order is not None and self.tile_order.dynamic
        return self.sched_offset + (48 if dynamic else 0)

    @property
    def staging_end(self) -> int:
        """Byte offset past the ring's barriers and the staging buffers after them."""
        ends = [self.ring_end] + [x.offset + x.nbytes for x in self.reduces] + \
            ([self.store.offset + self.store.nbytes * (1 if self.store.reuse else 1 + len(self.store.more))]
             if self.store is not None and self.store.in_stage is None else [])
        return max(ends)

    def stage_buffers(self) -> dict:
        """Staged buffer -> elements between its stages."""
        return {x.buffer: x.stage_elems for x in self.loads}


def warp_spec_problem(kernel) -> str | None:
    """What is structurally wrong with `kernel.warp_spec` (the verifier's message), or None:
    the statements it names must be where it says and of the kind it needs."""
    from .nodes import Atomic, BufferRef, Copy, For, Gemm, Parallel, Print, Store, Sync

    ws: WarpSpecialization = kernel.warp_spec
    if not 0 <= ws.loop < len(kernel.body) or not isinstance(kernel.body[ws.loop], For) \
            or kernel.body[ws.loop].kind != "pipelined":
        return f"the warp specialization's loop {ws.loop} is not a pipelined loop of the kernel's body"
    body = kernel.body[ws.loop].body
    buffers = {b.name: b for b in kernel.buffers}
    for x in ws.loads:
        c = body[x.index] if 0 <= x.index < len(body) else None
        if x.gather or x.im2col:
            if not isinstance(c, Parallel) or not any(isinstance(s, Store) and s.name == x.buffer for s in c.body):
                return f"the producer's gather {x.index} is not a parallel loop filling '{x.buffer}'"
        elif not isinstance(c, Copy) or not isinstance(c.dst, BufferRef) or c.dst.name != x.buffer:
            return f"the producer's copy {x.index} is not a copy into '{x.buffer}'"
        b = buffers[x.buffer]
        if b.scope != "shared" or tuple(b.shape) != ((x.cols,) if x.flat and len(b.shape) == 1 else (x.rows, x.cols)):
            return f"the producer's stage buffer '{x.buffer}' is not a shared " + \
                (f"vector of {x.cols}" if x.flat else f"{x.rows} x {x.cols} tile")
        if not x.gather and not 0 <= x.tensor_map < len(ws.tensor_maps):
            return f"the producer's copy {x.index} names tensor map {x.tensor_map} of {len(ws.tensor_maps)}"
    start, stop = ws.consumer
    if not max((x.index + 1 for x in ws.loads), default=0) <= start <= stop <= len(body):
        return f"the consumers' statements {start}..{stop} are not after the producer's copies in the loop"
    if ws.store is not None and not (ws.loop < ws.store.index < len(kernel.body)
                                     and isinstance(kernel.body[ws.store.index], Copy)):
        return f"the staged store {ws.store.index} is not a copy after the ring's loop"
    if ws.store is not None and not all(ws.loop < i < len(kernel.body) and isinstance(kernel.body[i], Copy)
                                        for i in ws.store.more):
        return f"the staged store's further copies {ws.store.more} are not copies after the ring's loop"
    for x in ws.reduces:
        p = body[x.index] if start <= x.index < stop else None
        if not isinstance(p, Parallel) or len(p.body) != 1 or not isinstance(p.body[0], Atomic) \
                or p.body[0].kind != "add" or not 0 <= x.tensor_map < len(ws.tensor_maps):
            return f"the bulk reduction {x.index} is not a parallel loop of one atomic add among the consumers' statements"
    tiled = {x.index for x in ws.tile_loads}
    if any(not 0 <= i < ws.loop for i in ws.consumer_only) or (ws.tile_order is not None and any(
            i not in tiled and not isinstance(kernel.body[i], Print) for i in ws.consumer_only)):
        return f"the consumers' statements before the loop {list(ws.consumer_only)} are not before it, or the kernel is persistent"
    if not tiled <= set(ws.consumer_only) or (tiled and ws.tile_order is None) or any(
            not isinstance(kernel.body[x.index], Copy) or kernel.body[x.index].dst.name != x.buffer
            or not 0 <= x.tensor_map < len(ws.tensor_maps) for x in ws.tile_loads):
        return f"the tile loads {sorted(tiled)} are not copies among the consumers' statements of a persistent kernel"
    if any(not (ws.consumer[0] <= i < ws.consumer[1]) or not isinstance(body[i], Sync) for i in ws.warpgroup_syncs):
        return f"the warpgroups' own syncs {list(ws.warpgroup_syncs)} are not syncs among the consumers' statements"
    if any(i not in ws.kept_syncs or not 0 < w < kernel.threads for i, w in ws.arrivals):
        return f"the consumers' arrivals {list(ws.arrivals)} are not kept syncs with a part of the consumers waiting"
    if any(not (start <= i < stop) or not isinstance(body[i], Parallel) or not body[i].exchange for i, _ in ws.exchanges):
        return f"the consumers' exchanges {[i for i, _ in ws.exchanges]} are not exchanging parallel loops among their statements"
    if not set(ws.late_copies) <= set(ws.consumer_only) or not all(isinstance(kernel.body[i], Copy) for i in ws.late_copies):
        return f"the consumers' late copies {list(ws.late_copies)} are not copies among their statements before the loop"
    d = ws.deferred
    if d is not None and not (start <= d.after < d.wait <= d.gemm == stop - 1 and isinstance(body[d.gemm], Gemm)
                              and isinstance(body[d.after], Gemm) and ws.release_lag == 1
                              and (ws.tile_order is None or ws.tile_loads)):
        return f"the deferred gemm {d.gemm} (after {d.after}, waited for before {d.wait}) is not the consumers' last gemm"
    if d is not None and any(not (d.wait <= i < d.gemm) or not isinstance(body[i], Parallel) for i in d.before_issue):
        return f"the statements {list(d.before_issue)} run before the deferred gemm's issue are not parallel loops after its wait"
    if ws.stages < 1 or (ws.tile_order is not None and min(ws.tile_order.group, ws.tile_order.cluster) < 1):
        return "the warp specialization has no stages, or a tile order of no rows or blocks"
    if ws.tile_done is not None and not (ws.tile_loads and d is not None and ws.tile_done == d.after):
        return f"the tile loads' last reader {ws.tile_done} is not the deferred gemm's first gemm"
    if ws.tile_order is not None and ws.tile_order.pairs and ws.tile_order.cluster > 1:
        return "the tile order takes tiles in pairs and in clusters"
    if ws.tile_order is not None and ws.tile_order.dynamic and (
            ws.tile_order.pairs or ws.tile_order.cluster > 1 or ws.split_k is not None or ws.stream_k is not None):
        return "the dynamic tile order takes tiles in pairs, in clusters, or as split-K's or stream-K's units"
    if ws.late_loads and (d is None or ws.tile_order is not None or len(set(ws.late_loads)) != len(ws.late_loads)
                          or not all(0 <= j < len(ws.loads) for j in ws.late_loads) or len(ws.late_loads) == len(ws.loads)
                          or any(ws.loads[j].gather or ws.loads[j].im2col for j in ws.late_loads)):
        return f"the late loads {list(ws.late_loads)} are not some of the TMA loads of a deferred gemm's ring, one tile a block"
    if ws.store is not None and ws.store.in_stage is not None:
        x = ws.loads[ws.store.in_stage] if 0 <= ws.store.in_stage < len(ws.loads) else None
        if x is None or x.gather or x.im2col or ws.tile_order is None or ws.tile_done is None \
                or ws.store.nbytes > x.stage_elems * buffers[x.buffer].dtype.itemsize \
                or ws.store.offset != buffers[x.buffer].smem_offset or body[ws.tile_done].b != x.buffer:
            return (f"the staged store's stage buffer (load {ws.store.in_stage}) is not a TMA load of a persistent ring "
                    "read by the tile loads' last reader alone, at its offset and as large as the tile")
    return None
