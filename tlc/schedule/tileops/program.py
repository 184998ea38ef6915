"""A scheduled tile op: ordinary kernels plus the program of launches that runs them.

`TileOpProgram` is plain data the API executes: the temporaries to allocate (shapes over the
tile op's shape symbols), then each `Launch` in order with its kernel's parameters taken by
name from the tile op's arguments, the temporaries and the result.  The interpreter and the
code generator see only the `ir.Kernel`s.  `describe()` is the fusion plan as text
(`tlc build --emit ir`).
"""
from __future__ import annotations

from dataclasses import replace

from ... import ir, targets
from ...frozen import frozen
from ...ir.walk import statements
from ...dtypes import DType
from ..layout import Blocked, Replicated, blocked
from ..column_blocks import defer_column_combine
from ..fast_math import use_fast_math
from ..layout_infer import infer_layouts
from ..scan_registers import place_fragment_scans
from ..layout_flow import column_reduced, column_split
from ..barriers import insert_barriers
from ..batch_loads import batch_loads
from ..last_stage import keep_last_stages
from ..lower import without_unread as lower_without_unread
from ..registers import check_thread_storage
from ..smem import plan_shared_memory
from ..scale_d_clears import choose_scale_d_clears
from ..warpspec import specialize_warps
from ..unswitch import unswitch_loops


@frozen
class Tensor:
    """A tensor the program allocates: the result or a temporary (dims: int or shape symbol)."""

    name: str
    dtype: DType
    shape: tuple


@frozen
class Launch:
    """One kernel launch; with `flat`, every tensor it takes is passed as a 1-D view."""

    kernel: ir.Kernel
    flat: bool = False
    kind: str = ""
    computes: str = ""  # the source text of what it computes
    fused: tuple = ()  # the heavy operations it holds
    tiles: str = ""  # the scheduling choices, as text


@frozen
class TileOpProgram:
    name: str
    params: tuple  # the tile op's arrays and scalars, in declaration order
    result: Tensor
    temps: tuple  # Tensor, ...
    launches: tuple  # Launch, ...
    boundaries: tuple  # fusion.Boundary, ...
    fuse: bool = False

    @property
    def kernels(self) -> tuple:
        return tuple(x.kernel for x in self.launches)

    def describe(self) -> str:
        n = len(self.launches)
        lines = [f"# tile op {self.name}{' (@fuse)' if self.fuse else ''}: {n} kernel{'s' * (n != 1)}"]
        for x in self.launches:
            dest = next(p.name for p in x.kernel.params if p.name in _written(x.kernel))
            lines.append(f"#   {x.kernel.name} ({x.kind}): {x.computes} -> {dest}")
            if x.fused:
                lines.append(f"#     fused: {', '.join(x.fused)}")
            lines.append(f"#     tiles: {x.tiles}{', flat 1-D views' if x.flat else ''}")
        for t in self.temps:
            lines.append(f"#   temporary {t.name}: {t.dtype}[{', '.join(map(str, t.shape))}] in global memory")
        for b in self.boundaries:
            where = f" (line {b.span.line})" if b.span is not None else ""
            lines.append(f"#   boundary at '{b.op}'{where}: {b.reason}")
        if not self.boundaries:
            lines.append("#   no intermediate goes through global memory")
        return "\n".join(lines)


def _written(kernel: ir.Kernel) -> set:
    from ...ir.walk import written_names

    return written_names(kernel.body)


def without_unread(kernel: ir.Kernel) -> ir.Kernel:
    """`kernel` without the buffers and scalars nothing reads (lower.py's `without_unread`, which
    the kernels of `@kernel` functions go through): a tile op's inlined device function keeps its
    parameters and locals as scalars even where its body never reads them."""
    body, buffers = lower_without_unread(tuple(kernel.body), tuple(kernel.buffers))
    return replace(kernel, body=body, buffers=buffers) if body != tuple(kernel.body) else kernel


def finish(kernel: ir.Kernel, target: str, smem_limit: int, sources: dict, batch: bool = False) -> ir.Kernel:
    """The scheduling passes of every kernel, with one addition between layouts and shared
    memory: the tile-shaped fragments of an element-wise or row kernel share one layout.  The
    fast forms where the values end at 16-bit precision (fast_math.py) as a kernel's; with
    `batch` (element-wise kernels), the load batches of the operands' copies (batch_loads.py):
    a column kernel's two tiles an iteration, batched, spilled 12 bytes in bf16 (sm_90a)."""
    ir.verify(kernel)
    kernel = without_unread(kernel)  # an inlined function's unused parameter or local: nvcc's 177 / 550
    kernel = defer_column_combine(kernel)  # a column kernel's threads combine once, after its loop
    kernel = place_fragment_scans(infer_layouts(kernel, target, sources, adjust=_one_tile_layout))
    kernel = check_thread_storage(kernel, sources)
    kernel = plan_shared_memory(kernel, smem_limit, sources)
    kernel = use_fast_math(keep_last_stages(insert_barriers(kernel)))
    kernel = batch_loads(kernel) if batch else kernel
    kernel = choose_scale_d_clears(specialize_warps(unswitch_loops(kernel), targets.get(target)))
    ir.verify(kernel)
    return kernel


def _one_tile_layout(kernel: ir.Kernel) -> ir.Kernel:
    """Fragments of one tile shape but different dtypes each get vector runs of their own width
    by default, and a parallel loop can only run in one layout: give them all runs of 16 bytes
    of the widest dtype copied to or from memory (8 or 16 bytes of the others), and the
    statistics replicated over them that layout as their base.  A gemm accumulator's layout is
    left alone.  Tiles reduced along dim 0 (a column kernel) split their columns over the threads
    instead (layout_flow.column_split), so that each thread sums its own columns."""
    frags = [b for b in kernel.buffers if b.scope == "fragment" and isinstance(b.layout, Blocked)]
    if not frags:
        return kernel
    tile = max((b.shape for b in frags), key=len)
    copied = {x.name for s in statements(kernel.body) if isinstance(s, ir.Copy) for x in (s.src, s.dst)}
    same = [b for b in frags if b.shape == tile and b.name in copied] or [b for b in frags if b.shape == tile]
    widest = max((b.dtype for b in same), key=lambda d: d.itemsize)
    frag_of = {b.name: b for b in kernel.buffers if b.scope == "fragment"}
    columns = column_reduced(list(statements(kernel.body)), frag_of)  # a column reduction's tiles
    split = any(b.name in columns for b in same)
    layout = (column_split if split else blocked)(tile, widest, kernel.threads)
    out = []
    for b in kernel.buffers:
        if b.scope == "fragment" and b.shape == tile and isinstance(b.layout, Blocked):
            b = replace(b, layout=layout)
        elif b.scope == "fragment" and isinstance(b.layout, Replicated) and b.layout.base.shape == tile \
                and isinstance(b.layout.base, Blocked):
            b = replace(b, layout=Replicated(layout, b.layout.dropped))
        out.append(b)
    return replace(kernel, buffers=tuple(out))
