"""The layout a gemm's A operand needs when it is a fragment: the tensor cores then read it
straight from the registers, as FlashAttention multiplies its probabilities by V.

Facts from the PTX ISA: mma.sync.m16n8k16's A operand gives lane l, in each 16 x 16 piece,
rows l/4 and l/4 + 8 at columns 2(l%4), +1 and 2(l%4) + 8, +9, as four registers of two 16-bit
values (a0: row l/4, low columns; a1: row l/4 + 8, low; a2, a3: the same at the high
columns).  Its accumulator gives lane l, in each 16 x 8 piece, rows l/4 and l/4 + 8 at
columns 2(l%4), +1.  So two accumulator pieces side by side hold exactly the elements of one
A piece of K = 16, in the same order (FlashAttention 2's observation).  wgmma.m64nNk16 with
A in registers reads the same pattern per warp of the warpgroup, warp w holding rows
16w .. 16w + 15 of its 64, and its accumulator is the mma one with one warp per 16 rows
(FlashAttention 3 feeds P to the second product this way).

The named layout is therefore an accumulator layout over A's own shape [M, K] with every
warp in one column (`mma_a` on sm_80: `MmaAccumulator((M, K), warps, 1)`; `wgmma_a` on
sm_90a: wgmma's accumulator layout of [M, K]).  A gemm reading such a fragment needs its own
accumulator in the matching layout over [M, N] (each warp owns whole rows of both), and a
fragment written from an accumulator of that layout by a parallel loop or a copy keeps it:
no data moves between threads.  Where a fragment A ends up in another layout, the code
generator stages it through shared memory (correct, slower).
"""
from __future__ import annotations

from .. import ir, targets
from ..ir.walk import loads, statement_exprs, statements
from .layout import MmaAccumulator, wgmma_accumulator, wgmma_bands
from .tensor_cores import tensor_core_op

REGISTER_A_TYPES = ("f16", "bf16")  # one f16x2 / bf16x2 register per pair: no repacking


def mma_a(shape: tuple, threads: int) -> MmaAccumulator:
    """The sm_80 register layout of an A operand of `shape` [M, K]: mma's accumulator layout
    with every warp owning M / warps whole rows."""
    return MmaAccumulator((shape[0], shape[1]), threads // 32, 1)


def wgmma_a(shape: tuple, threads: int) -> MmaAccumulator:
    """The sm_90a register layout of an A operand of `shape`: wgmma's accumulator layout."""
    return wgmma_accumulator(shape, threads)


# The most 32-bit registers a thread of a register-A gemm's A fragment holds for wgmma to take it
# (0: any), an option until the H200 times it (bench/queue/D_w4a16_mma_register_a.sh, at 32).
# wgmma reads every register of A until its wait, so a fragment computed whole before the gemm
# stays live whole: std.gemm's w4a16 decode kernels at M = 16 dequantize a K step of 512 into 128
# registers a thread before 32 HGMMAs (222 registers, 2 blocks of 4 warps an SM), where
# mma.sync, which reads its registers at issue, lets ptxas compute each K slice's weights right
# before its mma (M = 1's BM = 8 tiles, mma.sync already: 48 registers).  With 32 (nvcc 13.0
# sm_90a): the split-K kernel at M = 16's tiles 222 -> 100 registers, at K steps of 256 104 -> 52,
# at M = 64's 195 -> 128; matmul_w4a16 at M = 16 224 -> 106, at M = 64 167 -> 141.
WGMMA_REGISTER_A_MAX = 0


def register_a_layouts(g: ir.Gemm, buffers: dict, threads: int, target: str) -> tuple | None:
    """(A's layout, C's layout) under which the gemm reads its fragment A from registers on
    `target`: wgmma's register-A form where the target has wgmma and it fits, else mma.sync's
    (`mma_register_a_layouts`)."""
    if register_a_operands(g, buffers, threads) and targets.get(target).wgmma and wgmma_register_a(g, buffers, threads):
        return wgmma_a(buffers[g.a].shape, threads), wgmma_accumulator(buffers[g.c].shape, threads)
    return mma_register_a_layouts(g, buffers, threads)


def _a_registers(a, threads: int) -> int:
    """The 32-bit registers a thread holds of 16-bit fragment `a` (two values each)."""
    return a.shape[0] * a.shape[1] // threads // 2


def mma_register_a_layouts(g: ir.Gemm, buffers: dict, threads: int) -> tuple | None:
    """(A's layout, C's layout) under which mma.sync reads the gemm's fragment A from
    registers, or None when it cannot (see `register_a_operands`; or rows that do not split
    into 16 per warp)."""
    if not register_a_operands(g, buffers, threads) or buffers[g.a].shape[0] % (16 * (threads // 32)):
        return None
    return mma_a(buffers[g.a].shape, threads), mma_a(buffers[g.c].shape, threads)


def register_a_operands(g: ir.Gemm, buffers: dict, threads: int) -> bool:
    """Whether the operands allow A from registers at all: A a 2-D f16/bf16 fragment read as
    stored (not trans_a), B in shared memory, K whole steps of 16, N whole pieces of 8."""
    a, b, c = buffers[g.a], buffers[g.b], buffers[g.c]
    if a.scope != "fragment" or b.scope != "shared" or g.trans_a or len(a.shape) != 2 or len(c.shape) != 2:
        return False
    if a.dtype.name not in REGISTER_A_TYPES or tensor_core_op(a.dtype, b.dtype, c.dtype, g.precision) is None:
        return False
    return threads % 32 == 0 and a.shape[1] % 16 == 0 and c.shape[1] % 8 == 0


def wgmma_register_a(g: ir.Gemm, buffers: dict, threads: int) -> bool:
    """Whether wgmma's register-A form takes the gemm: warpgroups of 128 threads owning one or
    two 64-row bands each, N a multiple of 16 up to 256 (and at most 128 accumulator
    registers a thread), B's contiguous dimension whole 128-byte segments (the 128-byte
    swizzle the descriptors describe), A at most WGMMA_REGISTER_A_MAX registers a thread."""
    a, b, c = buffers[g.a], buffers[g.b], buffers[g.c]
    if threads % 128 or (WGMMA_REGISTER_A_MAX and _a_registers(a, threads) > WGMMA_REGISTER_A_MAX):
        return False
    (m, k), n = a.shape, c.shape[1]
    groups = threads // 128
    bands = wgmma_bands(c.shape, threads)
    seg = 128 // b.dtype.itemsize
    return (bands * 64 * groups == m and bands in (1, 2) and m * n <= 128 * threads and n % 16 == 0
            and n <= 256 and k % 16 == 0 and b.shape[-1] % seg == 0 and b.shape[0] % 8 == 0)


def register_a_group(stmts, frags: dict) -> set[str]:
    """The fragments that would rather take a register-A layout: every fragment used as a
    gemm's A, and those a parallel loop or a copy ties to one (same shape, indexed alike),
    so that a gemm accumulator among them is laid out the way the A fragment reads it."""
    group = {s.a for s in stmts if isinstance(s, ir.Gemm) and s.a in frags}
    ties = []
    for s in stmts:
        if isinstance(s, ir.Copy) and isinstance(s.src, ir.BufferRef) and isinstance(s.dst, ir.BufferRef):
            ties.append({s.src.name, s.dst.name})
        elif isinstance(s, ir.Parallel):
            ties.append(set(_same_indexed(s, frags)))
    changed = True
    while changed:
        changed = False
        for tie in ties:
            tie &= frags.keys()
            if tie & group and not tie <= group:
                group |= tie
                changed = True
    return group


def row_warp_accumulator(shape: tuple, threads: int) -> MmaAccumulator | None:
    """The mma.sync accumulator layout for a gemm whose result feeds a register A: every warp
    in one column, when the rows split 16 per warp (wgmma's own layout already is one)."""
    if len(shape) != 2 or threads % 32 or shape[0] % (16 * (threads // 32)) or shape[1] % 8:
        return None
    return mma_a(shape, threads)


def _same_indexed(p: ir.Parallel, frags: dict) -> list[str]:
    """Fragments of the loop's shape that it indexes by its own variables, in order."""
    out = []
    for s in statements(p.body):
        accesses = [(x.name, x.indices) for e in statement_exprs(s) for x in loads(e)]
        if isinstance(s, ir.Store):
            accesses.append((s.name, s.indices))
        for name, idx in accesses:
            if name in frags and frags[name].shape == tuple(p.extents) and [
                    getattr(e, "name", None) for e in idx] == list(p.vars):
                out.append(name)
    return out
