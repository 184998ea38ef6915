"""Split-K, the decision (#18): a persistent warp-specialized GEMM whose output has few tiles
for the GPU (fewer than half a wave of `WAVE` SMs) and whose K loop is long takes K in parts,
each part of a tile a unit of the persistent walk, so that every SM has work.

The kernel is rewritten in the tile IR, so that every executor runs it as scheduled:

    grid (bx, by) in (GX, GY)      ->  grid (bx, by, kpart) in (GX, GY, PARTS)
    for k in pipelined(0, n):      ->  kparts = PARTS
        ...k...                        kchunk = max(1, cdiv(n, kparts))
                                       for k in pipelined(0, kchunk):
                                           ...kpart * kchunk + k...

(the last part's steps past n read zeros, as a ragged K's last step does past K; with gathered
loads the last part's loop stops at n instead).  The split must leave the ring's loads as they
were (each through the TMA's im2col mode or not, multicast or not): else the kernel is not split.

where PARTS is an expression of the sizes that the launch and the kernel compute alike (the
rule, `parts_expr`): with T = GX * GY tiles, parts = min(SPLIT_MAX, WAVE // T, n // MIN_STEPS)
rounded so that no part is empty, and 1 (no split) from T > WAVE / 2 on or for a short K.  The
warp specialization records it (`ir.SplitK`): a part other than the last stores its f32
accumulator into a slot of partial tiles and counts itself done on the tile's counter; the last
part waits for the count, adds the slots in the order of the parts (the same bits every run)
and runs the kernel's epilogue on the sum.  The walk takes the parts of K as its slowest
dimension, so that the parts a tile's last part waits for come before it in every block's
order: with every block resident (a persistent launch) no wait can hang.

Applies to a grid of two dimensions (one of a kernel's several grids too: std.conv's
conv2d_bwd_weight with SPLIT = 1, whose second grid is then empty) whose top-level pipelined loop the warp
specialization makes a persistent ring, whose loop length every tile shares (sizes and
scalars set from them), whose consumers only accumulate into one f32 fragment cleared before
the loop, and whose loads the TMA makes: tiles, and row gathers its im2col mode loads (an
implicit GEMM's, std.conv's conv2d_bwd_weight), not im2col()'s tile nor cp.async gathers."""
from __future__ import annotations

from dataclasses import replace

from .. import ir
from ..dtypes import I32
from ..ir.walk import mapped, statements, stmts_mapped, variables

WAVE = 132  # SMs of an H100 / H200 (sm_90a): parts x tiles stay within one wave of them
SPLIT_MAX = 16  # parts of K at most
# the f32 partial tiles a tile's last part reads at most (one SM's loads through L2, after its
# K loop): 8 parts of a 128 x 256 tile, 16 of a 128 x 128 or smaller one
FIXUP_BYTES = 1 << 20
MIN_STEPS = 4  # K steps a part at least


def max_parts(rows: int, cols: int) -> int:
    """The most parts a tile of rows x cols f32 is split into: SPLIT_MAX, fewer where the last
    part would read more than FIXUP_BYTES of the others' partial tiles."""
    return max(2, min(SPLIT_MAX, 1 + FIXUP_BYTES // (4 * rows * cols)))


def _i(v: int) -> ir.Expr:
    return ir.Const(v, I32)


def _op(op: str, a: ir.Expr, b: ir.Expr) -> ir.Expr:
    return ir.BinOp(op, a, b, I32)


def _cdiv(a: ir.Expr, b: ir.Expr) -> ir.Expr:
    return _op("+", _op("//", _op("-", a, _i(1)), b), _i(1))


def parts_expr(tiles: ir.Expr, steps: ir.Expr, most: int = SPLIT_MAX, wave: int = WAVE) -> ir.Expr:
    """How many parts a tile's `steps` K steps are split into, for `tiles` output tiles: as
    many as one wave of `wave` blocks holds (WAVE SMs a block each: WAVE // tiles; a dequantizing
    ring's, dequant_ring.split, counts the blocks an SM holds too), at most `most` (max_parts) and
    at most one per MIN_STEPS steps, then as few as leave the same chunk cdiv(steps, parts) to
    each part (none empty); at least 1."""
    want = _op("max", _i(1), _op("min", _i(most), _op("min", _op("//", _i(wave), _op("max", tiles, _i(1))),
                                                               _op("//", steps, _i(MIN_STEPS)))))
    chunk = _op("max", _i(1), _cdiv(steps, want))
    return _op("max", _i(1), _cdiv(steps, chunk))


def parts_value(tiles: int, steps: int, most: int = SPLIT_MAX, wave: int = WAVE) -> int:
    """parts_expr in Python (tests, benchmarks)."""
    want = max(1, min(most, wave // max(tiles, 1), steps // MIN_STEPS))
    chunk = max(1, -(-steps // want))
    return max(1, -(-steps // chunk))


def _fresh(kernel: ir.Kernel, stem: str) -> str:
    taken = {p.name for p in kernel.params} | {b.name for b in kernel.buffers} | set(kernel.block_vars) | \
        {s.name for s in statements(kernel.body) if isinstance(s, (ir.LetScalar, ir.Assign))} | \
        {v.name for s in statements(kernel.body) for e in _exprs(s) for v in variables(e)}
    name, i = stem, 1
    while name in taken:
        name, i = f"{stem}_{i}", i + 1
    return name


def _exprs(s):
    from ..ir.walk import statement_exprs
    return statement_exprs(s)


def fixed_names(kernel: ir.Kernel, i: int) -> tuple[set, dict]:
    """The names every tile reads alike before loop `i` of the body (sizes, scalar parameters,
    the kernel's scalars set once from them alone: std.conv's CB = cdiv(C, BK)), and those
    scalars by their values in sizes."""
    from .im2col_tma import kernel_scalars, written_in
    fixed = {*kernel.shape_symbols(), *(p.name for p in kernel.params if p.kind == "scalar")}
    inner = written_in(kernel.body[i].body)
    defs = {n: v for n, v in kernel_scalars(kernel.body[:i]).items()
            if n not in inner and all(x.name in fixed for x in variables(v))}
    return fixed | set(defs), defs


def candidate(kernel: ir.Kernel, ws, dequant: bool = False) -> str | None:
    """The accumulator of a kernel split-K may take (module docstring), or None.  `ws` the warp
    specialization planned for it; `dequant`: a dequantizing ring's (dequant_ring.split), whose
    scale and zero-point tiles are unswizzled boxes (flat: past K they read zeros as any box) and
    whose consumers compute the gemm's operand too (parallel loops that write only fragments of
    the iteration: none read after the loop)."""
    fixed, _ = fixed_names(kernel, ws.loop)
    if ws is None or ws.tile_order is None or ws.tile_order.pairs or ws.tile_loads or ws.consumer_only:
        return None
    if len(kernel.grid) != 2 or kernel.persistent_walk:
        return None
    if any(x.gather or (x.flat and not dequant) for x in ws.loads) or ws.deferred is not None or ws.reduces:
        return None
    loop = kernel.body[ws.loop]
    if any(isinstance(s, ir.Parallel) and s.im2col is not None for s in loop.body):
        return None  # im2col()'s tile holds the step in fields of its own
    if not all(v.name in fixed for v in variables(loop.stop)):
        return None
    start, stop = ws.consumer
    rest = loop.body[start:stop]
    gemms = [s for s in statements(rest) if isinstance(s, ir.Gemm)]
    if not gemms or len({g.c for g in gemms}) != 1:
        return None
    acc = gemms[0].c
    if any(not isinstance(s, (ir.Gemm, ir.Sync)) and not (dequant and _operand_only(kernel, s, acc, ws.loop))
           for s in rest):
        return None
    return acc if cleared_accumulator(kernel, acc, ws.loop) else None


def _operand_only(kernel: ir.Kernel, s, acc: str, i: int) -> bool:
    """Whether consumer statement `s` is a parallel loop that writes only fragments other than
    `acc` that no statement after loop `i` reads (a dequantized operand, computed anew each
    iteration: the split's parts need nothing of it from another part)."""
    from ..ir.walk import loads, named_buffers, statement_exprs, written_names
    if not isinstance(s, ir.Parallel):
        return False
    written = written_names([s])
    buffers = {b.name: b for b in kernel.buffers}
    if acc in written or any(n not in buffers or buffers[n].scope != "fragment" for n in written):
        return False
    later = list(statements(kernel.body[i + 1:]))
    after = {x.name for t in later for e in statement_exprs(t) for x in loads(e)} | \
        {n for t in later for n in named_buffers(t)}
    return not written & after


def cleared_accumulator(kernel: ir.Kernel, acc: str, i: int) -> bool:
    """Whether `acc` is an f32 fragment of two dimensions whose registers go as whole float4s a
    thread (the slots' form), cleared to 0 once before body statement `i`, the loop, and stored
    to by nothing else before it (a split-K candidate's accumulator)."""
    b = kernel.buffer(acc)
    if b is None or b.scope != "fragment" or b.dtype.name != "f32" or len(b.shape) != 2:
        return False
    if (b.shape[0] * b.shape[1]) % (4 * kernel.threads):
        return False  # each thread's registers go as whole float4s
    fills = [s for s in kernel.body[:i] if isinstance(s, ir.Fill) and s.buffer == acc]
    if len(fills) != 1 or not (isinstance(fills[0].value, ir.Const) and fills[0].value.value == 0):
        return False
    return not any(acc in _written(s) for s in kernel.body[:i] if s is not fills[0])


def _acc_of(kernel: ir.Kernel, ws) -> str:
    start, stop = ws.consumer
    return next(s for s in statements(kernel.body[ws.loop].body[start:stop]) if isinstance(s, ir.Gemm)).c


def _written(s) -> set:
    from ..ir.walk import written_names
    return written_names([s])


def rewrite(kernel: ir.Kernel, ws, stream: bool = False, wave: int = WAVE) -> tuple[ir.Kernel, str, ir.Expr]:
    """`kernel` split (module docstring): the grid's third dimension counts the parts, the
    loop walks this part's chunk of K.  Returns the kernel, the part's block variable and
    the parts' expression (the grid's third extent).  With `stream` (stream-K, schedule/
    stream_k.py) the grid's z is stream_k.units_expr's instead: a wave's worth where the launch
    streams rather than split (its `prefer_expr`, returned fourth).  `wave`: parts_expr's."""
    from .im2col_tma import _subst
    i = ws.loop
    _, defs = fixed_names(kernel, i)
    loop = kernel.body[i]
    part = _fresh(kernel, "kpart")
    grown = replace(kernel, block_vars=kernel.block_vars + (part,))
    nparts = _fresh(grown, "kparts")
    nchunk = _fresh(replace(grown, block_vars=grown.block_vars + (nparts,)), "kchunk")
    steps = _subst(loop.stop, defs)  # in sizes alone: the launch computes it too
    tiles = _op("*", kernel.grid[0], kernel.grid[1])
    acc = kernel.buffer(_acc_of(kernel, ws))
    most = max_parts(*acc.shape)
    parts = parts_expr(tiles, steps, most, wave)
    prefer = None
    if stream:
        from .stream_k import units_expr
        parts, prefer = units_expr(tiles, steps, parts)
    chunk = ir.Var(nchunk, I32)
    lets = (ir.LetScalar(nparts, I32, parts, span=loop.span),
            ir.LetScalar(nchunk, I32, _op("max", _i(1), _cdiv(loop.stop, ir.Var(nparts, I32))), span=loop.span))
    base = _op("*", ir.Var(part, I32), chunk)

    def shift(e):
        return mapped(e, lambda x: _op("+", base, x) if isinstance(x, ir.Var) and x.name == loop.var else x)
    body = stmts_mapped(loop.body, shift)
    # where every load is a tile every part takes chunk steps: the last one's past K read zeros
    # (the TMA's boxes past the tensor's edge, the element copies' bounds), so that every unit
    # of the walk runs the loop as long (the blocks of a cluster wait on each other's stages)
    # and no part runs longer; a gathered tile's steps past K need not read zeros (std.conv's
    # kernel position past K with a pixel inside the image): the last part stops at K
    exact = any(x.im2col for x in ws.loads)
    stop = _op("min", chunk, _op("-", loop.stop, base)) if exact else chunk
    new_loop = replace(loop, stop=stop, body=body)
    out = replace(kernel, grid=kernel.grid + (parts,), block_vars=kernel.block_vars + (part,),
                  body=kernel.body[:i] + lets + (new_loop,) + kernel.body[i + 1:])
    return (out, part, parts) if not stream else (out, part, parts, prefer)
