"""A copy from global memory to global memory (`copy(dQ[b, h, rows, :], dQ_out[b, h, rows, :])`,
TileLang's postprocess kernels).  No copy primitive moves a tile between two tensors; TileLang
lowers it to a loop over the region by the block's threads, and so does tlc, in one of two
ways:

- staged through a fragment of the tile's shape (`copy(src, tile)`, `copy(tile, dst)`): the
  two copies are those between global memory and registers that every kernel has, so the
  tile takes vector runs (16 bytes of the narrower dtype) wherever the rows are contiguous
  and aligned, elements outside either tensor are neither read nor written, and the store
  converts to the destination's dtype.  The fragment is named in `--emit ir`;
  A tile of more than MAX_PER_THREAD values a thread is staged in bands of rows, one after
  another in a serial loop, so that the registers it takes stay bounded, and a tile of rank 3
  or more one 2-D tile after another;
- element by element (`copy_parts.as_loop`, a `parallel` loop) where no run is contiguous
  (a side whose last dimension a single index drops: a column), or where one row alone is
  more than MAX_PER_THREAD values a thread.
"""
from __future__ import annotations

from .. import ir
from ..dtypes import I32
from . import copy_parts

MAX_PER_THREAD = 64  # values of the staged tile in each thread's registers (a 64 x 128 tile at 128 threads)


def is_global_to_global(copy: ir.Copy, buffers: dict) -> bool:
    return copy.src.name not in buffers and copy.dst.name not in buffers


def as_copies(copy: ir.Copy, buffers: dict, dtypes: dict, threads: int, fresh_buffer, fresh_indices) -> list:
    """`copy` between two tensors as statements of the tile IR; `buffers` gains the staged tile
    (named by `fresh_buffer(stem)`), `dtypes` gives each tensor's dtype."""
    tile = tuple(e for e in copy.src.extents if e != 1) or (1,)
    if copy.src.extents[-1] == 1 or copy.dst.extents[-1] == 1:
        return [copy_parts.as_loop(copy, buffers, dtypes, fresh_indices)]
    if len(tile) > 2:  # rank 3 or more: its 2-D tiles one after another (the CUDA targets' fragments are 2-D)
        var = fresh_buffer(f"{copy.src.name}_slab")
        inner = ir.Copy(_band(copy.src, ir.Var(var, I32), 1), _band(copy.dst, ir.Var(var, I32), 1), span=copy.span)
        body = tuple(as_copies(inner, buffers, dtypes, threads, fresh_buffer, fresh_indices))
        return [ir.For(var, ir.Const(0, I32), ir.Const(tile[0], I32), ir.Const(1, I32), "serial", 1, body,
                       span=copy.span)]
    per_row = tile[1] if len(tile) == 2 else 1
    band = max((b for b in range(1, tile[0] + 1) if tile[0] % b == 0 and b * per_row <= MAX_PER_THREAD * threads),
               default=None)
    if band is None:
        return [copy_parts.as_loop(copy, buffers, dtypes, fresh_indices)]
    name = fresh_buffer(f"{copy.src.name}_tile")
    buffers[name] = ir.Buffer(name, "fragment", dtypes[copy.src.name], (band,) + tile[1:], span=copy.span)
    staged = ir.BufferRef(name, span=copy.span)
    if band == tile[0]:
        return [ir.Copy(copy.src, staged, span=copy.span), ir.Copy(staged, copy.dst, span=copy.span)]
    # a tile too large for the registers at once: bands of `band` rows, one after another
    var = fresh_buffer(f"{name}_band")
    src, dst = (_band(side, ir.Var(var, I32), band) for side in (copy.src, copy.dst))
    body = (ir.Copy(src, staged, span=copy.span), ir.Copy(staged, dst, span=copy.span))
    return [ir.For(var, ir.Const(0, I32), ir.Const(tile[0] // band, I32), ir.Const(1, I32), "serial", 1, body,
                   span=copy.span)]


def _band(side: ir.Region, var: ir.Var, band: int) -> ir.Region:
    """The band `var` of `band` rows of a region: its first dimension of more than one element."""
    axis = next(i for i, e in enumerate(side.extents) if e != 1)
    offsets = list(side.offsets)
    step = var if band == 1 else ir.BinOp("*", var, ir.Const(band, I32), I32)
    offsets[axis] = ir.BinOp("+", offsets[axis], step, I32)
    extents = tuple(band if i == axis else e for i, e in enumerate(side.extents))
    return ir.Region(side.name, tuple(offsets), extents, span=side.span)
