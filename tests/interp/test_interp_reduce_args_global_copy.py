"""The interpreter on tests/programs/reduce_args_global_copy.tl, against NumPy on ragged sizes: a
reduction's dim and clear given by position (TileLang's `T.reduce_sum(acc, delta, 1)`),
negative dims, and copies from global memory to global memory, converting between dtypes,
staged through registers or element by element.  tests/gpu runs the same checks on the GPU."""
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

import tlc

PROGRAM = Path(__file__).resolve().parents[1] / "programs" / "reduce_args_global_copy.tl"


@pytest.fixture(scope="module")
def mod():
    return tlc.load(str(PROGRAM), target="cpu")


def test_reductions_with_dim_and_clear_by_position(mod):
    rng = np.random.default_rng(20)
    a = rng.standard_normal((37, 96)).astype(np.float32)  # 37 rows: the last block is ragged
    s, mx, mn, am = (np.full(37, np.nan, np.float32) for _ in range(4))
    mod.row_stats(a, s, mx, mn, am)
    np.testing.assert_allclose(s, a.astype(np.float64).sum(1), rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(mx, a.max(1))
    np.testing.assert_array_equal(mn, a.min(1))
    np.testing.assert_array_equal(am, np.abs(a).max(1))


def test_a_negative_dim_counts_from_the_last(mod):
    rng = np.random.default_rng(21)
    a = rng.standard_normal((40, 70)).astype(np.float32)  # ragged both ways
    p = np.full((3, 70), np.nan, np.float32)
    mod.column_sums(a, p)
    want = [a[b * 16:(b + 1) * 16].astype(np.float64).sum(0) for b in range(3)]
    np.testing.assert_allclose(p, np.stack(want), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("n", [128, 99])  # rows of whole vectors, and rows no vector divides
def test_a_global_to_global_copy_converts_and_stops_at_the_edges(mod, n):
    rng = np.random.default_rng(n)
    a = rng.standard_normal((45, n)).astype(np.float32)
    b = np.full((45, n), np.nan, np.float16)
    mod.copy_cast(a, b)
    np.testing.assert_array_equal(b, a.astype(np.float16))


def test_single_indices_drop_dimensions_on_both_sides(mod):
    x = np.arange(2 * 30 * 3 * 24, dtype=np.int32).reshape(2, 30, 3, 24)
    y = np.full((3, 2, 30, 24), -1, np.int32)
    mod.copy_picked(x, y)
    np.testing.assert_array_equal(y, np.transpose(x, (2, 0, 1, 3)))


def test_a_column_is_copied_element_by_element(mod):
    rng = np.random.default_rng(22)
    g = rng.standard_normal((2, 50, 3)).astype(np.float32)
    o = np.full((2, 50, 3), np.nan)
    mod.copy_column(g, o)
    np.testing.assert_array_equal(o, g.astype(np.float64))


def test_a_large_tile_is_copied_in_bands_of_rows(mod):
    rng = np.random.default_rng(23)
    a = rng.standard_normal((70, 130)).astype(ml_dtypes.bfloat16)  # the last block's bands are partly outside
    b = np.full((70, 130), np.nan, np.float32)
    mod.copy_large(a, b)
    np.testing.assert_array_equal(b, a.astype(np.float32))


def test_a_tile_of_rank_3_is_copied_one_2d_tile_after_another(mod):
    rng = np.random.default_rng(26)
    x = rng.standard_normal((5, 37, 40)).astype(np.float32)  # ragged along both tiled dimensions
    y = np.full((5, 37, 40), np.nan, np.float16)
    mod.copy_slabs(x, y)
    np.testing.assert_array_equal(y, x.astype(np.float16))


def test_rows_too_long_to_stage_are_copied_by_a_loop(mod):
    rng = np.random.default_rng(25)
    a = rng.standard_normal((3, 4100)).astype(np.float16)
    b = np.full((3, 4100), np.nan, np.float16)
    mod.copy_long_rows(a, b)
    np.testing.assert_array_equal(b, a)


LAST_DIM = """
@kernel
def last_dim(A: f32[M, 4, 8], S: f32[M, 4], BM: const = 8):
    with grid(cdiv(M, BM), threads=32) as bx:
        tile = fragment(f32[BM, 4, 8])
        s = fragment(f32[BM, 4])
        copy(A[bx * BM:(bx + 1) * BM, :, :], tile)
        reduce_sum(tile, s)
        copy(s, S[bx * BM:(bx + 1) * BM, :])
"""


def test_without_a_dim_the_last_dimension_is_reduced():
    """TileLang's default, dim=-1 (the CUDA target reduces tiles of rank 2, where it is dim 1)."""
    from tlc.api import compile_source
    a = np.random.default_rng(24).standard_normal((13, 4, 8)).astype(np.float32)
    s = np.full((13, 4), np.nan, np.float32)
    compile_source(LAST_DIM, target="cpu", path="last_dim.tl").last_dim(a, s)
    np.testing.assert_allclose(s, a.astype(np.float64).sum(2), rtol=1e-5, atol=1e-5)
