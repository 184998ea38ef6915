"""A persistent warp-specialized ring's tiles, the decisions (schedule/warpspec.py's planner asks
them): the order its blocks walk them in (`order`: ir.TileOrder, in groups of rows, a causal
attention's in pairs from both ends of x or, with warpspec.DYNAMIC_TILES, from a counter longest
first), whether every tile runs the loop as many times (`walks_in_pairs`), the consumers' copies
before the ring that the producer makes once a tile instead (`tile_loads`: attention's Q tile)
and where, in the tile's last iteration, their buffers are free (`tile_done`).  The switches
that ask for them stay warpspec.py's (GRID_TILE_LOADS, DYNAMIC_TILES, TILE_GROUP), read where
the planner calls these."""

from __future__ import annotations

from .. import ir
from ..ir.warpspec import TensorMapSpec, TileOrder
from .gemm_overlap import buffers_read


def order(group: int, cluster: int, paired: bool, dynamic: bool) -> TileOrder:
    """A persistent kernel's walk of its tiles, `group` rows of tiles at a time, in clusters of
    `cluster` blocks; where the tiles' loop lengths grow with x (`paired`, walks_in_pairs), in
    pairs of tiles from both ends of x (TileOrder.pairs), or with `dynamic` taken from a counter
    in device memory, longest first (TileOrder.dynamic)."""
    return TileOrder(group, cluster, pairs=paired and not dynamic, dynamic=paired and dynamic)


def walks_in_pairs(kernel: ir.Kernel, i: int) -> bool | None:
    """Whether a persistent walk of the tiles of `kernel`'s loop `i` takes them in pairs (True:
    the loop's length reads the block's x besides, a causal mask's, growing with it) or in a fixed
    order (False: every tile runs the loop as many times, its length reading only sizes, scalar
    parameters and the kernel's scalars set from them, a constant's `x if CAUSAL else y` read as
    its branch); None where the lengths vary otherwise (a block mask's would leave some blocks
    the longest tiles)."""
    from .im2col_tma import kernel_scalars, written_in
    body = kernel.body
    defs, inner = kernel_scalars(body[:i]), written_in(body[i].body)
    fixed = {*kernel.shape_symbols(), *(p.name for p in kernel.params if p.kind == "scalar")}

    def free(e, depth=0) -> set:  # the names it reads that are not the same in every tile
        out = set()
        for n in _live_names(e) - fixed:
            out |= free(defs[n], depth + 1) if n in defs and n not in inner and depth < 16 else {n}
        return out
    varying = free(body[i].stop) | free(body[i].start)
    if varying and varying != {kernel.block_vars[0]}:
        return None
    return bool(varying)


def tile_loads(kernel: ir.Kernel, consumer_only: tuple, i: int, tma_load) -> tuple[tuple, bool] | None:
    """The consumers' copies before the ring (attention's Q tile; `consumer_only`: the positions
    in `kernel`'s body of what the consumers run alone before loop `i`) as loads the producer
    makes through the TMA once a tile of a persistent kernel (WarpSpecialization.tile_loads),
    where every statement the consumers run alone there is such a copy or a print (or assert),
    and the tiles' lengths allow a persistent walk (walks_in_pairs): each load with the tensor
    map it reads, and whether the walk takes the tiles in pairs.  `tma_load(j, copy)`: the
    planner's load of the copy at body[j], where the TMA can make it (else None).  None
    otherwise."""
    body = kernel.body
    params, buffers = {p.name: p for p in kernel.params}, {b.name: b for b in kernel.buffers}
    copies = [j for j in consumer_only if not isinstance(body[j], ir.Print)]
    if not copies:
        return None
    paired = walks_in_pairs(kernel, i)
    if paired is None:
        return None
    found = []
    for j in copies:
        c = body[j]
        x = tma_load(j, c) if isinstance(c, ir.Copy) and c.src.name in params \
            and buffers[c.dst.name].scope == "shared" else None
        if x is None or x.flat or x.row_axis is not None:
            return None
        p, b = params[c.src.name], buffers[x.buffer]
        found.append((x, TensorMapSpec(p.name, p.dtype, tuple(p.shape), x.rows, 128 // b.dtype.itemsize)))
    return tuple(found), paired


def tile_done(tile_loads, body: list, start: int, stop: int, deferred, after) -> int | None:
    """The deferred gemm's first gemm (attention's S = Q @ K.T), where it alone of the loop
    and nothing after the loop reads the tile loads' buffers: in the last iteration they are
    free once it is done (WarpSpecialization.tile_done).  None otherwise."""
    names = {x.buffer for x in tile_loads}
    readers = [j for j in range(start, stop) if names & buffers_read(body[j])]
    if readers != [deferred.after] or any(names & buffers_read(s) for s in after):
        return None
    return deferred.after


def _live_names(e) -> set:
    """The scalars expression `e` reads, a select on a constant (`x if CAUSAL else y` with CAUSAL
    bound) read as the branch it takes."""
    from ..ir.walk import _lists_of, _operands_of
    if isinstance(e, ir.Select) and isinstance(e.cond, ir.Const):
        return _live_names(e.a if e.cond.value else e.b)
    if isinstance(e, ir.Var):
        return {e.name}
    if isinstance(e, ir.Load):
        return {" load"}  # an element of a tensor or buffer: no name is fixed
    out = set()
    for f in _operands_of(e.__class__):
        v = getattr(e, f, None)
        if isinstance(v, ir.Expr):
            out |= _live_names(v)
    for f in _lists_of(e.__class__):
        for v in getattr(e, f, ()) or ():
            if isinstance(v, ir.Expr):
                out |= _live_names(v)
    return out
