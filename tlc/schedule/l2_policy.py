"""Gathered tiles kept in the L2 (a pass after batch_loads, before the warp specialization, shown
in the tile IR as `(L2 evict_last)` on each such copy, with a note).

A copy from a tensor into a fragment whose region's offsets read a value the kernel loaded from
a tensor (an index, directly or through the scalars computed from it) is a gather: which rows it
reads is data, and other blocks may choose the same ones.  std.moe's moe_permute copies
x[sorted_ids[p] // topk, c0]: each token's row once for each of the topk experts it is routed
to, the copies of one row far apart in the sorted order, while every block streams its own row
of y out.  On the H200 ((4096, 4096) f16 x, 36800 rows of y: 32 MiB read eight times, 288 MiB
written) it ran at 0.63 of copy bandwidth, where x alone would stay in the 50 MB L2: y's
writes evicted x's rows between their reads.  Such a copy's loads take an L2 evict_last
policy (`ld.global.nc.L2::cache_hint` with `createpolicy.fractional.L2::evict_last`,
tl::copy_g2f's KEEP): the L2 evicts the gathered lines after the others.  The policy is a
priority, not a pin: lines nobody reads again still go when the L2 needs the room.

Only copies into fragments (the code generator's tl::copy_g2f, not a batch's g2f_load) are
marked: the other copy paths render no policy, and the IR shows only what the CUDA text does.
On (KEEP_GATHERED_ROWS) since session 28: on the H200 (bench/results/q_G_ops_weak_rows-h200-
twentyeighth.txt, outputs checked first) moe_permute took 124.2 -> 119.9 us (0.63 -> 0.65 of
copy) and embedding 126.7 -> 124.2 us (0.99 -> 1.01); index_select and moe_unpermute, marked
too, passed their GPU tests but were not timed (bench/queue/V_ops_flips.sh times them).
bench/moe_probe.py asks the same of hand-written copies (plain, y's stores evict-first, x's
loads evict_last, both): whether y's stores evict-first would add to it.
"""
from __future__ import annotations

from dataclasses import replace

from .. import ir
from ..ir.walk import kernel_rewritten, statements, subexprs

# the decision, on since the H200 timed it (session 28, above); False: no copy is marked
KEEP_GATHERED_ROWS = True


def keep_gathered_rows(kernel: ir.Kernel) -> ir.Kernel:
    """`kernel` with its gathers' copies (fragment destinations) marked keep_l2."""
    if not KEEP_GATHERED_ROWS:
        return kernel
    tensors = {p.name for p in kernel.params if p.kind == "tensor"}
    fragments = {b.name for b in kernel.buffers if b.scope == "fragment"}
    indexed = _indexed_scalars(kernel.body, tensors)
    marked: list[str] = []

    def mark(s: ir.Stmt):
        if (isinstance(s, ir.Copy) and not s.keep_l2 and not s.batch and isinstance(s.src, ir.Region)
                and s.src.name in tensors and s.dst.name in fragments
                and any(_reads_index(o, tensors, indexed) for o in s.src.offsets)):
            marked.append(f"{s.src.name} -> {s.dst.name}")
            return replace(s, keep_l2=True)
        return None

    return kernel_rewritten(kernel, mark, lambda: f"L2 evict_last on the gathered tiles ({', '.join(marked)}): their "
                            "rows are chosen by an index, so other blocks may read them again")


def _reads_index(e: ir.Expr, tensors: set[str], indexed: set[str]) -> bool:
    """Whether `e` reads an element of a tensor or a scalar computed from one."""
    return any((isinstance(x, ir.Load) and x.name in tensors) or (isinstance(x, ir.Var) and x.name in indexed)
               for x in subexprs(e))


def _indexed_scalars(body, tensors: set[str]) -> set[str]:
    """The scalars whose value reads an element of a tensor, directly or through other such
    scalars (assigned anywhere in `body`: a fixed point over its assignments)."""
    defs = [(s.name, s.value) for s in statements(body) if isinstance(s, (ir.LetScalar, ir.Assign))]
    indexed: set[str] = set()
    changed = True
    while changed:
        changed = False
        for name, value in defs:
            if name not in indexed and _reads_index(value, tensors, indexed):
                indexed.add(name)
                changed = True
    return indexed

