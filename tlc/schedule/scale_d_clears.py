"""Which clears of a warp-specialized ring's consumer body its wgmma gemms make (the last pass:
`Fill.scale_d`, shown in the tile IR as `(by its gemm's scale-d 0 ...)` on each such fill, with
a note).

A `clear_accum` gemm is a `fill c = 0.0` and a gemm accumulating into `c`.  On sm_90a the clear
can be instructions zeroing the registers ahead of the wgmma, or the gemm's first K step with
scale-d 0 (tl::gemm_wgmma_issue's CLEAR): 1 reads the registers the last gemm left ("+f"), 2
only writes them (MMA::zero, "=f"), so that nvcc keeps none of their old values alive up to it.
The code generator (codegen/sm90.py consumer_block) renders what this pass chose; it decides
nothing.  Only the consumer statements of a ring with no deferred gemm are chosen for (the
statements codegen issues without waiting), each fill directly followed (syncs aside) by the
wgmma gemm of its fragment, f32 zeros:

- where the body starts with the last iteration's carried gemms in flight (gemm_overlap.py
  carried_gemms: attention's backward), every such clear is the gemm's (CLEAR 1): an instruction
  writing a wgmma's accumulator while one is in flight would serialize them (ptxas's C7515);
- of the others, with shared operands, those RING_SCALE_D_CLEARS takes (CLEAR 2): "reused" those
  whose fragment the body clears more than once (one partial-sum fragment for two gemms: std.gemm's
  block-scaled f8 at BN = 256, two 128-column halves, where ptxas kept the zeros in registers of
  their own and spilled 328 bytes a thread; with the rule none, and one FFMA a register scales and
  adds the partial sums), and those of products issued back to back, clear, gemm, clear, gemm
  (std.attention flash_bwd's Q . K^T and dO . V^T, both loops, as the H200 timed its block mask in
  session 28: 6.101 ms = 0.891x cuDNN where std's 6.392 took 0.850x, bench/results/
  q_B_bwd_block_mask-h200-twentyeighth.txt; cleared by instructions, the second while the first
  product ran, ptxas made the block-masked dK/dV step wait for the scores, C7517; no other std
  kernel has such a pair); "all": every one (std's block-scaled kernels at BN <= 128 too: their
  SASS is the same but where ptxas folded no clear, 64 IMAD.MOV a K step before the wgmma go; not
  yet timed on the GPU, so not the default); "none";
- of those, where the body writes the fragment by nothing but its gemms and those clears (a
  partial sum each iteration scales and adds into values of its own: dead_stores.py), the clear
  reads the registers the last gemm left (RING_SCALE_D_TIED, CLEAR 1: one asm operand list for
  all the gemms): ptxas then keeps one 64-register window for the products of both of BN = 256's
  halves; with "=f" it placed them in two and spilled the accumulators moving between (204 bytes a
  thread as the runtime builds std's kernel, 284 the grouped one's; no spills, the same 8 QGMMA +
  128 FFMA a K step, with the tie).  No default kernel has such a body; False: CLEAR 2 as before.

And before the ring: the one clear of the first carried gemm's accumulator (FIRST_ITERATION), where
nothing between it and that gemm in the ring's first iteration reads or writes the accumulator
and the gemm accumulates, is that gemm's first iteration's scale-d 0 (codegen keeps its other
iterations' by `tl_k > 0`, and clears after a ring that ran no iteration): an instruction writing
those registers, reaching the loop where the gemm is in flight, would serialize the wgmmas (C7515).
"""
from __future__ import annotations

from collections import Counter
from dataclasses import replace

from .. import ir
from ..ir.walk import statements, written_names
from .gemm_overlap import buffers_read, buffers_written, ring_carried_gemms, wgmma_any, wgmma_ready

RING_SCALE_D_CLEARS = "reused"
RING_SCALE_D_TIED = True

# Fill.scale_d's values: what the next gemm's first K step does with the accumulator's registers;
# FIRST_ITERATION: a clear before the ring that the carried gemm's first iteration makes
READS, WRITES, FIRST_ITERATION = 1, 2, 3


def choose_scale_d_clears(kernel: ir.Kernel) -> ir.Kernel:
    """`kernel` with the clears of the module's docstring marked `Fill.scale_d`."""
    spec = kernel.warp_spec
    if spec is None or spec.deferred is not None:
        return kernel
    start, stop = spec.consumer
    loop = kernel.body[spec.loop]
    buffers = {b.name: b for b in kernel.buffers}
    carried = ring_carried_gemms(kernel)
    chosen = consumer_clears(list(loop.body[start:stop]), buffers, kernel.threads, bool(carried))
    folded = clear_before_ring(kernel, carried[0], buffers) if carried else None
    if not chosen and folded is None:
        return kernel
    body = tuple(replace(s, scale_d=chosen[i - start]) if i - start in chosen else s for i, s in enumerate(loop.body))
    top = tuple(replace(loop, body=body) if i == spec.loop else replace(s, scale_d=FIRST_ITERATION) if i == folded
                else s for i, s in enumerate(kernel.body))
    names = [f"{loop.body[start + i].buffer} ({'reading the registers the last gemm left' if v == READS else 'only writing them'})"
             for i, v in sorted(chosen.items())]
    if folded is not None:
        names.append(f"{kernel.body[folded].buffer} (before the ring: by its first iteration)")
    note = f"clears made by their gemms' first K step, scale-d 0, not by instructions ahead of the wgmma: {', '.join(names)}"
    return replace(kernel, body=top, notes=kernel.notes + (note,))


def clear_before_ring(kernel: ir.Kernel, g: ir.Gemm, buffers: dict) -> int | None:
    """The index in the kernel's body of the one clear of `g`'s accumulator before the ring's
    loop that g's first iteration can make (FIRST_ITERATION): nothing after it before the gemm
    reads or writes the accumulator, and the gemm accumulates (no clear of its own); None."""
    spec = kernel.warp_spec
    start, stop = spec.consumer
    before = list(kernel.body[:spec.loop])
    body = list(kernel.body[spec.loop].body[start:stop])
    upto = body[:next(i for i, s in enumerate(body) if s is g)]
    fills = [i for i, s in enumerate(before) if _clears_for(s, g, buffers, kernel.threads)]
    if len(fills) != 1:
        return None
    if any(g.c in (buffers_read(s) | buffers_written(s)) for s in before[fills[0] + 1:] + upto):
        return None
    return fills[0]


def consumer_clears(stmts: list, buffers: dict, threads: int, carried: bool) -> dict[int, int]:
    """{index in `stmts` of a fill: its Fill.scale_d} for the consumer statements `stmts` (the
    module's docstring); `carried`: the body starts with gemms in flight."""
    order = [i for i, s in enumerate(stmts) if not isinstance(s, ir.Sync)]  # (a sync there is a comment)
    # (fill index, its gemm) for each fill of a wgmma gemm's f32 accumulator to 0 right before it
    pairs = [(i, stmts[j]) for i, j in zip(order, order[1:]) if _clears_for(stmts[i], stmts[j], buffers, threads)]
    if carried:
        return {i: READS for i, _ in pairs}
    fills = Counter(s.buffer for s in stmts if isinstance(s, ir.Fill))
    # products issued back to back, clear, gemm, clear, gemm (of any fill's value: the products' issue)
    issued = {n for n, (i, j) in enumerate(zip(order, order[1:])) if isinstance(stmts[i], ir.Fill)
              and isinstance(stmts[j], ir.Gemm) and stmts[j].c == stmts[i].buffer and wgmma_ready(stmts[j], buffers, threads)}
    back_to_back = {order[n] for n in issued if n - 2 in issued or n + 2 in issued}
    zeroed = [i for i, g in pairs if wgmma_ready(g, buffers, threads) and (
        RING_SCALE_D_CLEARS == "all" or RING_SCALE_D_CLEARS == "reused" and (fills[stmts[i].buffer] > 1 or i in back_to_back))]
    # the fragments the body writes otherwise: by stores, copies, reductions, scans, other fills
    others = written_names(stmts) | {x.dst for x in statements(stmts) if isinstance(x, (ir.Reduce, ir.Scan))} \
        | {x.buffer for x in statements(stmts) if isinstance(x, ir.Fill) and not any(x is stmts[i] for i in zeroed)}
    return {i: READS if RING_SCALE_D_TIED and stmts[i].buffer not in others else WRITES for i in zeroed}


def _clears_for(f: ir.Stmt, g: ir.Stmt, buffers: dict, threads: int) -> bool:
    """Whether `f` clears to 0 the f32 accumulator of `g`, a wgmma gemm (registers or shared A)."""
    return (isinstance(f, ir.Fill) and isinstance(g, ir.Gemm) and g.c == f.buffer and isinstance(f.value, ir.Const)
            and f.value.value == 0 and buffers[g.c].dtype.name == "f32" and wgmma_any(g, buffers, threads))
