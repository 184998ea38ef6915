"""A copy from global memory to global memory (`copy(dQ_accum[b, h, rows, :], dQ[b, h, rows, :])`,
TileLang's postprocess kernels): the block's threads copy the region element by element
(tlc/schedule/copy_parts.py), so the region must say how large the tile is."""
from __future__ import annotations

from ..parser import nodes as n


def check_sized(checker, src, dst, call) -> bool:
    """Whether one side of a global-to-global copy is a region with slices, which gives the
    tile's extents; E265 if neither is (two whole tensors, or two origins `A[r, c]`)."""
    if any(isinstance(x, n.Subscript) and any(isinstance(i, n.Slice) for i in x.indices) for x in (src, dst)):
        return True
    checker.error("E265", "a copy from global to global memory takes the tile's size from a region with slices, "
                  "and neither side has one", call.span,
                  "each block copies its region: copy(A[bx * BM:(bx + 1) * BM, :], B[bx * BM:(bx + 1) * BM, :])")
    return False
