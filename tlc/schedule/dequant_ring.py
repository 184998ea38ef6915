"""A dequantizing ring through the TMA (#18), the decision, behind an option off by default
(DEQUANT_RING: the H200 timed it, a win for matmul_w4a16 and a loss for its split-K, below), or
taken by a kernel whose grid says `dequant_ring=True` (std.gemm's matmul_w4a16 at its TMA constant).

warpspec.py specializes a pipelined loop whose leading copies the TMA can make and whose other
statements never wait for the whole block.  std.gemm's w4a16 decode kernels (matmul_w4a16, its
split-K) fail three of its conditions, none of which the ring needs:
- their weight tile Wq (u32[BN, BK / 8], rows of 128 or 256 bytes) is padded (smem.py pads a 128-byte-row
  tile that no gemm reads), and the TMA writes a box dense or 128-byte swizzled, so
  `ring_loads.tma_load` wants the swizzle;
- their scale and zero-point tiles (f32[BN, 8], u8[BN, 16]: 32- and 16-byte rows) are neither
  128-byte swizzled nor 1-D, the two kinds of box `tma_load` makes;
- at M <= 8 (BM = 8: N = 8 of wgmma's register-A form is not taken) their gemm runs on mma.sync,
  and `_Planner.barrier_free` takes wgmma gemms alone in the consumers' loop.
With the option, warp specialization takes such a ring:
- `swizzled_stages`: a padded 2-D staged tile of 128-byte segments that a ring's copy fills is laid
  out 128-byte swizzled instead, in its own bytes (no more than the pad's, its offset already
  1024-aligned): the swizzle spreads the 8 rows of a column over the banks as the pad did (the
  dequantization's reads, a thread's word at row g + 8h, column 4c + t, of 8 lanes' rows: bank
  4 (c ^ g) + t, no conflict);
- `box_load`: a 2-D tile, unpadded and unswizzled, of whole 16-byte rows, at most 256 x 256
  elements, its stage 128-byte aligned, is one unswizzled box (StageLoad.flat, its map's box
  rows x cols, CU_TENSOR_MAP_SWIZZLE_NONE): lands dense, as the tile is laid out;
- `mma_register_a`: an mma.sync gemm with A in registers in the layout mma reads (no scratch
  tile, no barrier: schedule/operand_layout.py) and B in shared memory runs in the consumers'
  loop, each warp reading its stage with ldmatrix; the stage is released once the gemm returns;
- one block a cluster, and where the gemm is mma.sync up to DEQUANT_BLOCKS blocks an SM
  (`blocks_per_sm`, WarpSpecialization.blocks_per_sm): no setmaxnreg, launch bounds (threads +
  128, B), the persistent launch as many blocks as the SMs hold.
Where the host cannot encode a map (a tensor's rows not 16-byte multiples: the scales' at KG not a
multiple of 4, the zeros' at KG not a multiple of 16), the producer's threads copy every tile
element by element (tl_tma's bit 0), correct but slower, as in every TMA ring.

The consumers then issue no copy code: at M = 1 the cp.async ring's copy issue is ~580 of the
~1,200 SASS a thread runs a K step (helper D, session 26, /work/notes/D.md)."""
from __future__ import annotations

from dataclasses import replace

from .. import ir
from ..ir.walk import statements
from .operand_layout import mma_register_a_layouts
from .smem import SWIZZLE_ALIGN, SharedLayout, _align

# Off: one switch for every dequantizing ring, and the H200 (session 28,
# bench/results/q_D2_w4a16_tma_ring-h200-twentyeighth.txt, outputs checked first; N = K = 8192
# g128) timed matmul_w4a16 faster with it and its split-K slower: matmul_w4a16 at config.json's
# tiles M = 1 27.3 us against 36.4 (0.75), M = 16 27.4 against 30.6 (0.90), and the fastest rows
# of all its deeper rings (M = 1 BK=256 on 6 stages 24.2, against the GEMV's 24.9; M = 16 BK=512
# on 4 stages 25.1, against split-K 2's 27.0), but matmul_w4a16_splitk M = 1 (4 parts) 31.0
# against 26.1 (1.19), M = 16 (2 parts) 30.6 against 27.0 (1.13).  So a kernel chooses it by
# grid(dequant_ring=...) (Kernel.dequant_ring): std.gemm's matmul_w4a16 by its TMA constant,
# which config.json's sm_90a rules at M <= 16 set.
DEQUANT_RING = False
# The most blocks of such a ring an SM holds at once (`blocks_per_sm`): a warp-specialized block
# with setmaxnreg holds an SM alone, one consumer warpgroup (THREADS = 128) one warp a scheduler
# to hide the dequantization's latencies with, where the cp.async kernels run 4 blocks an SM;
# matmul_w4a16 at M = 1's tiles needs 56 registers without setmaxnreg (nvcc sm_90a, launch
# bounds (256, 4): no spills), its split-K at K steps of 512 71 at (256, 3) and spills 36 bytes at
# (256, 4).  1: one block an SM, setmaxnreg as every ring.
DEQUANT_BLOCKS = 3
# Split-K of such a ring whose wave counts the blocks an SM holds (`split`, #18): WAVE SMs times
# its `blocks_per_sm`, so that at M = 1 (BM = 8, BN = 64, K steps of 256 on 6 stages: 2 blocks an
# SM) N = K = 8192's 128 tiles take K in 2 parts, 256 units, where split_k.py's wave of 132 keeps
# one part and one block on most SMs: one consumer warp a scheduler.  Each SM then runs two
# blocks' consumers, 8 warps, each warp's 16 rows x 256 columns a K step a chain of 16 mma.sync
# into one accumulator and ~496 SASS (nvcc 13.0 sm_90a, matmul_w4a16 at config.json's M = 1
# rule), where one warp a scheduler issued at ~0.33 of its cycles (24.2 us, 32 K steps: ~1500
# cycles a step at 1.98 GHz).  The parts meet as split_k.py's do (the last part adds the others'
# f32 tiles in part order).  Off until the H200 times it (bench/queue/D_w4a16_split_ring.sh).
DEQUANT_SPLIT = False


def swizzled_stages(kernel: ir.Kernel, params: dict) -> ir.Kernel | None:
    """`kernel` with the padded staged tiles its pipelined loops' leading copies fill (from a
    tensor, of the tensor's dtype) 128-byte swizzled in place: 2-D, rows of 128 bytes, whole
    1024-byte swizzle periods (8 rows), at an offset on the period, the swizzled stages no
    larger than the padded ones.  Rows of whole 128-byte segments (K steps of 512: 256 bytes)
    lie segment by segment, as smem_index and the TMA's boxes have them.  None where there is none."""
    buffers = {b.name: b for b in kernel.buffers}
    names = set()
    for s in kernel.body:
        if not (isinstance(s, ir.For) and s.kind == "pipelined" and s.stages > 1):
            continue
        for c in s.body:
            if not (isinstance(c, ir.Copy) and isinstance(c.dst, ir.BufferRef) and c.src.name in params):
                break
            b = buffers[c.dst.name]
            if b.scope == "shared" and params[c.src.name].dtype == b.dtype and _swizzles(b):
                names.add(b.name)
    if not names:
        return None
    out = []
    for b in kernel.buffers:
        if b.name in names:
            one = b.shape[0] * b.shape[1] * b.dtype.itemsize  # (rows of 128-byte segments: segment-major)
            b = replace(b, layout=SharedLayout(b.layout.stages, 0, 128, _align(one, SWIZZLE_ALIGN) * b.layout.stages))
        out.append(b)
    return replace(kernel, buffers=tuple(out))


def _swizzles(b: ir.Buffer) -> bool:
    """Whether padded staged tile `b` may be 128-byte swizzled in its own bytes."""
    lay = b.layout
    if len(b.shape) != 2 or not lay.pad or lay.swizzle_bytes or b.smem_offset is None or lay.stages < 2:
        return False
    rows, row = b.shape[0], b.shape[1] * b.dtype.itemsize
    if row % 128 or rows % 8 or b.smem_offset % SWIZZLE_ALIGN:
        return False
    return _align(rows * row, SWIZZLE_ALIGN) * lay.stages <= lay.bytes


def box_load(index: int, c: ir.Copy, p: ir.Param, b: ir.Buffer, stage_elems: int):
    """The copy at `index` of a ring's loop as one unswizzled TMA box (StageLoad.flat with
    `rows` rows), or None: a whole 2-D tile of `b` (unpadded, unswizzled) from tensor `p`
    (rank 2 to 5, its leading extents 1), rows of whole 16 bytes, at most 256 rows and 256
    columns (the TMA's box), each stage starting 128-byte aligned."""
    from ..ir.warpspec import StageLoad
    if len(b.shape) != 2 or b.layout.pad or b.layout.swizzle_bytes or not 2 <= len(p.shape) <= 5:
        return None
    rows, cols = b.shape
    extents = list(c.src.extents)
    if any(e != 1 for e in extents[:-2]) or tuple(extents[-2:]) != (rows, cols):
        return None
    if (cols * b.dtype.itemsize) % 16 or rows > 256 or cols > 256 or (stage_elems * b.dtype.itemsize) % 128 \
            or b.smem_offset is None or b.smem_offset % 128:
        return None
    return StageLoad(index, b.name, rows, cols, stage_elems, -1, flat=True)


def mma_register_a(g: ir.Gemm, buffers: dict, threads: int) -> bool:
    """Whether gemm `g` runs on mma.sync with A from registers as laid out (no scratch tile and
    barriers: sm80.py's gemm_fragment_a) and B in shared memory."""
    a, c = buffers[g.a], buffers[g.c]
    return a.scope == "fragment" and mma_register_a_layouts(g, buffers, threads) == (a.layout, c.layout)


def planned(kernel: ir.Kernel, target, planner):
    """(kernel, planner, its WarpSpecialization) where warp specialization takes the ring as a
    dequantizing one (the planner's `dequant`: `box_load`, `mma_register_a`, one block a
    cluster), its padded stages swizzled (`swizzled_stages`), the kernel noting what the option
    did; else (kernel, planner, None) as they were.  `planner` is warpspec's _Planner class."""
    params = {p.name: p for p in kernel.params}
    relaid = swizzled_stages(kernel, params) or kernel
    p, ws = _plan(relaid, target, planner)
    if ws is None:
        return kernel, planner(kernel, target), None
    return replace(relaid, notes=relaid.notes + (_note(kernel, relaid, ws),)), p, ws


def _plan(kernel: ir.Kernel, target, planner):
    """(the planner, its WarpSpecialization or None) of `kernel`'s ring planned as a
    dequantizing one, its blocks an SM and their registers set."""
    p = planner(kernel, target)
    # one block a cluster: the decode kernels' grid is one row of tiles (M <= BM), whose
    # consecutive tiles never share the weight's, so a cluster's blocks would only wait on each
    # other's stages
    p.dequant = True
    ws = p.plan()
    if ws is None:
        return p, None
    blocks = blocks_per_sm(ws, kernel, target)
    if blocks > 1:
        share = min(255, target.registers_per_sm // (blocks * (kernel.threads + ws.producer_threads)) // 8 * 8)
        ws = replace(ws, blocks_per_sm=blocks, producer_registers=share, consumer_registers=share)
    return p, ws


def split(kernel: ir.Kernel, ws, target, planner) -> ir.Kernel | None:
    """`kernel` (planned by `planned` into `ws`) split along K as split_k.py splits a persistent
    ring, its wave WAVE x the blocks an SM holds (DEQUANT_SPLIT), where its ring planned again
    for the split kernel is a persistent dequantizing one with the same loads and blocks an SM;
    else None."""
    from ..ir.warpspec import SplitK
    from . import split_k as sk
    if not DEQUANT_SPLIT:
        return None
    acc = sk.candidate(kernel, ws, dequant=True)
    if acc is None:
        return None
    wave = sk.WAVE * ws.blocks_per_sm
    split_kernel, part, parts = sk.rewrite(kernel, ws, wave=wave)
    p, ws2 = _plan(split_kernel, target, planner)
    if ws2 is None or p.moved is not None or ws2.tile_order is None or ws2.tile_loads:
        return None
    if [(x.buffer, x.flat, x.multicast) for x in ws2.loads] != [(x.buffer, x.flat, x.multicast) for x in ws.loads] \
            or ws2.blocks_per_sm != ws.blocks_per_sm or ws2.tile_order.cluster != ws.tile_order.cluster:
        return None  # (its parts would not fill the wave they were counted for)
    note = (f"split-K of the dequantizing ring (dequant_ring.py DEQUANT_SPLIT): the grid's z counts the parts of K "
            f"({part}), at most {wave} units (WAVE x {ws.blocks_per_sm} blocks an SM); the last part adds {acc}'s "
            f"partial tiles in part order")
    return replace(split_kernel, warp_spec=replace(ws2, split_k=SplitK(part, parts, acc, wave)),
                   notes=split_kernel.notes + (note,))


def blocks_per_sm(ws, kernel: ir.Kernel, target) -> int:
    """The blocks of `kernel`'s dequantizing ring `ws` an SM of `target` holds (at most
    DEQUANT_BLOCKS): by shared memory (the ring's bytes, its barriers and staging included, and
    1 KB more a block as the GPU reserves), threads (the kernel's and the producer's) and the
    target's block limit.  1 where the consumers' gemm runs on wgmma: its register A holds a
    whole K step's dequantized weights until the wait (std.gemm's w4a16 at M = 16, K steps of
    512: 222 registers, helper D's nvcc count), which a block alone on its SM keeps."""
    from .blocks_per_sm import resident_blocks
    from .gemm_overlap import wgmma_rs_ready, wgmma_ready
    buffers = {b.name: b for b in kernel.buffers}
    loop = kernel.body[ws.loop]
    threads = kernel.threads
    if any(isinstance(g, ir.Gemm) and (wgmma_rs_ready(g, buffers, threads) or wgmma_ready(g, buffers, threads))
           for g in statements(loop.body[ws.consumer[0]:ws.consumer[1]])):
        return 1
    return max(1, min(DEQUANT_BLOCKS, resident_blocks(ws.staging_end, threads + ws.producer_threads, target)))


def _note(before: ir.Kernel, after: ir.Kernel, ws) -> str:
    """What --emit ir says of a ring the option let warp specialization take."""
    was = {b.name: b.layout for b in before.buffers}
    buffers = {b.name: b for b in after.buffers}
    swizzled = [f"{b.name} (was pad={was[b.name].pad})" for b in after.buffers if b.layout != was[b.name]]
    boxes = [x.buffer for x in ws.loads if x.flat and x.rows > 1]
    loop = after.body[ws.loop]
    from .gemm_overlap import wgmma_rs_ready
    mma = [s.a for s in statements(loop.body[ws.consumer[0]:ws.consumer[1]]) if isinstance(s, ir.Gemm)
           and not wgmma_rs_ready(s, buffers, after.threads) and mma_register_a(s, buffers, after.threads)]
    parts = [f"{', '.join(swizzled)} 128-byte swizzled for the TMA"] if swizzled else []
    if boxes:
        parts.append(f"{', '.join(boxes)} one unswizzled box a stage")
    if mma:
        parts.append(f"the gemm of {', '.join(mma)} on mma.sync from registers in the consumers' loop")
    if ws.blocks_per_sm > 1:
        parts.append(f"up to {ws.blocks_per_sm} blocks an SM of {ws.consumer_registers} registers a thread")
    return "a dequantizing ring through the TMA (dequant_ring.py): " + "; ".join(parts)
