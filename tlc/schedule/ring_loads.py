"""The loads of a warp-specialized ring, the decisions (schedule/warpspec.py's planner asks them):
which of a pipelined loop's leading copies the producer makes, and how: through the TMA, a tile
of 128-byte swizzled column segments (`tma_load`) or one unswizzled box of a run (`flat_load`),
in its im2col mode (`im2col_load`: an implicit GEMM's image tile), or by the producer's threads
as a row gather (`gather_load`); and the tensor map each TMA load reads (`with_map`).  Each a
function of the kernel and the copy; the planner registers the maps."""

from __future__ import annotations

from dataclasses import replace

from .. import ir
from ..dtypes import I32
from ..ir.walk import loads, statement_exprs, variables
from ..ir.warpspec import Im2colWindow, StageLoad, TensorMapSpec, ViewDims
from . import dequant_ring


def tma_load(kernel: ir.Kernel, index: int, c: ir.Copy, dequant: bool = False) -> StageLoad | None:
    """A copy the TMA can make: a whole tile of 128-byte column segments (the swizzled
    layout) from a tensor of rank 2 to 5, its leading extents 1; or a 1-D buffer's run of the
    tensor's last dimension (flat_load); with `dequant` (a dequantizing ring's plan:
    dequant_ring.planned), an unswizzled buffer's one box (dequant_ring.box_load)."""
    buffers, params = {b.name: b for b in kernel.buffers}, {p.name: p for p in kernel.params}
    p, b = params[c.src.name], buffers[c.dst.name]
    if len(b.shape) == 1:
        return flat_load(kernel, index, c)
    if dequant and b.layout.swizzle_bytes != 128:  # (one unswizzled box)
        return dequant_ring.box_load(index, c, p, b, stage_elements(b))
    if not 2 <= len(p.shape) <= 5 or b.layout.swizzle_bytes != 128 or len(b.shape) != 2:
        return None
    extents = list(c.src.extents)
    rows, cols = b.shape
    axis = None
    if any(e != 1 for e in extents[:-2]) or tuple(extents[-2:]) != tuple(b.shape):
        # the rows along another dimension, the rest 1 (w[f0:f0 + BN, kh, kw, c0:c0 + BK])
        tall = [d for d, e in enumerate(extents[:-1]) if e != 1]
        if extents[-1] != cols or len(tall) != 1 or extents[tall[0]] != rows:
            return None
        axis = tall[0]
    if (cols * b.dtype.itemsize) % 128 or rows > 256:
        return None
    return StageLoad(index, b.name, rows, cols, stage_elements(b), -1, row_axis=axis)


def flat_load(kernel: ir.Kernel, index: int, c: ir.Copy) -> StageLoad | None:
    """A copy of a run of `n` elements along a tensor's last dimension (every other extent
    1) into a 1-D shared buffer of `n`: one unswizzled TMA box (attention's log-sum-exp and
    dO . O columns of a step, which each consumer thread would otherwise load itself, its
    bounds checked element by element, before every step's first product).  The TMA wants
    16-byte rows of at most 256 elements; the stage starts 128-byte aligned (smem.ALIGN)."""
    buffers, params = {b.name: b for b in kernel.buffers}, {p.name: p for p in kernel.params}
    p, b = params[c.src.name], buffers[c.dst.name]
    n = b.shape[0]
    extents = list(c.src.extents)
    if not 2 <= len(p.shape) <= 5 or any(e != 1 for e in extents[:-1]) or extents[-1] != n:
        return None
    if (n * b.dtype.itemsize) % 16 or n > 256 or b.layout.pad or b.layout.swizzle_bytes:
        return None
    return StageLoad(index, b.name, 1, n, stage_elements(b), -1, flat=True)


def im2col_load(kernel: ir.Kernel, loop: ir.For, index: int, p: ir.Parallel) -> StageLoad | None:
    """A loop that fills a tile the TMA's im2col mode can load (schedule/im2col_tma.py:
    `im2col`'s, or a row gather of that form): into a 2-D 128-byte swizzled tile of the
    image's dtype, of whole 128-byte column segments (a box each) and at most 256 pixels,
    the image a 4-D tensor parameter; its coordinates read no shared buffer, its window's
    sizes only shape symbols.  Whether im2col's flattened columns lie in one kernel
    position is the host's to check (C a multiple of them).  `loop`: the ring's, in the
    kernel's body."""
    from . import im2col_tma
    from .gather_rows import row_gather
    buffers, params = {b.name: b for b in kernel.buffers}, {p.name: p for p in kernel.params}
    if p.stores or p.exchange:
        return None
    t = p.im2col
    if t is None:
        g = row_gather(p, params, buffers)
        if g is None:
            return None
        i = kernel.body.index(loop)
        defs = im2col_tma.kernel_scalars(kernel.body[:i])
        defs = {n: v for n, v in defs.items() if n not in im2col_tma.written_in(loop.body)}
        t = im2col_tma.gathered_tile(g, params, loop.var, set(kernel.shape_symbols()),
                                     set(kernel.block_vars), defs)
        if t is not None:
            t = replace(t, out=tuple(im2col_tma._subst(e, defs) for e in t.out))
    if t is None or t.img not in params:
        return None
    img, b = params[t.img], buffers.get(_stored(p))
    if img.kind != "tensor" or len(img.shape) != 4 or b is None or b.scope != "shared" or len(b.shape) != 2 \
            or b.dtype != img.dtype or b.layout.swizzle_bytes != 128 or tuple(b.shape) != tuple(p.extents):
        return None
    rows, cols = b.shape
    if (cols * b.dtype.itemsize) % 128 or rows > 256 or rows % 8:
        return None
    symbols = set(kernel.shape_symbols())
    if any(v.name not in symbols for e in t.out for v in variables(e)):
        return None
    if any(x.name in buffers for e in (*t.coords, *t.offsets) for x in loads(e)):
        return None
    return StageLoad(index, b.name, rows, cols, stage_elements(b), -1, im2col=t)


def gather_load(kernel: ir.Kernel, index: int, p: ir.Parallel) -> StageLoad | None:
    """A row gather the producer's threads can make (gather_rows.row_gather): into a 2-D
    128-byte swizzled tile (wgmma's operand), reading the tensor and scalars only, not a
    shared buffer (the consumers' before the loop are not the producer's), in the simple
    form (a vector's first element decides).  The general form (im2col's lowering, a column
    mask) keeps the cp.async ring: its element-by-element vectors held in registers over
    the producer's 8 rounds spilled (std.conv's conv2d FLAT, sm_90a: 534 bytes at 128
    registers, 264 at 168)."""
    from .gather_rows import row_gather
    buffers, params = {b.name: b for b in kernel.buffers}, {p.name: p for p in kernel.params}
    g = row_gather(p, params, buffers)
    if g is None or not g.simple:
        return None
    b = buffers[g.dst]
    if b.layout.swizzle_bytes != 128 or len(b.shape) != 2:
        return None
    if any(x.name in buffers for e in (*(v for s in g.lets for v in statement_exprs(s)), *g.indices,
                                             *((g.cond,) if g.cond is not None else ())) for x in loads(e)):
        return None
    rows, cols = b.shape
    return StageLoad(index, b.name, rows, cols, stage_elements(b), -1, gather=True)


def with_map(kernel: ir.Kernel, loop: ir.For, load: StageLoad, cluster: int,
             multicast: bool) -> tuple[StageLoad, TensorMapSpec]:
    """`load` with whether the cluster of `cluster` blocks multicasts it (`multicast`, the
    planner's: a tile both blocks copy), and the tensor map it reads, one per tensor and box
    (the planner registers it; `tensor_map` -1 until then): an im2col load's per image and
    window, or, where the window is the image's own rows (im2col_tma.TILED_IDENTITY), a tiled
    box of the image seen as [N * H * W, C].  `loop`: the ring's, in the kernel's body."""
    buffers, params = {b.name: b for b in kernel.buffers}, {p.name: p for p in kernel.params}
    c = loop.body[load.index]
    if load.im2col:  # one map per image and window: its pixels and one 128-byte column segment
        t, b = load.im2col, buffers[load.buffer]
        p = params[t.img]
        from . import im2col_tma
        if im2col_tma.TILED_IDENTITY and identity(kernel, loop, t, p):  # the image's rows: a view [N * H * W, C]
            n, h, w, c = p.shape
            dims = (ir.BinOp("*", ir.BinOp("*", _dim(n), _dim(h), I32), _dim(w), I32), _dim(c))
            names = tuple(dict.fromkeys(v.name for e in dims for v in variables(e)))
            spec = TensorMapSpec(p.name, p.dtype, tuple(p.shape), load.rows, 128 // b.dtype.itemsize,
                                 view=ViewDims(dims, names))
            return replace(load, tiled=True), spec
        names = tuple(dict.fromkeys(v.name for e in t.out for v in variables(e)))
        spec = TensorMapSpec(p.name, p.dtype, tuple(p.shape), load.rows, 128 // b.dtype.itemsize,
                             im2col=Im2colWindow(t.lower, t.stride, t.out, names, t.columns))
        return load, spec
    p, b = params[c.src.name], buffers[load.buffer]
    rows = load.rows // cluster if multicast else load.rows
    if load.flat:
        spec = TensorMapSpec(p.name, p.dtype, tuple(p.shape), load.rows, load.cols, swizzle=False)
    else:
        spec = TensorMapSpec(p.name, p.dtype, tuple(p.shape), rows, 128 // b.dtype.itemsize, row_axis=load.row_axis)
    return replace(load, multicast=multicast), spec


def identity(kernel: ir.Kernel, loop: ir.For, t, p) -> bool:
    """Whether im2col tile `t` of image `p` is its own rows (im2col_tma.identity_window)."""
    from .im2col_tma import identity_window, kernel_scalars, written_in
    i = kernel.body.index(loop)
    defs = {n: v for n, v in kernel_scalars(kernel.body[:i]).items() if n not in written_in(loop.body)}
    if not all(isinstance(d, (str, int)) for d in p.shape):  # an extent computed from others (a
        return False  # convolution's output as conv2d_bwd_weight's image): not its own W and H
    return identity_window(t, tuple(_dim(d) for d in p.shape), loop, defs)


def stage_elements(b: ir.Buffer) -> int:
    """Elements from one stage of a staged shared buffer to the next (padding included)."""
    return b.layout.bytes // b.layout.stages // b.dtype.itemsize


def _stored(p: ir.Parallel) -> str | None:
    """The buffer a parallel loop's last statement stores to."""
    last = p.body[-1] if p.body else None
    return last.name if isinstance(last, ir.Store) else None


def _dim(d) -> ir.Expr:
    """A parameter's dimension (a shape symbol's name or a size) as an i32 Expr."""
    return ir.Var(d, I32) if isinstance(d, str) else ir.Const(int(d), I32)
