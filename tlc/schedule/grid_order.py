"""The order in which a grid's blocks are launched along x (a schedule decision, recorded as
`Kernel.heavy_first` and shown by `--emit ir` on the grid's line).

The hardware dispatches a grid's blocks in the order of their index, x first.  Where each
block's loop runs more iterations the larger its x (a causal attention's query blocks: block x
of a head runs x + 1 key blocks at S = SK), the longest blocks of the grid's last heads are
dispatched last, and the SMs that finish their short ones wait idle behind them.  Launched with
x reversed (the block's x is gridDim.x - 1 - blockIdx.x), the longest start first and the short
ones fill in behind them: longest processing time first, as FlashAttention 3 orders a causal
grid's tiles.  Which block computes which tile is unchanged, so is every value.

Only for a grid of one tile a block (a persistent kernel's walk is its own order, TileOrder) and
where no block waits on another (an atomic's order of turns follows the blocks' indices)."""
from __future__ import annotations

from dataclasses import replace

from .. import ir
from ..ir.walk import statements
from .im2col_tma import kernel_scalars, written_in


def order_heavy_first(kernel: ir.Kernel) -> ir.Kernel:
    """`kernel` launched with x reversed where a top-level loop's length grows with x."""
    if not kernel.block_vars or kernel.launch_fill or kernel.persistent_walk or kernel.heavy_first:
        return kernel
    ws = kernel.warp_spec
    if ws is not None and ws.tile_order is not None:
        return kernel
    if any(isinstance(s, ir.Atomic) for s in statements(kernel.body)):
        return kernel
    x = kernel.block_vars[0]
    for i, s in enumerate(kernel.body):
        if not isinstance(s, ir.For):
            continue
        defs = {n: v for n, v in kernel_scalars(kernel.body[:i]).items() if n not in written_in(s.body)}
        if growth(s.start, x, defs) == 0 and growth(s.stop, x, defs) == 1:
            return replace(kernel, heavy_first=True)
    return kernel


def growth(e: ir.Expr, x: str, defs: dict, depth: int = 0) -> int | None:
    """How integer expression `e` moves as block index `x` grows: 0 (it does not read x), 1 (it
    never falls and reads x), -1 (it never rises and reads x), None (not known).  A scalar in
    `defs` (the kernel's scalars set before the loop) reads as its value."""
    if isinstance(e, ir.Const):
        return 0
    if isinstance(e, ir.Var):
        if e.name == x:
            return 1
        return growth(defs[e.name], x, defs, depth + 1) if e.name in defs and depth < 16 else 0
    if isinstance(e, ir.Select):
        if isinstance(e.cond, ir.Const):  # a constant's `a if CAUSAL else b`: the branch it takes
            return growth(e.a if e.cond.value else e.b, x, defs, depth)
        if growth(e.cond, x, defs, depth) != 0:
            return None
        return _both(growth(e.a, x, defs, depth), growth(e.b, x, defs, depth))
    if isinstance(e, ir.BinOp):
        a, b = growth(e.a, x, defs, depth), growth(e.b, x, defs, depth)
        if e.op in ("+", "min", "max"):
            return _both(a, b)
        if e.op == "-":
            return _both(a, None if b is None else -b)
        if e.op == "*" and isinstance(e.b, ir.Const) and a is not None:
            return a * _sign(e.b.value)
        if e.op == "*" and isinstance(e.a, ir.Const) and b is not None:
            return b * _sign(e.a.value)
        if e.op == "//" and isinstance(e.b, ir.Const) and e.b.value > 0:
            return a
        return 0 if a == b == 0 else None
    if isinstance(e, ir.Load):
        return 0 if all(growth(i, x, defs, depth) == 0 for i in e.indices) else None
    return None


def _both(a: int | None, b: int | None) -> int | None:
    """The growth of a sum (or min, max) of terms growing as `a` and `b`."""
    if a is None or b is None or a * b < 0:
        return None
    return a or b


def _sign(v) -> int:
    return (v > 0) - (v < 0)
