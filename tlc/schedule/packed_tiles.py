"""Packed low-bit weight tiles (#18): a pipelined loop's copies of words whose bit fields the loop
unpacks, marked `Copy.packed` (shown as `(packed words)` in the tile IR).  A pass after
`group_atomics`, before the launch bounds' choice.

A tile is packed when a copy of the loop fills it from a tensor, its dtype is an integer one, and
the loop shifts a value read from it to the right (directly, or through the scalars computed from
it): std.gemm's w4a16 kernels' weight tile Wq (u32 words, eight int4 weights each, `w >> 4 *
...`).  A zero-point tile read whole (`T(Zs[i, g])`), w8a16's i8 weights (`T(Wq[i, j])`) and an
i8 GEMM's operands are not.

What reads the mark, behind a switch off since the H200 timed it slower: codegen/copies.py's
ROUND_STEPS issues these copies in stepped rounds (tl::copy_g2s_rounds: a weight vector ~22 -> ~5
SASS instructions, tests/codegen/test_copies_rounds.py).  On every tile, ROUND_STEPS added
spills where ptxas sat at a register boundary (scripts/options-flip, nvcc 13.0: sm_80
matmul_epilogue 424 -> 432 bytes at 255 registers, matmul_w4a16 at config.json's rule 2 0 -> 40
with its four tiles stepped, 0 with the weights alone; sm_90a cummax_axis0 0 -> 16): the decode
kernels' weight stream is what it was meant for."""
from __future__ import annotations

from dataclasses import replace

from .. import ir
from ..ir.walk import statement_exprs, statements, stmts_mapped, subexprs


def packed_tiles(kernel: ir.Kernel, loop: ir.For) -> set[str]:
    """The shared tiles of pipelined `loop` that hold packed words (module docstring)."""
    buffers = {b.name: b for b in kernel.buffers}
    tensors = {p.name for p in kernel.params if p.kind == "tensor"}
    staged = {s.dst.name for s in loop.body
              if isinstance(s, ir.Copy) and isinstance(s.dst, ir.BufferRef) and s.src.name in tensors
              and buffers[s.dst.name].scope == "shared" and buffers[s.dst.name].dtype.kind in ("int", "uint")}
    inner = list(statements(loop.body))
    out = set()
    for tile in staged:
        read = {tile}  # the tile and the scalars computed from its words
        grew = True
        while grew:
            grew = False
            for s in inner:
                if isinstance(s, (ir.Assign, ir.LetScalar)) and s.name not in read and _reads(s.value, read):
                    read.add(s.name)
                    grew = True
        if any(isinstance(x, ir.BinOp) and x.op == ">>" and _reads(x.a, read)
               for s in inner for e in statement_exprs(s) for x in subexprs(e)):
            out.add(tile)
    return out


def _reads(e: ir.Expr, names: set) -> bool:
    return any(isinstance(x, (ir.Load, ir.Var)) and x.name in names for x in subexprs(e))


def mark_packed_copies(kernel: ir.Kernel) -> ir.Kernel:
    """`kernel` with its pipelined loops' copies into packed tiles marked `packed`."""
    loops = [s for s in statements(kernel.body) if isinstance(s, ir.For) and s.kind == "pipelined"]
    packed = set().union(*(packed_tiles(kernel, loop) for loop in loops)) if loops else set()
    if not packed:
        return kernel

    def mark(s):
        if isinstance(s, ir.Copy) and isinstance(s.dst, ir.BufferRef) and s.dst.name in packed:
            return replace(s, packed=True)
        return s
    return replace(kernel, body=stmts_mapped(kernel.body, lambda e: e, mark))
