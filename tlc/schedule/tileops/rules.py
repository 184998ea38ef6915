"""The scheduling rules of tile ops: tile sizes, threads and vector widths from the shapes (when
the caller knows them), the dtypes and the target.  docs/tile-ops.md states the same rules; a
change here changes that page.

Shapes may be unknown (`tlc build` without `--shape`): a rule then assumes the size in
`DEFAULT_SIZE`.  Known sizes are rounded up to a power of two first, so that the plans (and
compiled kernels) of nearby shapes are the same one.
"""
from __future__ import annotations

from ...dtypes import DType
from ...frozen import frozen
from ..sm_limits import blocks_fitting

VECTOR_BYTES = 16  # one 16-byte access per thread and run
# an element-wise kernel's thread moves at least this many elements of each tensor: at one run of
# 4 f32 a thread the H200 took 0.986x torch for convert f32 -> f16 and f32 -> bf16 at (16384, 8192)
# (bench/queue/H_r3_ew_b.sh's round, 4338 against 4399 GB/s), at two 0.999x (this morning's table)
EW_MIN_ELEMS = 8
DEFAULT_SIZE = 1024  # the size assumed for a shape symbol whose value is not known
ROW_TILE_MAX = 8192  # a row kernel's tile holds at most this many elements along the reduced axis
COL_TILE_MAX = 256  # columns per block of a column reduction (axis 0)
COL_TILE_MIN = 32  # and at least this many (a 128-byte line of f32; schedule/column_blocks.py's width)
# fewer columns per block while that leaves fewer blocks than about one per SM of an H200: 8192
# f16 columns take 64 a block, a block's rows whole 128-byte lines, 128 blocks of 512 threads
# (the H200, sum_axis0 / norm_inf_axis0 of (16384, 8192) f16: 66.7 / 67.0 us = 0.94 of copy,
# against 72.9 / 73.7 us at 264, which made it 32 columns, 64 bytes of each row, 256 blocks of
# 256 threads; bench/results/reduce_axis0-h200-twentieth.txt, each output checked first)
COL_BLOCKS_MIN = 128
COL_ELEMS_PER_THREAD = 16  # a column kernel's thread: its tile elements, and as many in its partial sums
# tiles a column kernel's loop copies an iteration, as one load batch (COL_BATCH: every load issued
# before the first is waited for), halved while its fragments' registers exceed COL_REGISTERS_MAX
COL_TILES_PER_STEP = 4
COL_REGISTERS_MAX = 100
# where they exceed it, tiles of half the rows twice as many a step first, while a thread's runs in
# flight stay at most this many (8 runs of 16 bytes: four [128, 64] f16 tiles at 512 threads)
COL_RUNS_IN_FLIGHT = 8
COL_BATCH = True
# an element-wise kernel reading a tensor transposed: its block tile's side and threads (the plain
# transpose's 64 x 64 at 256 threads, bench/plain/transpose.tl: 0.94 of copy on the H200, where x.T
# read element by element down x's columns in tiles of [4, 256] ran at 0.37)
TRANSPOSE_TILE = 64
TRANSPOSE_THREADS = 256


@frozen
class Rules:
    """The tunable numbers of the scheduling rules.  The defaults are the rules docs/tile-ops.md
    states; bench/fusion.py sweeps others (`TileOp.with_rules(...)`) so that one GPU run shows
    which is fastest."""

    ew_threads: int = 128  # threads of an element-wise kernel (128 and 256 time alike on the H200)
    # 16-byte runs each of its threads moves per tensor: one, 8 halves, as PyTorch's
    # vectorized_elementwise_kernel.  A block of twice the bytes lives twice as long, and the
    # grid's last blocks leave the SMs draining longer: the H200 (f16 abs at (16384, 8192), one
    # process, bench/queue/H_ew_raw.sh) took 125.8 us at one run, 126.6 at two, 130.3 at four
    # (a hand-written copy 125.7 / 126.4-126.8 / 130.3; torch 125.9); and two runs of a short-math
    # f16 kernel took 25-36 registers (reciprocal, threshold 12 blocks an SM), one 12-23 (16).
    # An earlier H200 run, when the copies took their bounds per element, measured a 6-op chain
    # at 0.82x copy with two runs and 0.77x with one
    ew_runs: int = 1
    row_elems_per_thread: int = 32  # elements of a row tile a thread holds (registers); 32: an 8192-column softmax 1.57x faster than 16 on the H200
    row_block_elems: int = 2048  # a row kernel's block holds at least this many elements (more rows)
    row_keep_exp: bool = True  # a one-tile softmax keeps exp(x - max) in registers for the result
    col_block_elems: int = 8192  # a column kernel's tile (16 elements a thread at 512 threads)
    col_elems_per_thread: int = COL_ELEMS_PER_THREAD  # of that tile (its partials take as many registers again)
    col_registers_max: int = COL_REGISTERS_MAX  # a column kernel's tiles a step halve while its fragments take more
    col_tiles_per_step: int = COL_TILES_PER_STEP  # a column kernel's tiles an iteration, one load batch
    # a column log-sum-exp's running sums rescaled once a step to the step's maximum (one exponential
    # an element and one a place a step, tileops/one_pass.py) rather than lazily, an element at a time
    col_step_max: bool = True
    # blocks per SM a row or element-wise kernel asks ptxas to fit (__launch_bounds__), i.e. rows or
    # runs in flight; 0: a row kernel's from `row_blocks_per_sm` (softmax 8192 f16: 4), an
    # element-wise kernel's from codegen/occupancy.py's estimate
    min_blocks: int = 0
    # an element-wise kernel of 16-bit tensors whose math costs at least `ew_long_math`
    # instructions an element (element_cost.py) moves `ew_long_runs` runs a thread at up to
    # `ew_long_blocks` blocks per SM (0: no such rule): more warps, so that others' loads are in
    # flight while one computes (docs/tile-ops.md).  20: the H200 (ops --quick, f16, of copy,
    # rule on vs off) measured atan (estimated 36 then; 28 since its rewrite, 15 with
    # tl::fast_atan) 0.56 vs 0.54 and erf (22; 18 with tl::fast_erf) 0.68 vs 0.64, but hardswish_bwd (14 then, 11 now: SASS 4.6 on the hot path)
    # 0.98 vs 1.03: at one run a thread the address and bounds arithmetic is shared by half the
    # elements (the f16 identity kernel's hot path, sm_90a: 101 SASS instructions for 8
    # elements, 97 for 16 at two runs), which short math does not win back.  Unmeasured either
    # way: std.elementwise's estimates from 12 to 19 (div, log, log1p, expm1, silu_bwd, mish, ...),
    # which left the rule with this threshold, and 20 to 23 (elu, softplus, tanh_bwd, ...).
    ew_long_math: int = 20
    # two runs: the H200 (f16, of copy; one run at up to 16 blocks / two runs at the register
    # count's 12 or 10 / the plain schedule at the occupancy estimate's 10 or 9) measured erf
    # 0.68 / 0.69 / 0.65, atan 0.67 / 0.71 / 0.70, log1p 0.84 / 0.86 / 0.86, silu_bwd 0.91 / 1.04 /
    # 1.04, hardswish_bwd 0.99 / 1.03 / 1.04: more warps help, halving each thread's work does not
    ew_long_runs: int = 2
    ew_long_blocks: int = 16

    def __post_init__(self):
        for name in ("ew_threads", "ew_runs", "ew_long_runs", "row_elems_per_thread", "row_block_elems",
                     "col_block_elems", "col_elems_per_thread", "col_tiles_per_step"):
            v = getattr(self, name)
            if not isinstance(v, int) or v < 1 or v & (v - 1):
                raise ValueError(f"rule {name} must be a power of two, not {v!r}")
        if not isinstance(self.col_registers_max, int) or self.col_registers_max < 1:
            raise ValueError(f"rule col_registers_max must be a positive number of registers, not {self.col_registers_max!r}")
        for name in ("min_blocks", "ew_long_blocks"):
            v = getattr(self, name)
            if not isinstance(v, int) or not 0 <= v <= 32:
                raise ValueError(f"rule {name} must be 0 (the estimate) to 32, not {v!r}")
        if not 32 <= self.ew_threads <= 1024:
            raise ValueError(f"rule ew_threads must be 32 to 1024, not {self.ew_threads}")


DEFAULT_RULES = Rules()

# registers a thread of a long-math element-wise kernel needs besides its fragments, and more for
# each fragment past two (a second input's conversions and math): at one run a thread,
# std.elementwise's f16 addcdiv and mish_bwd spilled 4 bytes at 32 registers (16 blocks of 128
# threads, 16 of them fragments); at two, bf16 remainder 4 bytes at 48 (10 blocks, 24 of them
# fragments), none at 56.  ptxas -v, sm_90a
LONG_MATH_REGISTERS = 24
LONG_MATH_PER_FRAGMENT = 4


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


@frozen
class ElementwiseTiles:
    shape: tuple  # the block's tile: (BLOCK,) or (BM, BN)
    threads: int
    min_blocks: int = 0  # blocks per SM asked of ptxas (0: the estimate)


def elementwise_tiles(rank: int, dims, sizes: dict, dtypes, rules: Rules = DEFAULT_RULES,
                      transposed: bool = False) -> ElementwiseTiles:
    """A flat (1-D) kernel: `ew_threads` threads, `ew_runs` runs of `vector` elements each, and
    at least `EW_MIN_ELEMS` elements a thread (two runs where the widest dtype has 4 bytes), as
    PyTorch's vectorized kernel moves 8 (std.nn's silu_residual at its best: one 16-byte vector
    per thread and tensor, 256 threads).
    A 2-D one (broadcasting): as many columns as the tensor has, up to 256, and rows to make
    the same number of elements.  One that reads a tensor `transposed` (x.T), through a shared
    tile: square tiles of `TRANSPOSE_TILE` at `TRANSPOSE_THREADS` threads, so that the tile of
    the transposed tensor is read along its rows as the result is written along its own."""
    vec = vector(dtypes)
    threads = rules.ew_threads
    block = threads * vec * max(rules.ew_runs, EW_MIN_ELEMS // vec)
    if rank == 1:
        return ElementwiseTiles((block,), threads, rules.min_blocks)
    if transposed:
        return ElementwiseTiles((TRANSPOSE_TILE, TRANSPOSE_TILE), TRANSPOSE_THREADS, rules.min_blocks)
    bn = min(max(size_of(dims[-1], sizes), vec), 256)
    bm = max(1, min(block // bn, size_of(dims[0], sizes)))
    return ElementwiseTiles((bm, bn), threads if bm * bn >= threads * vec else min(threads, 128), rules.min_blocks)


@frozen
class RowTiles:
    kept: int  # rows (axis 1) or columns (axis 0) per block
    reduced: int  # elements of the reduced axis per tile; a longer axis is walked tile by tile
    threads: int
    whole: bool = False  # the rows the plan is for fit one tile: the kernel has a one-tile path
    keep_exp: bool = True  # that path keeps a softmax's exponentials in registers
    step_max: bool = True  # a column log-sum-exp rescales once a step (Rules.col_step_max)
    min_blocks: int = 0  # blocks per SM asked of ptxas (0: the estimate)
    step: int = 1  # tiles a column kernel's loop takes an iteration


def row_tiles(axis: int, space, sizes: dict, rules: Rules = DEFAULT_RULES) -> RowTiles:
    """Rows of a row reduction (axis 1, or a 1-D tensor): the whole row in one tile when it has
    at most `ROW_TILE_MAX` elements (then the kernel reads each element once and every pass
    after the first reads registers), and enough rows per block for `row_block_elems` elements.
    Columns (axis 0): `COL_TILE_MAX` columns per block, halved (to `COL_TILE_MIN`) while that
    leaves fewer than `COL_BLOCKS_MIN` blocks (8192 columns: 64 a block, 128 blocks; 256 a block
    ran 32 blocks on the H200's 132 SMs, 0.07 of the copy bandwidth), walking the rows in tiles
    of `col_block_elems` elements (each thread adds its rows of every tile in registers and the
    threads combine once, column_blocks.defer_column_combine), `COL_TILES_PER_STEP` tiles an
    iteration, their copies one load batch: what a thread has in flight is the iteration's
    bytes (8 runs of 16 bytes for 2-byte tensors at 4 tiles, 8 for 4-byte ones at 2, as
    bench/plain's column_sums, 1.00 of copy on the H200, holds in its one [256, 32] f32 tile),
    at one block of 512 threads an SM, 128 blocks of 64 columns for 8192 f16 columns (`COL_BLOCKS_MIN`).  The
    (16384, 8192) f16 column sum on the H200: [512, 32] tiles at 1024 threads, two an iteration
    with their loads one after the other, 0.72 of copy; the [128, 32] of col_block_elems alone
    0.51.  Threads: one per `row_elems_per_thread` elements of the tile (`COL_ELEMS_PER_THREAD`
    of a column tile, `col_elems_per_thread`, whose partials take as many registers again), 128 to 1024."""
    if axis == len(space) - 1:
        n = size_of(space[-1], sizes)
        m = size_of(space[0], sizes) if len(space) == 2 else 1
        red = max(32, min(n, ROW_TILE_MAX))
        kept = max(1, min(rules.row_block_elems // red, m))
    else:
        n = size_of(space[1], sizes)
        kept = COL_TILE_MAX
        while kept > COL_TILE_MIN and n // kept < COL_BLOCKS_MIN:
            kept //= 2
        kept = max(COL_TILE_MIN, min(n, kept))
        red = max(1, min(rules.col_block_elems // kept, size_of(space[0], sizes)))
    per_thread = rules.row_elems_per_thread if axis == len(space) - 1 else rules.col_elems_per_thread
    threads = min(1024, max(128, kept * red // per_thread))
    return RowTiles(kept, red, threads, whole=axis == len(space) - 1 and n <= red, keep_exp=rules.row_keep_exp,
                    step_max=rules.col_step_max, min_blocks=rules.min_blocks,
                    step=1 if axis == len(space) - 1 else rules.col_tiles_per_step)


ROW_OVERHEAD = 12  # registers a row kernel's thread needs besides its fragments (ptxas -v, sm_90a)
ROW_MIN_REGISTERS = 40  # and at least these (a 1024-thread softmax of 8 elements a thread spills at 32)


def row_blocks_per_sm(threads: int, registers: int, target=None) -> int:
    """Blocks per SM a row kernel asks ptxas to fit: the most at which each thread still has
    room for `registers` (its fragments' 32-bit registers that are live at once) plus
    `ROW_OVERHEAD` (at least `ROW_MIN_REGISTERS` in all).  A memory-bound row kernel's speed is
    the rows in flight: an (16384, 8192) f16 softmax on the H200 takes 209 us at 2 blocks (ptxas's
    choice, 125 registers), 163 us at 3 (72) and 140 us at 4 (64 registers, no spills; 0.91x
    copy); ptxas -v on sm_90a (f16 unless said): softmax 8192 fits 4 blocks (52 + 12 = 64),
    f32 softmax 8192, layernorm 8192, f32 logsumexp 8192 and every 16384-wide row fit 3 and
    spill at 4, a row sum fits 4; rows of 1024 (128 threads) fit 9 to 12.  Any register-resident
    kernel without blocks_per_sm= takes the same rule (schedule/blocks_per_sm.py); `target` (a
    `tlc.targets.Target`) gives the SM's limits, sm_90a's by default."""
    return blocks_fitting(threads, max(registers + ROW_OVERHEAD, ROW_MIN_REGISTERS), target)


TENSOR_CORE_DTYPES = ("f16", "bf16", "f8e4m3", "f8e5m2", "i8", "u8")


@frozen
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
