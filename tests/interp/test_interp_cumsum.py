"""The interpreter on tests/programs/cumsum.tl against NumPy on ragged sizes: cumsum over shared
and fragment tiles and regions of them along either dimension, forward and reversed, in place
and into a buffer of a wider dtype, integers wrapping in the destination's width; and buffers
allocated inside an if, its else and loops.  tests/gpu/test_cumsum_gpu.py runs the same checks on the GPU."""
from pathlib import Path

import numpy as np
import pytest

import tlc

PROGRAM = Path(__file__).resolve().parents[1] / "programs" / "cumsum.tl"


@pytest.fixture(scope="module")
def mod():
    return tlc.load(str(PROGRAM), target="cpu")


def sums(x, axis: int, reverse: bool):
    """NumPy's inclusive cumsum along `axis`, in f64, from the end when `reverse`."""
    x = np.flip(x.astype(np.float64), axis) if reverse else x.astype(np.float64)
    out = np.cumsum(x, axis)
    return np.flip(out, axis) if reverse else out


def scanned(kernel, a, **constants):
    """What `kernel(a, c)` writes into c, which starts as nans."""
    c = np.full_like(a, np.nan)
    kernel(a, c, **constants)
    return c


def by_blocks(x, rows: int, axis: int, reverse: bool):
    """`sums` within each block of `rows` rows, as each grid block scans its own tile."""
    return np.concatenate([sums(x[s:s + rows], axis, reverse) for s in range(0, x.shape[0], rows)])


@pytest.mark.parametrize("reverse", [False, True])
def test_shared_rows(mod, reverse):
    a = np.random.default_rng(1).standard_normal((21, 80)).astype(np.float32)  # 21 rows: a ragged block
    c = np.full_like(a, np.nan)
    mod.shared_rows(a, c, reverse=reverse)
    np.testing.assert_allclose(c, sums(a, 1, reverse), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("reverse", [False, True])
def test_rows_of_whole_vectors(mod, reverse):
    """Rows of 4-byte elements a multiple of 128 long (tl/scan.cuh's path of a 16-byte vector a
    lane): f32 rows of 256 through shared_rows, i32 rows of 384 wrapping in i32."""
    rng = np.random.default_rng(7)
    a = rng.standard_normal((21, 256)).astype(np.float32)
    c = np.full_like(a, np.nan)
    mod.shared_rows(a, c, BN=256, reverse=reverse)
    np.testing.assert_allclose(c, sums(a, 1, reverse), rtol=1e-5, atol=1e-4)
    n = rng.integers(-2**31, 2**31, (9, 384), dtype=np.int64).astype(np.int32)
    got = np.full_like(n, -7)
    mod.int_rows(n, got, reverse=reverse)
    flipped = np.flip(n.astype(np.int64), 1) if reverse else n.astype(np.int64)
    want = np.cumsum(flipped, 1)
    want = (np.flip(want, 1) if reverse else want).astype(np.uint64).astype(np.int32)
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("reverse", [False, True])
def test_products_maxima_and_minima(mod, reverse):
    """cumprod and cummax of f32 rows (the vector path on the GPU), cummin of i32 columns."""
    rng = np.random.default_rng(8)
    a = (1 + rng.standard_normal((12, 256)) * 0.02).astype(np.float32)  # whole blocks: a reversed
    # column scan of a ragged block would start from the rows past M, which read as 0
    a[3, 5] = -a[3, 5]
    p, x, i = (np.full(a.shape, np.nan, np.float32), np.full(a.shape, np.nan, np.float32),
               np.full(a.shape, -7, np.int32))
    mod.other_scans(a, p, x, i, reverse=reverse)

    def scanned(ufunc, v, axis):
        v = np.flip(v, axis) if reverse else v
        out = ufunc.accumulate(v, axis=axis)
        return np.flip(out, axis) if reverse else out

    np.testing.assert_allclose(p, by_blocks_of(a, 4, lambda t: scanned(np.multiply, t.astype(np.float64), 1)),
                               rtol=1e-5)
    np.testing.assert_array_equal(x, scanned(np.maximum, a, 1))
    ints = (a * np.float32(100)).astype(np.int32)
    np.testing.assert_array_equal(i, by_blocks_of(ints, 4, lambda t: scanned(np.minimum, t, 0)))


def by_blocks_of(x, rows: int, fn):
    """`fn` of each block of `rows` rows, as each grid block scans its own tile."""
    return np.concatenate([fn(x[s:s + rows]) for s in range(0, x.shape[0], rows)])


@pytest.mark.parametrize("reverse", [False, True])
def test_columns_in_chunks_of_rows(mod, reverse):
    """dim=0 of [100, 32] tiles of 70 columns (the second block ragged): on the GPU a thread a
    column and chunk of 25 rows, the chunks' totals combined across the block."""
    a = np.random.default_rng(9).standard_normal((100, 70)).astype(np.float32)
    c = np.full_like(a, np.nan)
    mod.column_chunks(a, c, reverse=reverse)
    np.testing.assert_allclose(c, sums(a, 0, reverse), rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("reverse", [False, True])
def test_column_maxima_in_chunks(mod, reverse):
    a = np.random.default_rng(10).standard_normal((64, 40)).astype(np.float16)
    c = np.full_like(a, np.nan)
    mod.column_maxima(a, c, reverse=reverse)
    flipped = np.flip(a, 0) if reverse else a
    want = np.maximum.accumulate(flipped, axis=0)
    np.testing.assert_array_equal(c, np.flip(want, 0) if reverse else want)


def test_fragment_columns_into_a_wider_dtype(mod):
    a = np.random.default_rng(2).standard_normal((100, 37)).astype(np.float16)  # ragged both ways
    c = np.full(a.shape, np.nan, np.float32)
    mod.fragment_columns(a, c)  # reverse=True by default
    # rows past M read as 0, so a reversed sum near the ragged edge is the same as NumPy's
    np.testing.assert_allclose(c, by_blocks(a, 48, 0, True), rtol=1e-5, atol=1e-5)


def test_integers_into_a_wider_dtype(mod):
    rng = np.random.default_rng(3)
    a = rng.integers(-2**31, 2**31, 300, dtype=np.int64).astype(np.int32)  # 300: a ragged block
    c = np.full(300, -7, np.int64)
    mod.shared_to_shared_ints(a, c)
    want = np.concatenate([np.cumsum(a[s:s + 256].astype(np.int64)) for s in range(0, 300, 256)])
    np.testing.assert_array_equal(c, want)


def test_a_block_smaller_than_a_warp(mod):
    a = np.random.default_rng(4).standard_normal((10, 40)).astype(np.float32)
    c = np.full_like(a, np.nan)
    mod.small_block(a, c)
    np.testing.assert_allclose(c, sums(a, 1, True), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("scale", [2.0, -1.0])
def test_buffers_allocated_in_branches_and_loops(mod, scale):
    a = np.random.default_rng(5).standard_normal((40, 32)).astype(np.float32)
    c = np.full_like(a, np.nan)
    mod.allocated_in_branches(a, c, scale)
    want = (a * scale if scale > 0 else -a) + 2.0
    np.testing.assert_allclose(c, want, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("flag", [0, 1])
def test_a_buffer_allocated_in_an_if_reuses_earlier_bytes(mod, flag):
    a = np.random.default_rng(6).standard_normal((33, 32)).astype(np.float32)
    c = np.full_like(a, np.nan)
    mod.reused_after_branch(a, c, flag)
    np.testing.assert_allclose(c, sums(a, 1, False) if flag else a, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("flag", [0, 1])
def test_the_two_branches_buffers_share_bytes(mod, flag):
    a = np.random.default_rng(7).standard_normal((20, 32)).astype(np.float32)
    c = np.full_like(a, np.nan)
    mod.branches_share_bytes(a, c, flag)
    np.testing.assert_allclose(c, sums(a, 1, reverse=not flag), rtol=1e-5, atol=1e-5)


def test_tiles_allocated_inside_a_pipelined_loop(mod):
    rng = np.random.default_rng(8)
    a = rng.standard_normal((70, 100)).astype(np.float16)  # ragged in M, N and K
    b = rng.standard_normal((100, 90)).astype(np.float16)
    c = np.full((70, 90), np.nan, np.float32)
    mod.staged_in_a_pipelined_loop(a, b, c)
    np.testing.assert_allclose(c, a.astype(np.float64) @ b.astype(np.float64), rtol=1e-3, atol=1e-3)


@pytest.mark.parametrize("reverse", [False, True])
def test_chunks_of_a_tile_each_scanned_in_place(mod, reverse):
    a = np.random.default_rng(9).standard_normal(200).astype(np.float32)  # 200: a ragged block
    c = np.full_like(a, np.nan)
    mod.chunks_of_a_tile(a, c, reverse=reverse)
    want = np.concatenate([sums(a[s:s + 16], 0, reverse) for s in range(0, 200, 16)])
    np.testing.assert_allclose(c, want, rtol=1e-5, atol=1e-5)


def test_rows_of_a_fragment_into_rows_of_a_shared_tile(mod):
    a = np.random.default_rng(10).standard_normal((10, 64)).astype(np.float32)
    np.testing.assert_allclose(scanned(mod.rows_of_a_fragment, a), sums(a, 1, False), rtol=1e-5, atol=1e-5)


def test_bytes_wrap_modulo_256(mod):
    a = np.random.default_rng(11).integers(0, 256, 150, dtype=np.uint8)  # 150: a ragged block
    c = np.zeros(150, np.uint8)
    mod.bytes_wrap(a, c)
    want = np.concatenate([np.cumsum(a[s:s + 96], dtype=np.uint8) for s in range(0, 150, 96)])
    np.testing.assert_array_equal(c, want)


@pytest.mark.parametrize("reverse", [False, True])
def test_fragment_rows_in_registers(mod, reverse):
    """A f32 fragment's rows (runs of 4 in 64 threads, the runs' totals through shared memory)."""
    a = np.random.default_rng(11).standard_normal((21, 256)).astype(np.float32)
    np.testing.assert_allclose(scanned(mod.fragment_rows, a, reverse=reverse), sums(a, 1, reverse), rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("reverse", [False, True])
def test_fragment_row_kinds(mod, reverse):
    """f16 maxima and minima (a nan passed over, as np.fmax), i32 sums wrapping, f32 products,
    each scanned in registers into a fragment of another name; 7 rows: a ragged block."""
    rng = np.random.default_rng(12)
    a = rng.standard_normal((7, 96)).astype(np.float16)
    a[2, 5] = a[5, 90] = np.nan
    n = rng.integers(-2**31, 2**31, (7, 96), dtype=np.int64).astype(np.int32)
    p = rng.uniform(0.9, 1.1, (7, 96)).astype(np.float32)
    outs = [np.zeros_like(a), np.zeros_like(a), np.zeros_like(n), np.zeros_like(p)]
    mod.fragment_row_kinds(a, n, p, *outs, reverse=reverse)

    def along(fn, x):
        x = np.flip(x, 1) if reverse else x
        out = fn(x)
        return np.flip(out, 1) if reverse else out

    np.testing.assert_array_equal(outs[0], along(lambda x: np.fmax.accumulate(x, 1), a))
    np.testing.assert_array_equal(outs[1], along(lambda x: np.fmin.accumulate(x, 1), a))
    np.testing.assert_array_equal(outs[2], along(lambda x: np.cumsum(x.astype(np.int64), 1), n).astype(np.uint64).astype(np.int32))
    np.testing.assert_allclose(outs[3], along(lambda x: np.cumprod(x.astype(np.float64), 1), p), rtol=1e-5)


def test_fragment_rows_of_f16_sums(mod):
    """f16 sums go through a shared copy in f32 and are rounded once (exact here: small integers)."""
    a = np.random.default_rng(13).integers(-2, 3, (9, 128)).astype(np.float16)
    c = np.zeros_like(a)
    mod.fragment_rows_f16_sums(a, c)
    np.testing.assert_array_equal(c, np.cumsum(a.astype(np.float64), 1).astype(np.float16))


def test_fragment_rows_carried_from_tile_to_tile(mod):
    """Rows of 200 in tiles of 64: each tile's last column (exchanged alone) carries into the next."""
    a = np.random.default_rng(14).standard_normal((5, 200)).astype(np.float32)
    np.testing.assert_allclose(scanned(mod.fragment_rows_carried, a), sums(a, 1, False), rtol=1e-5, atol=1e-4)


def test_accumulator_rows(mod):
    """A gemm's accumulator scanned along its rows, within each block's 64 columns (70 x 100: ragged)."""
    rng = np.random.default_rng(15)
    a = rng.standard_normal((70, 40)).astype(np.float16)
    b = rng.standard_normal((40, 100)).astype(np.float16)
    c = np.full((70, 100), np.nan, np.float32)
    mod.accumulator_rows(a, b, c)
    prod = a.astype(np.float64) @ b.astype(np.float64)
    want = np.concatenate([np.cumsum(prod[:, s:s + 64], 1) for s in range(0, 100, 64)], 1)
    np.testing.assert_allclose(c, want, rtol=1e-3, atol=1e-3)
