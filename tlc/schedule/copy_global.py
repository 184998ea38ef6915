"""A copy from global memory to global memory (`copy(dQ[b, h, rows, :], dQ_out[b, h, rows, :])`,
TileLang's postprocess kernels).  No copy primitive moves a tile between two tensors; TileLang
lowers it to a loop over the region by the block's threads, and so does tlc, in one of two
ways:

- staged through a fragment of the tile's shape (`copy(src, tile)`, `copy(tile, dst)`): the
  two copies are those between global memory and registers that every kernel has, so the
  tile takes vector runs (16 bytes of the narrower dtype) wherever the rows are contiguous
  and aligned, elements outside either tensor are neither read nor written, and the store
  converts to the destination's dtype.  The fragment is named in `--emit ir`;
- element by element (`copy_parts.as_loop`, a `parallel` loop) where no run is contiguous
  (a side whose last dimension a single index drops: a column) or where the staged tile
  would hold more than MAX_PER_THREAD values in each thread's registers.
"""
from __future__ import annotations

from .. import ir
from . import copy_parts

MAX_PER_THREAD = 64  # values of the staged tile in each thread's registers (a 64 x 128 tile at 128 threads)


def is_global_to_global(copy: ir.Copy, buffers: dict) -> bool:
    return copy.src.name not in buffers and copy.dst.name not in buffers


def as_copies(copy: ir.Copy, buffers: dict, dtypes: dict, threads: int, fresh_buffer, fresh_indices) -> list:
    """`copy` between two tensors as statements of the tile IR; `buffers` gains the staged tile
    (named by `fresh_buffer(stem)`), `dtypes` gives each tensor's dtype."""
    tile = tuple(e for e in copy.src.extents if e != 1) or (1,)
    values = 1
    for e in tile:
        values *= e
    if copy.src.extents[-1] == 1 or copy.dst.extents[-1] == 1 or len(tile) > 2 or values > MAX_PER_THREAD * threads:
        return [copy_parts.as_loop(copy, buffers, dtypes, fresh_indices)]
    name = fresh_buffer(f"{copy.src.name}_tile")
    buffers[name] = ir.Buffer(name, "fragment", dtypes[copy.src.name], tile, span=copy.span)
    staged = ir.BufferRef(name, span=copy.span)
    return [ir.Copy(copy.src, staged, span=copy.span), ir.Copy(staged, copy.dst, span=copy.span)]
