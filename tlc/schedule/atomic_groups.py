"""A warp's atomic adds at one shared address added once (a pass after keep_gathered_rows, shown
in the tile IR as `(grouped by address in a warp)` on the atomic, with a note).

An `atomic_add` of a constant into a shared buffer of integers, at an index a `parallel` loop
reads from data (a histogram: std.moe's expert_histogram counts `hist[part[q]] += 1`), makes
the lanes of one instruction that name one bin wait for each other: the hardware serializes
them.  A router's ids are skewed (bench/ops.py's row: the largest of 64 experts takes 17% of
2^26 ids, six lanes of a warp's 32 on its bin on average), and the histogram ran at 0.76 of
copy bandwidth on the H200.  Grouped, the lanes at one address elect their lowest
(`__match_any_sync` of the address), which adds the constant times their count
(tl::atomic_add_grouped, templates/tl/reduce.cuh): one lane an address.  Integers only, whose
sums are exact in any grouping; a constant value, the same in every lane.  Off
(GROUP_ATOMICS): on the H200 (session 28, bench/results/q_G_ops_weak_rows-h200-twentyeighth.txt)
expert_histogram with it and host_asserts.WHOLE_RUNS_WITH_ASSERTS together took 377.3 us
against 165.9 (0.44x).  The likely cause is this pass: at the defaults nvcc already renders the
constant add as ATOMS.POPC.INC.32, the hardware's increment by the lanes at one address, which
grouping replaces by VOTE.ANY + MATCH.ANY + FLO + POPC + ATOMS.ADD (sm_90a, nvcc 13.0).
bench/queue/G_histogram_atomics.sh times each switch alone; remove the pass if it loses there.
"""
from __future__ import annotations

from dataclasses import replace

from .. import ir
from ..ir.walk import kernel_rewritten, loads, statements

# off: lost 0.44x with WHOLE_RUNS_WITH_ASSERTS on the H200 (above); timed alone next
GROUP_ATOMICS = False


def group_atomics(kernel: ir.Kernel) -> ir.Kernel:
    """`kernel` with its data-indexed constant adds into shared integer buffers grouped."""
    if not GROUP_ATOMICS:
        return kernel
    shared = {b.name for b in kernel.buffers if b.scope == "shared" and b.dtype.is_int and b.dtype.bits == 32}
    inside = {id(s) for p in statements(kernel.body) if isinstance(p, ir.Parallel) for s in statements(p.body)}
    marked: list[str] = []

    def group(s: ir.Stmt):
        if (isinstance(s, ir.Atomic) and s.kind == "add" and not s.grouped and id(s) in inside
                and s.name in shared and isinstance(s.value, ir.Const)
                and any(True for i in s.indices for _ in loads(i))):
            marked.append(s.name)
            return replace(s, grouped=True)
        return None

    return kernel_rewritten(kernel, group, lambda: f"atomic adds grouped by address in a warp ({', '.join(sorted(set(marked)))}): "
                            "the lanes at one address add once, the value times their count")
