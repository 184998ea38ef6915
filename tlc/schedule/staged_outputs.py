"""The outputs a warp-specialized ring's kernel writes through the TMA from shared memory, the
decisions (schedule/warpspec.py's planner asks them): the epilogue's store of the accumulator tile,
staged beside the ring (`staged_store`: ir.StagedStore) or, where no room is left there, in a
shared buffer dead after the ring (`dead_after`: attention's Q tile) or in a load's stage of the
tile's last iteration (`store_stage`: K's); and the consumers' tile adds made by the TMA's bulk
reduction (`bulk_reduces`: ir.BulkReduce).  Each record comes with the tensor map it writes
through, for the planner to register."""

from __future__ import annotations

from dataclasses import replace

from .. import ir
from ..ir.walk import statements, variables
from ..ir.warpspec import BulkReduce, StagedStore, TensorMapSpec, ViewDims
from .consumer_syncs import reduces_through_scratch
from .gemm_overlap import buffers_read, buffers_written
from .layout import wgmma_accumulator


def staged_store(kernel: ir.Kernel, smem_per_block: int, after, first: int, ring_end: int, dead: tuple | None = None,
                 ring_stage: tuple | None = None) -> tuple[StagedStore, TensorMapSpec] | None:
    """The epilogue's store of the accumulator tile to a tensor, if the TMA can make it
    from a staging buffer that fits beside the ring: a top-level `copy` of a whole wgmma
    accumulator to a tile of a tensor parameter (rank 2 to 5, leading extents 1) of 2- or
    4-byte elements, in whole 128-byte segments.  `dead` (offset, bytes): where one tile a
    block may stage it instead, a shared buffer no statement after the ring touches (the
    accumulator's copy then may stand beside others of row vectors: attention's LSE).
    `ring_stage` (load, offset, bytes, dtype): where a persistent ring may stage it instead,
    in a load's buffer (of the tensor's dtype) at the stage of the tile's last iteration
    (store_stage).  With the map it stores through (the record's `tensor_map` -1 until the
    planner registers it)."""
    buffers, params = {b.name: b for b in kernel.buffers}, {p.name: p for p in kernel.params}
    copies = [s for s in after if isinstance(s, ir.Copy)]
    if dead is not None or ring_stage is not None:
        copies = [s for s in copies if s.src.name in buffers and len(buffers[s.src.name].shape) == 2]
    # several whole accumulators alike into one tensor (BN = 256's two halves): staged one
    # after another beside the ring, each stored through the same map
    more = copies[1:] if len(copies) > 1 and dead is None and ring_stage is None and _alike(copies, buffers) else []
    if more:
        copies = copies[:1]
    if len(copies) != 1:
        return None
    c = copies[0]
    frag, p = buffers.get(c.src.name), params.get(c.dst.name)
    if not isinstance(c.src, ir.BufferRef) or not isinstance(c.dst, ir.Region) or frag is None or p is None \
            or frag.scope != "fragment" or len(frag.shape) != 2 or not 2 <= len(p.shape) <= 5:
        return None
    view = None
    if getattr(c.dst, "dims", None) is not None:  # a view's region (Region.dims): the map sees the view's shape
        symbols = set(kernel.shape_symbols())
        names = tuple(dict.fromkeys(v.name for e in c.dst.dims for v in variables(e)))
        if not set(names) <= symbols:
            return None
        view = ViewDims(tuple(c.dst.dims), names)
    extents = list(c.dst.extents)
    if frag.layout != wgmma_accumulator(frag.shape, kernel.threads) or frag.layout.wgmma_columns \
            or any(e != 1 for e in extents[:-2]) or tuple(extents[-2:]) != tuple(frag.shape):
        return None
    rows, cols = frag.shape
    size = p.dtype.itemsize
    groups = kernel.threads // 128
    if size not in (2, 4) or (cols * size) % 128 or rows % groups or rows // groups > 256:
        return None
    offset = -(-ring_end // 1024) * 1024
    nbytes = rows * cols * size
    in_stage, reuse = None, False
    if offset + nbytes * (1 + len(more)) > smem_per_block:
        if more and offset + nbytes <= smem_per_block:
            reuse = True  # one buffer for the parts in turn
        elif dead is not None and nbytes <= dead[1]:
            offset = dead[0]
        elif ring_stage is not None and nbytes <= ring_stage[2] and p.dtype == ring_stage[3]:
            in_stage, offset = ring_stage[0], ring_stage[1]
        else:
            return None
    spec = TensorMapSpec(p.name, p.dtype, tuple(p.shape), rows // groups, 128 // size, store=True, view=view)
    return StagedStore(first + after.index(c), -1, rows // groups, offset, nbytes, in_stage,
                       tuple(first + after.index(x) for x in more), reuse), spec


def _alike(copies: list, buffers: dict) -> bool:
    """Whether `copies` are all whole fragments of one shape, dtype and layout into one tensor
    parameter, with no view (what the first one's staged store checks, the rest then alike)."""
    def key(c):
        frag = buffers.get(getattr(c.src, "name", None))
        if not isinstance(c.src, ir.BufferRef) or not isinstance(c.dst, ir.Region) or frag is None \
                or getattr(c.dst, "dims", None) is not None:
            return None
        return (frag.scope, tuple(frag.shape), frag.dtype, frag.layout, c.dst.name, tuple(c.dst.extents))
    keys = [key(c) for c in copies]
    return keys[0] is not None and all(x == keys[0] for x in keys)


def store_stage(kernel: ir.Kernel, ws, body: list, after) -> tuple | None:
    """(load, offset, bytes, dtype) of the ring's buffer a persistent ring may stage its epilogue's
    tile in (StagedStore.in_stage): a TMA load's, 1024-aligned stage by stage, that the
    tile loads' last reader (`tile_done`, attention's S = Q @ K.T: K's) alone reads, in the
    loop and after it, and that no statement after the ring touches shared memory beside the
    store.  Its stage of the tile's last iteration is free once every consumer's last such
    gemm is done, though the deferred gemm may still read the stage's other loads (V)."""
    buffers = {b.name: b for b in kernel.buffers}
    start, stop = ws.consumer
    reader = body[ws.tile_done]
    if touches_shared(after, buffers, kernel.threads):
        return None
    for j, x in enumerate(ws.loads):
        b = buffers[x.buffer]
        stage = x.stage_elems * b.dtype.itemsize
        if x.gather or x.im2col or x.buffer != reader.b or b.smem_offset is None or b.smem_offset % 1024 \
                or stage % 1024:
            continue
        if [i for i in range(start, stop) if x.buffer in buffers_read(body[i]) | buffers_written(body[i])] \
                != [ws.tile_done]:
            continue
        return j, b.smem_offset, stage, b.dtype
    return None


def touches_shared(stmts, buffers: dict, threads: int) -> bool:
    """Whether `stmts` (after the ring's loop) touch shared memory: a shared buffer, or a
    reduction through its scratch."""
    return any(isinstance(x, ir.Reduce) and reduces_through_scratch(x, buffers, threads)
               for x in statements(stmts)) or any(buffers[n].scope == "shared" for s in stmts
                                                  for n in buffers_written(s) | buffers_read(s) if n in buffers)


def dead_after(kernel: ir.Kernel, after) -> tuple | None:
    """(offset, bytes) of the largest shared buffer outside the ring, 1024-aligned, where no
    statement after the ring's loop touches shared memory (so no buffer sharing its bytes is
    live there either): attention's Q tile, read by the loop's S = Q @ K.T alone."""
    buffers = {b.name: b for b in kernel.buffers}
    if touches_shared(after, buffers, kernel.threads):
        return None
    found = [(b.layout.bytes, b.smem_offset) for b in buffers.values()  # (the ring's are staged)
             if b.scope == "shared" and b.smem_offset is not None and b.smem_offset % 1024 == 0
             and b.layout.stages <= 1]
    return (max(found)[1], max(found)[0]) if found else None


def bulk_reduces(kernel: ir.Kernel, smem_per_block: int, body: list, start: int, stop: int, end: int) -> tuple:
    """The consumers' tile adds the TMA's bulk reduction can make (ir.BulkReduce), each
    staged after `end`: a top-level parallel loop of one `atomic_add` of a whole f32 wgmma
    accumulator, read at the loop's variables, into the tile of an f32 tensor parameter
    (rank 2 to 5) at those variables plus offsets that read neither, in whole 128-byte
    segments of at most 256 rows, where the staging buffer fits the shared memory.  Each with the
    map it adds through (the record's `tensor_map` -1 until the planner registers it)."""
    buffers, params = {b.name: b for b in kernel.buffers}, {p.name: p for p in kernel.params}
    out = []
    for j in range(start, stop):
        p = body[j]
        if not isinstance(p, ir.Parallel) or len(p.vars) != 2 or len(p.body) != 1:
            continue
        a = p.body[0]
        if not isinstance(a, ir.Atomic) or a.kind != "add" or not isinstance(a.value, ir.Load):
            continue
        frag, t = buffers.get(a.value.name), params.get(a.name)
        if frag is None or t is None or frag.scope != "fragment" or frag.dtype.name != "f32" \
                or t.dtype.name != "f32" or not 2 <= len(t.shape) <= 5 or tuple(p.extents) != tuple(frag.shape):
            continue
        if frag.layout != wgmma_accumulator(frag.shape, kernel.threads):
            continue
        row, col = p.vars
        if [x.name if isinstance(x, ir.Var) else None for x in a.value.indices] != [row, col]:
            continue
        *lead, r, c = a.indices
        if any(v.name in (row, col) for e in lead for v in variables(e)) \
                or _offset_of(r, row, col) is None or _offset_of(c, col, row) is None:
            continue
        rows, cols = frag.shape
        if (cols * 4) % 128 or rows > 256:
            continue
        offset = -(-end // 1024) * 1024
        nbytes = rows * cols * 4
        if offset + nbytes > smem_per_block:
            continue
        spec = TensorMapSpec(t.name, t.dtype, tuple(t.shape), rows, 32, store=True)
        out.append((BulkReduce(j, -1, offset, nbytes), spec))
        end = offset + nbytes
    # one add a step: where a second buffer fits, the steps take the two in turn, so that a
    # step's staging need not wait for the last step's add to have read its buffer
    if len(out) == 1 and out[0][0].offset + 2 * out[0][0].nbytes <= smem_per_block:
        out = [(replace(out[0][0], nbytes=2 * out[0][0].nbytes, buffers=2), out[0][1])]
    return tuple(out)


def _offset_of(e, var: str, other: str):
    """`e` as `var` plus a term that reads neither `var` nor `other` (that term, or 0), else None."""
    if isinstance(e, ir.Var) and e.name == var:
        return 0
    if isinstance(e, ir.BinOp) and e.op == "+" and isinstance(e.b, ir.Var) and e.b.name == var \
            and not any(v.name in (var, other) for v in variables(e.a)):
        return e.a
    return None
