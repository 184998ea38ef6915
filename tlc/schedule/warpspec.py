"""Warp specialization, the decisions: which pipelined loop becomes a producer/consumer ring,
its stages and barriers, the registers each role keeps, whether the kernel is persistent and
runs in clusters, and the tensor maps the launch passes.  Recorded on the kernel as an
`ir.WarpSpecialization` (tlc/ir/warpspec.py, which says what such a kernel does) for the
code generator to render, the interpreter to run and `--emit ir` to show.

Runs last, on targets with warpgroup tensor cores, the TMA and mbarrier rings (`target.wgmma`
and `target.tma`); a kernel it leaves alone keeps the cp.async pipeline of sm_80.  A loop is
specialized when the TMA can make its leading copies and the rest never waits for the whole
block (a statement that synchronizes the block inside the loop, or work before the loop that
the producer's extra threads must not do, keeps the ring of sm_80).

The planner asks five modules of its own: ring_loads.py, which copies the producer makes and how
(the TMA's tiles, boxes and im2col mode, row gathers; their tensor maps); gemm_overlap.py, which
wgmma gemms run under other work (the deferred gemm, the carried gemms, the waits);
tile_order.py, a persistent ring's walk of its tiles and the tiles' own loads; consumer_syncs.py,
the barriers among the consumers where their loop meets through shared memory; staged_outputs.py,
the epilogue's store and the tile adds the TMA makes from shared memory.  The switches stay here,
read where the plan is made."""

from __future__ import annotations

from dataclasses import replace

from .. import ir
from ..ir.walk import assigned_scalars, loads, statement_exprs, statements, variables
from ..ir.warpspec import CONSUMER_BARRIER, DeferredGemm, StagedStore, StageLoad, TensorMapSpec, WarpSpecialization
from .gemm_overlap import buffers_touched, carried_gemms, late_loads, wgmma_ready, wgmma_rs_ready
from .layout import MmaAccumulator
from .reduce_slots import reduces_in_registers
from . import consumer_syncs, dequant_ring, gemm_overlap, ring_loads, staged_outputs, tile_order

PRODUCER_THREADS = 128
PRODUCER_REGS = 40  # what the producer keeps: it only computes addresses
# a producer that gathers rows (an implicit GEMM's im2col tile) keeps each of its rows' offsets
# and bounds over the K loop (codegen/row_gathers.py gather_rows_kept): std.conv's conv2d at 128 x
# 128 x 64 tiles, 8 rows of each operand a thread, fits 128 without spills (ptxas -v, sm_90a;
# it honours setmaxnreg: 112 spilled 48 bytes, 96 164)
GATHER_PRODUCER_REGS = 128
# ... as does the fallback of an im2col load (the TMA's im2col box) in the generic build, where
# the host has no map: std.conv's conv2d (bf16, 128 x 128 x 64, x's 8 rows a thread) spilled 136
# bytes at 40 registers, 16 at 72, none from 80 (ptxas -v, sm_90a); the build whose maps all
# encode keeps PRODUCER_REGS (its gathers compiled out)
# a ring with a deferred gemm, one tile a block (attention's forward: one producer thread issues
# K's and V's TMA copies) keeps FlashAttention 3's producer registers, so that two consumer
# warpgroups get 240 (its 128 x 176 tiles spilled 4 bytes a step at 232; ptxas -v sm_90a, both
# builds: none at 240); a persistent one's producer also walks the tiles (it spilled at 24)
DEFERRED_PRODUCER_REGS = 24
TILE_GROUP = 8  # a persistent kernel walks tiles in groups of 8 block rows (L2 reuse of B)
CLUSTER = 2  # blocks per cluster in a persistent kernel that multicasts a shared operand
# ... but not an implicit GEMM's ring, whose x tile the TMA's im2col mode loads (std.conv's
# conv2d): its blocks waiting on each other's stages cost more than w's multicast saves.  H200,
# batch 64, bench/conv.py, the same rows in clusters of 2 and without (session 25 round 2,
# bench/results/A_r2_*-h200-twentyfifth.txt): r50_s1_3x3_64 0.92x -> 1.01x cuDNN, r50_s1_1x1_64
# 0.89x -> 0.94x, r50_s1_1x1_256 0.94x -> 0.97x, r50_s1_1x1_in256 0.95x -> 0.97x,
# r50_s2_1x1_512 0.88x -> 0.96x, r50_s3_1x1_1024 0.89x -> 0.97x; round 3: r50_s4_3x3_512 0.89x ->
# 0.99x, r50_s2_3x3_128 0.99x -> 1.04x, r50_s4_1x1_2048 0.78x -> 0.81x, but conv3x3_56_256 1.00x ->
# 0.95x: a long ring of wide w tiles keeps it (_Planner.long_wide_ring).  2: such rings as any other
IM2COL_CLUSTER = 1
# A grid (not an author's persistent walk) whose consumers copy a tile before the ring (std's
# flash_fwd: Q) made persistent with those copies as the producer's tile loads, where its ring
# keeps its deferred gemm (three stages or more; a persistent ring has no late loads), as the
# grid of an author's persistent walk is.  Off: session 24 timed that form slower than one tile a
# block (D=128 525 against 554 TFLOP/s) while its epilogue stored O from registers; the output is
# now staged in K's last stage (StagedStore.in_stage), and session 28's H200 timed it slower
# again (as bench/A_fwd_walk.tl, the same kernel; q_A_fwd_persistent-h200-twentyeighth.txt):
# D=128 full 2072.4 against 1928.5 us (0.860x against 0.924x cuDNN), GQA 32/8 0.864x against
# 0.926x, causal a tie; only at SK=256 (a block's fixed cost) did it win, 0.668x against 0.523x.
GRID_TILE_LOADS = False
# A persistent ring whose tiles' loop lengths grow with x (a causal attention's) takes its tiles
# from a counter in device memory, longest first (TileOrder.dynamic, FlashAttention 3's dynamic
# scheduler), not in pairs from both ends: 2048 pairs of 33 key blocks on 132 SMs (B=4 H=32
# S=4096) leave the busiest block 16 pairs = 528 steps against a mean of 512 (3.1%), the taken
# order ~512.  H200, B=4 H=32 S=SK=4096 D=128 f16 causal, an author's walk (bench/A_fwd_walk.tl),
# outputs checked first: 1022.0 us = 0.989x cuDNN against 1073.6 (0.941x) in pairs and std's
# one tile a block 1071.1 (bench/results/q_A_fwd_persistent-h200-twentyeighth.txt).  Only such
# walks change: a walk whose tiles are all as long keeps its fixed order, and no std grid is
# persistent with GRID_TILE_LOADS off.
DYNAMIC_TILES = True
# the fewest stages on which a ring's last products stay in flight into the next iteration
# (WarpSpecialization release_lag 1: a stage released one iteration late); bench/mla_variants.py's
# carry row compiles mla_decode (two stages of 72 KB pages) with 2
CARRIED_MIN_STAGES = 3


def specialize_warps(kernel: ir.Kernel, target) -> ir.Kernel:
    """`kernel` with its warp specialization recorded, where `target` (a `tlc.targets.Target`)
    has what it needs and one of the kernel's loops allows it."""
    if not (target.wgmma and target.tma):
        return kernel
    planner = _Planner(kernel, target)
    ws = planner.plan()
    dequant = False
    if ws is None and (dequant_ring.DEQUANT_RING or kernel.dequant_ring):  # (a dequantizing ring)
        kernel, planner, ws = dequant_ring.planned(kernel, target, _Planner)
        dequant = ws is not None
    if ws is not None and planner.moved is not None:  # its syncs moved (later_syncs)
        kernel = replace(kernel, body=tuple(planner.moved if j == ws.loop else s for j, s in enumerate(kernel.body)))
    if ws is None:
        return kernel
    if dequant:  # (split_k's rule refuses its boxes and operand loops: dequant_ring.split)
        return dequant_ring.split(kernel, ws, target, _Planner) or split_k(kernel, ws, target) or \
            replace(kernel, warp_spec=ws)
    return split_k(kernel, ws, target) or replace(kernel, warp_spec=ws)


def split_k(kernel: ir.Kernel, ws: WarpSpecialization, target) -> ir.Kernel | None:
    """`kernel` split along K (schedule/split_k.py, #18) where its persistent ring allows it
    and the ring planned again for the split kernel is still persistent, its K steps streamed
    where the launch has one part or instead of its parts (schedule/stream_k.py, in clusters
    too); an unsplit kernel (the split would lose its ring's loads: std.conv's conv2d) streamed
    alone; else None."""
    from ..ir.warpspec import SplitK, StreamK
    from . import split_k as sk
    from . import stream_k
    acc = sk.candidate(kernel, ws)
    if acc is None:
        return None
    _, defs = sk.fixed_names(kernel, ws.loop)
    from .im2col_tma import _subst
    steps = _subst(kernel.body[ws.loop].stop, defs)  # a tile's K steps, in sizes alone
    split, part, parts = sk.rewrite(kernel, ws)
    ws2 = _replan(split, target, ws)
    if ws2 is not None:
        ws2 = replace(ws2, split_k=SplitK(part, parts, acc, sk.WAVE))
        if stream_k.STREAM_K and _epilogue_own(ws2):
            # streamed where the launch has one part, or instead of its parts (stream_k.prefer)
            split, part, parts, prefer = sk.rewrite(kernel, ws, stream=True)
            ws3 = _replan(split, target, ws)
            if ws3 is not None and _epilogue_own(ws3):
                return replace(split, warp_spec=replace(ws3, split_k=SplitK(part, parts, acc, sk.WAVE),
                                                        stream_k=StreamK(acc, steps, stream_k.SLOTS, prefer=prefer),
                                                        **stream_k.registers(ws3, split.threads, target.registers_per_sm)))
            split, part, parts = sk.rewrite(kernel, ws)
        return replace(split, warp_spec=ws2)
    if not stream_k.STREAM_K:
        return None
    # streamed alone: a third grid dimension makes a launch of fewer tiles than a wave a wave
    unit = sk._fresh(kernel, "kunit")
    tiles = sk._op("*", kernel.grid[0], kernel.grid[1])
    units = sk._op("max", sk._i(1), sk._cdiv(sk._i(stream_k.SLOTS), sk._op("max", tiles, sk._i(1))))
    sized = replace(kernel, grid=kernel.grid + (units,), block_vars=kernel.block_vars + (unit,))
    ws3 = _replan(sized, target, ws)
    if ws3 is None or not _epilogue_own(ws3):
        return None
    return replace(sized, warp_spec=replace(ws3, stream_k=StreamK(acc, steps, stream_k.SLOTS, sized=True, var=unit),
                                            **stream_k.registers(ws3, sized.threads, target.registers_per_sm)))


def _epilogue_own(ws: WarpSpecialization) -> bool:
    """Whether a segment may skip the epilogue (a stream-K contributor): its store is not staged
    in the ring's last stage, which the epilogue releases."""
    return ws.store is None or ws.store.in_stage is None


def _replan(kernel: ir.Kernel, target, ws: WarpSpecialization) -> WarpSpecialization | None:
    """The ring of `kernel` (`ws`'s kernel rewritten for split-K or stream-K) planned again, where
    it is still persistent and its loads as they were (each through the TMA's im2col mode or not,
    multicast or not) in the same clusters; else None."""
    planner = _Planner(kernel, target)
    ws2 = planner.plan()
    if ws2 is None or planner.moved is not None or ws2.tile_order is None or ws2.tile_loads:
        return None
    kinds = [[(bool(x.im2col), x.gather, x.multicast, x.flat) for x in w.loads] for w in (ws, ws2)]
    if kinds[0] != kinds[1] or ws2.tile_order.cluster != ws.tile_order.cluster:
        return None  # the split lost a load's TMA mode or the cluster (std.conv's conv2d: kh of k's base)
    return ws2


def consumer_registers(threads: int, registers_per_sm: int = 65536, producer: int = PRODUCER_REGS) -> int:
    """Registers per consumer thread after the producer gave its own away (down to `producer`):
    the block holds (threads + 128) x R registers, R what `__launch_bounds__(threads + 128, 1)`
    allows."""
    total = threads + PRODUCER_THREADS
    per_thread = min(255, registers_per_sm // total // 8 * 8)
    share = (total * per_thread - PRODUCER_THREADS * producer) // threads // 8 * 8
    return min(240, share)


def ring_split(loop: ir.For, params: dict, buffers: dict) -> tuple[list, list] | None:
    """A pipelined loop as a ring: its leading copies from a tensor into a staged shared buffer
    of the same dtype (the producers) and what computes on them (the rest, without the syncs
    that order the copies), or None when its shape does not allow a ring."""
    S = loop.stages
    if not (isinstance(loop.start, ir.Const) and loop.start.value == 0 and isinstance(loop.step, ir.Const)
            and loop.step.value == 1):
        return None
    producers = []
    for s in loop.body:
        if not (isinstance(s, ir.Copy) and s.src.name in params and isinstance(s.dst, ir.BufferRef)):
            break
        dst = buffers[s.dst.name]
        if dst.scope != "shared" or dst.layout.stages < S or params[s.src.name].dtype != dst.dtype:
            break
        producers.append(s)
    if not producers:
        return None
    assigned = assigned_scalars(loop.body)
    if {v.name for p in producers for o in p.src.offsets for v in variables(o)} & assigned:
        return None
    rest = list(loop.body[len(producers):])
    while rest and isinstance(rest[0], ir.Sync):
        rest.pop(0)
    if rest and isinstance(rest[-1], ir.Sync):
        rest.pop()  # the next iteration's wait orders these reads before the overwrite
    return producers, rest


def after_scalar_lets(rest: list, buffers: dict) -> list:
    """`rest` of a ring without the syncs between its leading scalar lets (which read no shared
    buffer) or fills of fragments and its first other statement: the ring's wait and barrier at the top of each
    iteration order the stage's reads (the pipelined rows' `r = ...`, before the row's copy out
    of the ring, left a second barrier a row in the plain layer_norm).  For the cp.async ring's
    emission only: a warp-specialized consumer is a contiguous range of the loop's body
    (WarpSpecialization.consumer), which `ring_split`'s rest must stay."""
    out, k = list(rest), 0
    while k < len(out) and (isinstance(out[k], ir.Sync) or _scalar(out[k], buffers) or _fill_registers(out[k], buffers)):
        if isinstance(out[k], ir.Sync):
            out.pop(k)
        else:
            k += 1
    return out


def _fill_registers(s, buffers: dict) -> bool:
    """A fill of a fragment: each thread writes its own registers (the cleared scores before a
    gemm, MLA decode's: the sync after it was a second barrier a page)."""
    return isinstance(s, ir.Fill) and s.buffer in buffers and buffers[s.buffer].scope == "fragment" and not any(
        x.name in buffers and buffers[x.name].scope == "shared" for x in loads(s.value))


def _scalar(s, buffers: dict) -> bool:
    """A `let` or assignment that reads no shared buffer."""
    return isinstance(s, (ir.LetScalar, ir.Assign)) and not any(
        x.name in buffers and buffers[x.name].scope == "shared" for e in statement_exprs(s) for x in loads(e))


class _Planner:
    def __init__(self, kernel: ir.Kernel, target):
        self.k, self.target = kernel, target
        self.params = {p.name: p for p in kernel.params}
        self.buffers = {b.name: b for b in kernel.buffers}
        self.tensor_maps: list[TensorMapSpec] = []
        self.consumer_sync = False  # (plan: the consumers' loop may meet at a barrier of their own)
        self.moved = None  # (plan: the ring's loop with the consumers' syncs moved, later_syncs)
        self.dequant = False  # (a dequantizing ring's plan: dequant_ring.planned)

    def plan(self) -> WarpSpecialization | None:
        """The one top-level pipelined loop to specialize, if the kernel allows it, and whether
        the kernel is persistent and clustered."""
        k = self.k
        if k.threads % 128 or k.threads + PRODUCER_THREADS > 1024:
            return None
        for i, s in enumerate(k.body):
            if isinstance(s, ir.For) and s.kind == "pipelined" and s.stages > 1:
                if all(_thread_local(x, self.buffers) or _consumer_prologue(x, self.params, self.buffers)
                       for x in k.body[:i]):
                    break
                return None
        else:
            return None
        consumer_only = tuple(j for j, x in enumerate(k.body[:i]) if not _thread_local(x, self.buffers)
                              and not isinstance(x, ir.Sync))
        loop, after = k.body[i], k.body[i + 1:]
        from . import gather_rows  # (which imports ring_split from here)
        split = gather_rows.split(loop, self.params, self.buffers)
        # warpgroups side by side (a 64-row wgmma accumulator split by columns: MLA decode) share
        # their rows' statistics and probabilities through shared memory: their loop may meet at
        # a barrier of the consumers alone
        self.consumer_sync = split is not None and (any(
            isinstance(b.layout, MmaAccumulator) and b.layout.wgmma_columns
            for b in self.buffers.values() if b.scope == "fragment" and b.name in buffers_touched(split[1]))
            or any(isinstance(x, ir.Copy) and consumer_syncs.fragment_into_shared(x, self.buffers)
                   for x in statements(split[1])))
        if split is None or not self.barrier_free(split[1], in_loop=True):
            return None
        producers, rest = split
        meets = self.consumer_sync and consumer_syncs.meets_in_shared(rest, self.buffers, k.threads)
        if reads_staged(after, {gather_rows.dst_name(c) for c in producers}):
            return None
        self.loop_stmt = loop
        loads = [(ring_loads.im2col_load(k, loop, loop.body.index(c), c)
                  or ring_loads.gather_load(k, loop.body.index(c), c))
                 if isinstance(c, ir.Parallel) else self.tma_load(loop.body.index(c), c) for c in producers]
        if None in loads:
            return None
        gathers = any(x.gather for x in loads)
        overlap = len(rest) == 1 and isinstance(rest[0], ir.Gemm) and self.uses_wgmma(rest[0])
        start = len(producers) + next(j for j, s in enumerate(loop.body[len(producers):]) if not isinstance(s, ir.Sync)) \
            if rest else len(producers)
        if meets and any(consumer_syncs.exchanges_fragments(x) for x in rest):
            loop = self.moved = consumer_syncs.later_syncs(loop, start, start + len(rest), self.buffers, k.threads)
            rest = list(loop.body[start:start + len(rest)])
        self.loop = loop
        # persistent when the epilogue never waits for the whole block (the producer is still
        # running then); the consumers' tiles before the loop (attention's Q) then come from the
        # producer, once a tile
        # (so far where the loop's products are the forward attention's two, S = Q @ K.T and
        # O += P @ V: flash_bwd's dK/dV grid, whose consumers copy K and V before its ring, four
        # products a step, has not been timed persistent)
        # Only in the grid of the author's persistent walk (Kernel.persistent_walk), or with
        # GRID_TILE_LOADS where the ring keeps its deferred gemm: std's flash_fwd, a grid, ran
        # slower so on the H200 (session 24 round 2, bench/results/A_fwd_persistent-h200-
        # twentyfourth.txt: D=128 525 against 554 TFLOP/s one tile a block, causal 471 against 468)
        two = sum(isinstance(x, ir.Gemm) for x in statements(rest)) == 2
        # (or a grid that asks for it: grid(persistent_tiles=True), std's flash_fwd PERSISTENT)
        asked = self.k.persistent_walk or ((GRID_TILE_LOADS or self.k.persistent_tiles) and loop.stages >= 3
                                           and self.deferred_gemm(loop.body, start, start + len(rest)) is not None)
        tile_loads, paired = self.tile_loads(consumer_only, i) if consumer_only and two and asked \
            and self.epilogue_free(after) else ((), False)
        persistent = self.epilogue_free(after) and (not consumer_only or bool(tile_loads))
        cluster = 1 if tile_loads else self.cluster_size(persistent, loads)
        loads = [x if x.gather else self.with_map(x, cluster) for x in loads]
        barriers = -(-k.smem_bytes // 8) * 8  # after the kernel's buffers, 8-aligned
        # deferring holds a stage one iteration longer: with two, the producer could not fill the
        # next while the consumers work (measured on the H200: attention 519 -> 371 TFLOP/s with
        # two stages, 513 -> 553 with three)
        deferred = None if (persistent and not tile_loads) or overlap or loop.stages < 3 else \
            self.deferred_gemm(loop.body, start, start + len(rest))
        # or, on two stages, the loads that the deferred gemm alone reads (attention's V) get
        # barriers of their own: only their stage waits for it, the others' (K) is free once the
        # first gemm is done, and the producer refills each a whole iteration ahead of its use
        late = ()
        if deferred is None and loop.stages == 2 and not persistent and not overlap:
            two_stage = self.deferred_gemm(loop.body, start, start + len(rest))
            late = late_loads(loads, loop.body, start, start + len(rest), two_stage) if two_stage else ()
            deferred = two_stage if late else None
        # or the body's last products stay in flight into the next iteration (attention's
        # backward: dK's and dV's), each waited for where that iteration first needs it, and
        # the stage they read released there: one iteration late, hence three stages at least
        carried = () if persistent or overlap or deferred or loop.stages < CARRIED_MIN_STAGES else \
            carried_gemms(loop.body[start:start + len(rest)], self.buffers, k.threads)
        # each warpgroup's shared writes its own rows, read by its own wgmma alone: it meets at
        # a barrier of its own, not the consumers'
        wg_syncs = consumer_syncs.warpgroup_syncs(loop.body, start, start + len(rest), self.buffers, k.threads) \
            if meets else None
        producer_regs = GATHER_PRODUCER_REGS if gathers else \
            DEFERRED_PRODUCER_REGS if deferred is not None and not persistent else PRODUCER_REGS
        generic = None if gathers or not any(x.im2col for x in loads) else \
            (GATHER_PRODUCER_REGS, consumer_registers(k.threads, self.target.registers_per_sm, GATHER_PRODUCER_REGS))
        # with gathers each producer thread arrives once its cp.async vectors landed and each
        # producer warp once its plain stores are done (a vector at the tensor's edge, and the
        # element-by-element copies where the host has no tensor map); the TMA's arrival with
        # its bytes comes on top (the emission's count)
        full = PRODUCER_THREADS + PRODUCER_THREADS // 32 if gathers else PRODUCER_THREADS
        ws = WarpSpecialization(
            loop=i, stages=loop.stages, loads=tuple(loads), consumer=(start, start + len(rest)),
            producer_threads=PRODUCER_THREADS, producer_registers=producer_regs,
            consumer_registers=consumer_registers(k.threads, self.target.registers_per_sm, producer_regs),
            barriers=barriers, full_arrivals=full, empty_arrivals=cluster * k.threads // 32,
            release_lag=1 if overlap or deferred or carried else 0, tensor_maps=(),
            tile_order=tile_order.order(TILE_GROUP, cluster, paired, DYNAMIC_TILES) if persistent else None,
            consumer_only=consumer_only,
            late_copies=() if meets or tile_loads else self.late_copies(consumer_only), tile_loads=tile_loads,
            deferred=deferred, consumer_barrier=CONSUMER_BARRIER if meets else 0,
            kept_syncs=consumer_syncs.kept_syncs(loop.body, start, start + len(rest), self.buffers, k.threads)
            if meets and wg_syncs is None else (),
            warpgroup_syncs=wg_syncs or (), generic_registers=generic, rolled=overlap, late_loads=late,
            exchanges=consumer_syncs.exchanges(loop.body, start, start + len(rest), self.buffers, k.threads)
            if meets else ())
        if ws.kept_syncs:
            ws = replace(ws, arrivals=consumer_syncs.arrivals(loop.body, start, start + len(rest), ws.kept_syncs, k,
                                                              self.buffers))
        if tile_loads and deferred is not None:
            ws = replace(ws, tile_done=tile_order.tile_done(tile_loads, loop.body, start, start + len(rest), deferred,
                                                            after))
        # one tile a block, the deferred gemm's ring (attention's forward): the output staged where
        # a buffer dead after the ring lies (Q's tile), the ring leaving no room beside it
        store = self.staged_store(after, i + 1, ws.ring_end) if persistent else \
            self.staged_store(after, i + 1, ws.ring_end, staged_outputs.dead_after(k, after)) if deferred is not None else None
        if store is None and persistent and ws.tile_done is not None:  # no room beside the ring: in its last stage
            store = self.staged_store(after, i + 1, ws.ring_end,
                                      ring_stage=staged_outputs.store_stage(k, ws, loop.body, after))
        ws = replace(ws, store=store)
        reduces = tuple(replace(r, tensor_map=self.new_map(spec)) for r, spec in staged_outputs.bulk_reduces(
            k, self.target.smem_per_block, loop.body, start, start + len(rest), ws.staging_end))
        return replace(ws, reduces=reduces, tensor_maps=tuple(self.tensor_maps))

    def tile_loads(self, consumer_only: tuple, i: int) -> tuple[tuple, bool]:
        """tile_order.tile_loads's loads, each with its tensor map registered, and whether the
        persistent walk takes the tiles in pairs; ((), False) where there are none, or where the
        consumers' loop meets at a barrier of their own."""
        found = None if self.consumer_sync else tile_order.tile_loads(self.k, consumer_only, i, self.tma_load)
        if found is None:
            return (), False
        loads, paired = found
        return tuple(replace(x, tensor_map=self.tensor_map(spec)) for x, spec in loads), paired

    def tensor_map(self, spec: TensorMapSpec) -> int:
        """The index of tensor map `spec`, registered on first use."""
        if spec not in self.tensor_maps:
            self.tensor_maps.append(spec)
        return self.tensor_maps.index(spec)

    def late_copies(self, consumer_only: tuple) -> tuple:
        """The consumers' copies into shared memory before the loop, made after the ring's setup
        (WarpSpecialization.late_copies), where they are the only shared writes before it: every
        other statement the consumers run alone there is a print (a copy into their registers
        keeps its place, and with it the block's barrier).  Not yet where the consumers' loop also
        meets at their own barrier (MLA decode's warpgroups side by side: its SASS test counts
        that barrier's syncs)."""
        body = self.k.body
        copies = tuple(j for j in consumer_only if isinstance(body[j], ir.Copy)
                       and self.buffers.get(body[j].dst.name) is not None and self.buffers[body[j].dst.name].scope == "shared")
        if not copies or any(j not in copies and not isinstance(body[j], ir.Print) for j in consumer_only):
            return ()
        return copies

    def uses_wgmma(self, g: ir.Gemm) -> bool:
        return wgmma_ready(g, self.buffers, self.k.threads)

    def tma_load(self, index: int, c: ir.Copy) -> StageLoad | None:
        """ring_loads.tma_load of the copy at `index` (of the loop's body, or the kernel's: a
        tile load)."""
        return ring_loads.tma_load(self.k, index, c, self.dequant)

    def deferred_gemm(self, body: list, start: int, stop: int) -> DeferredGemm | None:
        """gemm_overlap.deferred_gemm of the consumers' statements body[start:stop]."""
        return gemm_overlap.deferred_gemm(body, start, stop, self.buffers, self.k.threads, self.loop_stmt.var)

    def with_map(self, load: StageLoad, cluster: int) -> StageLoad:
        """ring_loads.with_map's load, its tensor map registered (one per tensor and box): a
        multicast where the cluster's two blocks copy the same tile."""
        multicast = cluster > 1 and not load.im2col and not load.flat \
            and self.shared_by_cluster(self.loop.body[load.index])
        load, spec = ring_loads.with_map(self.k, self.loop_stmt, load, cluster, multicast)
        return replace(load, tensor_map=self.tensor_map(spec))

    def staged_store(self, after, first: int, ring_end: int, dead: tuple | None = None,
                     ring_stage: tuple | None = None) -> StagedStore | None:
        """staged_outputs.staged_store's record, its tensor map registered."""
        found = staged_outputs.staged_store(self.k, self.target.smem_per_block, after, first, ring_end, dead, ring_stage)
        return None if found is None else replace(found[0], tensor_map=self.new_map(found[1]))

    def new_map(self, spec: TensorMapSpec) -> int:
        """The index of tensor map `spec`, registered anew (an output's: each its own)."""
        self.tensor_maps.append(spec)
        return len(self.tensor_maps) - 1

    def cluster_size(self, persistent: bool, loads) -> int:
        """Two blocks of a cluster take two consecutive tiles of a persistent kernel's order,
        which (8 rows of tiles to a group) mostly share x: a tile they both copy then (one that
        does not depend on y, B of a GEMM) is copied once, each block loading half of its rows
        into both blocks' shared memory (TMA multicast), halving that operand's traffic out
        of L2; where the two tiles' x differ each block loads its own."""
        if not persistent or len(self.k.grid) < 2 or self.dequant:
            return 1
        if any(x.gather for x in loads):
            return 1  # a gather has no multicast
        shared = [x for x in loads if not x.im2col and self.shared_by_cluster(self.loop.body[x.index])]
        if IM2COL_CLUSTER == 1 and any(x.im2col for x in loads) and not self.long_wide_ring(loads, shared):
            return 1
        # the blocks of a cluster wait on each other's stages: every tile must run as many
        # iterations, so the loop's length may read only sizes and scalar parameters, and the
        # kernel's scalars set once before the loop from them alone (std.conv's CB = cdiv(C, BK))
        fixed = self.fixed_names()
        same_length = all(v.name in fixed for v in variables(self.loop.stop))
        return CLUSTER if shared and same_length and all(x.rows % 16 == 0 for x in shared) else 1

    def long_wide_ring(self, loads, shared) -> bool:
        """An im2col ring that keeps its cluster: w's tile (the one multicast) of 256 rows or more,
        x's of 128 or more, and a K loop of a known 16 steps or more (std.conv's conv2d at 128 x 256
        over 3 x 3 x 256 channels: conv3x3_56_256 1.00x cuDNN clustered, 0.95x not)."""
        from .const_cond import _value
        from .im2col_tma import kernel_scalars
        defs = kernel_scalars(self.k.body[:self.k.body.index(self.loop)])

        def folded(e, depth=0):
            if isinstance(e, ir.Var) and e.name in defs and depth < 8:
                return folded(defs[e.name], depth + 1)
            if isinstance(e, ir.BinOp):
                return replace(e, a=folded(e.a, depth), b=folded(e.b, depth))
            if isinstance(e, (ir.Cast, ir.UnaryOp)):
                return replace(e, x=folded(e.x, depth))
            return e
        steps = _value(folded(self.loop.stop))
        return steps is not None and steps >= 16 and any(x.rows >= 256 for x in shared) and \
            all(x.rows >= 128 for x in loads if x.im2col)

    def fixed_names(self) -> set:
        """The names every tile reads alike: shape symbols, scalar parameters, and the kernel's
        scalars set once before the loop from them alone (std.conv's CB = cdiv(C, BK))."""
        from .im2col_tma import kernel_scalars, written_in
        fixed = {*self.k.shape_symbols(), *(p.name for p in self.k.params if p.kind == "scalar")}
        inner = written_in(self.loop.body)
        return fixed | {n for n, v in kernel_scalars(self.k.body[:self.k.body.index(self.loop)]).items()
                        if n not in inner and all(x.name in fixed for x in variables(v))}

    def shared_by_cluster(self, c: ir.Copy) -> bool:
        """Whether both blocks of a cluster copy the same tile: its origin reads only the loop
        variable, the other block indices, scalar parameters and shape sizes (a scalar the
        kernel computes may depend on y, as a grouped GEMM's expert does)."""
        same = {self.loop.var, *self.k.block_vars[:1], *self.k.block_vars[2:], *self.fixed_names()}
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

    def barrier_free(self, stmts, in_loop: bool = False) -> bool:
        """Statements the consumers can run while the producer thread is busy elsewhere: none
        may wait for the whole block.  Inside the loop a `sync` only orders the producer's
        copies before the compute (the scheduler's barriers), which the stage's full barrier
        already does, so it is dropped — as long as the consumers write no shared memory."""
        for s in statements(stmts):
            if isinstance(s, ir.Gemm):
                if not (self.uses_wgmma(s) or wgmma_rs_ready(s, self.buffers, self.k.threads) or (
                        self.dequant and dequant_ring.mma_register_a(s, self.buffers, self.k.threads))):
                    return False
            elif isinstance(s, ir.Reduce):
                if not reduces_in_registers(s, self.buffers, self.k.threads) and not (
                        in_loop and self.consumer_sync and self.buffers[s.src].scope == "fragment"
                        and self.buffers[s.dst].scope == "fragment"):
                    return False
            elif isinstance(s, ir.Copy):
                src, dst = self.buffers.get(s.src.name), self.buffers.get(s.dst.name)
                if s.src.name in self.params and dst is not None and dst.scope == "fragment":
                    continue  # a tensor's elements into registers: each thread loads its own
                if in_loop and self.consumer_sync and consumer_syncs.fragment_into_shared(s, self.buffers):
                    continue  # the consumers' barrier orders it before the gemm that reads it
                # between fragments of one layout: each thread its own
                if src is None or dst is None or src.scope != "fragment" or dst.scope != "fragment" \
                        or src.layout != dst.layout:
                    return False
            elif isinstance(s, ir.Parallel):
                if s.layout is None:
                    return False
                # an exchange goes through shared memory: in the loop, a read-only one at the
                # consumers' barrier (WarpSpecialization.exchanges)
                if s.exchange and not (in_loop and self.consumer_sync and not any(w for _, w in s.exchange)):
                    return False
            elif isinstance(s, (ir.Fill, ir.Store)):
                name = s.buffer if isinstance(s, ir.Fill) else s.name
                if name in self.buffers and self.buffers[name].scope == "shared":
                    return False
            elif isinstance(s, ir.Sync):
                if not in_loop:
                    return False
            elif isinstance(s, ir.Atomic):
                if s.name not in self.params:  # into a tensor: each thread its own (a shared buffer's waits)
                    return False
            elif not isinstance(s, (ir.LetScalar, ir.Assign, ir.If, ir.For, ir.Break, ir.Continue)):
                return False
        return True


def reads_staged(stmts, staged: set) -> bool:
    """Whether `stmts`, after the ring's loop, read one of its staged buffers: the C's name for
    one is its first stage again there (not the last iteration's tile), which the producer of
    a persistent kernel may already be refilling for the next tile."""
    for s in statements(stmts):
        used = {x.name for e in statement_exprs(s) for x in loads(e)}
        if isinstance(s, ir.Copy):
            used.add(s.src.name)
        elif isinstance(s, ir.Gemm):
            used |= {s.a, s.b}
        elif isinstance(s, (ir.Reduce, ir.Scan)):
            used.add(s.src)
        if used & staged:
            return True
    return False


def _consumer_prologue(s, params: dict, buffers: dict) -> bool:
    """Work before the loop that the consumer threads do alone while the producer's skip it:
    a copy from a tensor into a shared buffer the ring does not stage (a tile every iteration
    reads, as attention's Q), and the barrier after it, which every thread meets; a print or
    device_assert (once per block, by a consumer thread); a copy from a tensor into a fragment
    and a parallel loop over fragments alone (attention's backward: each row's log-sum-exp and
    dO . O, laid out over the consumers' threads, which the producer's do not have)."""
    if isinstance(s, (ir.Sync, ir.Print)):
        return True
    if isinstance(s, ir.Parallel):
        return _registers_only(s, buffers)
    if not (isinstance(s, ir.Copy) and s.src.name in params and isinstance(s.dst, ir.BufferRef)):
        return False
    dst = buffers[s.dst.name]
    return dst.scope == "shared" and dst.layout.stages <= 1 or dst.scope == "fragment"


def _registers_only(loop: ir.Parallel, buffers: dict) -> bool:
    """A parallel loop that reads and writes fragments and scalars only: no shared memory, no
    tensor, nothing another thread sees, so no barrier."""
    for s in statements(loop.body):
        if not isinstance(s, (ir.Store, ir.LetScalar, ir.Assign, ir.If)):
            return False
        if isinstance(s, ir.Store) and (s.name not in buffers or buffers[s.name].scope != "fragment"):
            return False
        if any(x.name not in buffers or buffers[x.name].scope != "fragment" for e in statement_exprs(s)
               for x in loads(e)):
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

