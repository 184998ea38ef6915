"""A product one warpgroup computes for consumer warpgroups side by side (MLA decode's scores).

Where a block's consumer warpgroups split a 64-row wgmma accumulator by columns (MLA decode's
output, 64 x 512: 256 columns each, `layout.wgmma_column_groups`), a narrow product of the same
rows split so too (its scores, 64 x 64: m64n32 each) makes each warpgroup read the whole A tile
(Q, 64 x 576) from shared memory for half the columns: m64n32k16 reads 2 KB of A and 1 KB of B
in 16 cycles, half again over shared memory's 128 bytes a cycle (session 24 on the H200: that
product alone at 0.53 of the dense peak).  One warpgroup computing the whole m64n64 reads A once
at shared memory's rate, and holds each row whole in one quad: its row statistics complete by
shuffles, with no exchange between the warpgroups.

The decision is a layout: the accumulator takes `single_accumulator` (one column of 4 warps, the
block's first 128 threads), and what follows from it flows as layouts do: its reductions'
replicas live on that warpgroup, the statements over them run there alone (the code generator
guards them: `owner_threads`), and a loop over the shared accumulator that reads one of them
exchanges it through shared memory (`ir.Parallel.exchange`, at the consumers' barrier in a
warp-specialized ring).  It is taken where the product's result reaches the other warpgroups
anyway: copied into a shared buffer that is the A of a product whose accumulator the
warpgroups split by columns (P, the probabilities, for O += P @ V).
"""
from __future__ import annotations

from .. import ir
from ..ir.walk import statements
from .layout import MmaAccumulator, Replicated, wgmma_column_groups, wgmma_gemm

WARPGROUP = 128
# the narrowest part of a column-split accumulator at which each warpgroup's instruction reads B
# at least as fast as A (m64nNk16: 2 KB of A, N * 32 bytes of B)
SPLIT_MIN_COLUMNS = 64


def single_accumulator(shape: tuple) -> MmaAccumulator:
    """wgmma's accumulator of 64 rows on one warpgroup (threads 0..127): warp w rows 16w..16w+15."""
    return MmaAccumulator((shape[0], shape[1]), 4, 1)


def owner_threads(layout, threads: int) -> int:
    """The block threads that hold a fragment in `layout` (a layout of one warpgroup, or a
    replica of one, in a block of more: the first 128), else `threads`."""
    while isinstance(layout, Replicated):
        layout = layout.base
    if isinstance(layout, MmaAccumulator) and layout.threads < threads:
        return layout.threads
    return threads


def single_products(stmts, buffers: dict, threads: int) -> set:
    """The accumulators (fragment names) of wgmma gemms to lay on one warpgroup: 64 rows the
    block's warpgroups would split into parts narrower than SPLIT_MIN_COLUMNS, the product
    fitting wgmma on one warpgroup, its fragment copied into a shared buffer that is the A of
    another gemm whose accumulator they split by columns (and nothing else reads that copy's
    shared buffer but gemms)."""
    stmts = list(statements(stmts))
    gemms = [g for g in stmts if isinstance(g, ir.Gemm)]
    out = set()
    for g in gemms:
        c = buffers[g.c]
        groups = wgmma_column_groups(tuple(c.shape), threads)
        if c.scope != "fragment" or len(c.shape) != 2 or groups < 2 or c.shape[1] // groups >= SPLIT_MIN_COLUMNS:
            continue
        if not wgmma_gemm(g, buffers, WARPGROUP):
            continue
        handed = {s.dst.name for s in stmts if isinstance(s, ir.Copy) and isinstance(s.src, ir.BufferRef)
                  and isinstance(s.dst, ir.BufferRef) and s.src.name == g.c and buffers[s.dst.name].scope == "shared"}
        users = [h for h in gemms if h.a in handed and h.c != g.c]
        if users and all(wgmma_column_groups(tuple(buffers[h.c].shape), threads) > 1
                         and buffers[h.c].shape[1] // groups >= SPLIT_MIN_COLUMNS for h in users):
            out.add(g.c)
    return out


def statement_threads(s, kernel, buffers: dict) -> int:
    """The leading block threads that run statement `s` (the code generator guards it to them):
    where it computes on fragments of one warpgroup alone, their holders; else the block's.  A
    parallel loop runs in its layout's threads (one that exchanges such fragments in its own,
    their holders writing the exchange apart: `exchange_writers`)."""
    from .layout import parallel_layout
    threads = kernel.threads
    if isinstance(s, ir.Parallel):
        return owner_threads(parallel_layout(s, kernel), threads)
    if not isinstance(s, (ir.Fill, ir.Gemm, ir.Reduce, ir.Copy)):
        return threads
    names = {s.buffer} if isinstance(s, ir.Fill) else {s.a, s.b, s.c} if isinstance(s, ir.Gemm) else \
        {s.src, s.dst} if isinstance(s, ir.Reduce) else {s.src.name, s.dst.name}
    frags = [buffers[n] for n in names if n in buffers and buffers[n].scope == "fragment"]
    return min((owner_threads(b.layout, threads) for b in frags), default=threads)


def exchange_writers(p: ir.Parallel, buffers: dict, threads: int) -> int:
    """The leading block threads that write a parallel loop's exchanged fragments into scratch."""
    return max((owner_threads(buffers[n].layout, threads) for n, _ in p.exchange), default=threads)
