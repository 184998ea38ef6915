"""The scheduling rules of tile ops: tile sizes, threads and vector widths from the shapes (when
the caller knows them), the dtypes and the target.  docs/tile-ops.md states the same rules; a
change here changes that page.

Shapes may be unknown (`tlc build` without `--shape`): a rule then assumes the size in
`DEFAULT_SIZE`.  Known sizes are rounded up to a power of two first, so that the plans (and
compiled kernels) of nearby shapes are the same one.
"""
from __future__ import annotations

from dataclasses import dataclass

from ...dtypes import DType

VECTOR_BYTES = 16  # one 16-byte access per thread and run
DEFAULT_SIZE = 1024  # the size assumed for a shape symbol whose value is not known
ROW_TILE_ELEMS = 2048  # a row kernel's tile holds at least this many elements...
ROW_TILE_MAX = 8192  # ...and at most this many along the reduced axis
ROW_ELEMS_PER_THREAD = 16  # elements of each tile-shaped fragment a thread holds (registers)
COL_TILE_MAX = 256  # columns per block of a column reduction (axis 0)
EW_RUNS_PER_THREAD = 2  # 16-byte runs each thread handles in an element-wise kernel


def pow2_at_least(n: int) -> int:
    p = 1
    while p < n:
        p *= 2
    return p


def bucket(size: int | None) -> int:
    """A dimension's size as the rules see it."""
    return pow2_at_least(max(1, size)) if size is not None else DEFAULT_SIZE


def size_of(dim, sizes: dict) -> int:
    """A dimension (int or shape symbol) as the rules see it, given known symbol sizes."""
    return bucket(dim if isinstance(dim, int) else sizes.get(dim))


def vector(dtypes) -> int:
    """Elements per run: 16 bytes of the widest dtype, so every tensor of the kernel moves in
    runs of 8 or 16 bytes."""
    return max(1, VECTOR_BYTES // max(d.itemsize for d in dtypes))


@dataclass(frozen=True)
class ElementwiseTiles:
    shape: tuple  # the block's tile: (BLOCK,) or (BM, BN)
    threads: int


def elementwise_tiles(rank: int, dims, sizes: dict, dtypes) -> ElementwiseTiles:
    """A flat (1-D) kernel: 256 threads, `EW_RUNS_PER_THREAD` runs of `vector` elements each.
    A 2-D one (broadcasting): as many columns as the tensor has, up to 256, and rows to make
    the same number of elements."""
    vec = vector(dtypes)
    threads = 256
    block = threads * vec * EW_RUNS_PER_THREAD
    if rank == 1:
        return ElementwiseTiles((block,), threads)
    bn = min(max(size_of(dims[-1], sizes), vec), 256)
    bm = max(1, min(block // bn, size_of(dims[0], sizes)))
    return ElementwiseTiles((bm, bn), threads if bm * bn >= threads * vec else 128)


@dataclass(frozen=True)
class RowTiles:
    kept: int  # rows (axis 1) or columns (axis 0) per block
    reduced: int  # elements of the reduced axis per tile; a longer axis is walked tile by tile
    threads: int


def row_tiles(axis: int, space, sizes: dict) -> RowTiles:
    """Rows of a row reduction (axis 1, or a 1-D tensor): the whole row in one tile when it has
    at most `ROW_TILE_MAX` elements (then every pass after the first reads registers, not
    memory), and enough rows per block for `ROW_TILE_ELEMS` elements.  Columns (axis 0): up to
    `COL_TILE_MAX` columns per block, walking the rows in tiles.  Threads: one per
    `ROW_ELEMS_PER_THREAD` elements of the tile, 128 to 1024."""
    if axis == len(space) - 1:
        n = size_of(space[-1], sizes)
        m = size_of(space[0], sizes) if len(space) == 2 else 1
        red = max(32, min(n, ROW_TILE_MAX))
        kept = max(1, min(ROW_TILE_ELEMS // red, m))
    else:
        kept = max(32, min(size_of(space[1], sizes), COL_TILE_MAX))
        red = max(1, min(ROW_TILE_ELEMS // kept, size_of(space[0], sizes)))
    return RowTiles(kept, red, min(1024, max(128, kept * red // ROW_ELEMS_PER_THREAD)))


TENSOR_CORE_DTYPES = ("f16", "bf16", "f8e4m3", "f8e5m2", "i8", "u8")


@dataclass(frozen=True)
class MatmulTiles:
    BM: int
    BN: int
    BK: int
    stages: int
    THREADS: int
    source: str  # where the values come from, for the plan


def matmul_tiles(defaults: dict, source: str, dtype: DType, smem_limit: int) -> MatmulTiles:
    """std.gemm's configuration for the same transposes (its tuned one, or its defaults), with
    fewer stages and then a shorter K step while the operands' ring would not fit the target's
    shared memory (f32 operands are twice as large as the f16 ones std.gemm is sized for)."""
    bm, bn, bk, stages, threads = (int(defaults[k]) for k in ("BM", "BN", "BK", "stages", "THREADS"))
    if dtype.name not in TENSOR_CORE_DTYPES:
        # The exact FFMA loop keeps the accumulator in registers only when it is small: 16 a thread.
        bm, bn, bk, threads, source = 64, 64, 32, 256, f"{source}; 64 x 64 for {dtype} (no tensor cores)"
    while stages * (bm * bk + bk * bn) * dtype.itemsize > smem_limit:
        if stages > 2:
            stages -= 1
        elif bk > 16:
            bk //= 2
        else:
            bn //= 2
    return MatmulTiles(bm, bn, bk, stages, threads, source)
