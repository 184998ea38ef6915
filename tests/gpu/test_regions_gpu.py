"""tests/programs/regions.tl on the GPU against NumPy and the interpreter (tests/interp/
test_interp_regions.py has the cases): TileLang's `by * BM:(by + 1) * BM` regions with stages 0, 1
and 2, a (batch, seq, heads, dim) tensor a head at a time, rows of fragments and shared
buffers; ragged shapes."""
from __future__ import annotations

import functools
import pathlib
import sys

import numpy as np
import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "interp"))
from test_interp_regions import SOURCE, bshd_case, columns_case, matmul_case, rows_case, rows_expected  # noqa: E402

from tlc.api import compile_source  # noqa: E402

pytestmark = pytest.mark.gpu


@functools.cache
def on_gpu():
    return compile_source(SOURCE, target="cuda", path="regions.tl")


@pytest.mark.parametrize("stages", [0, 1, 2])
def test_tilelang_regions_multiply(stages):
    A, B, C, want = matmul_case(shape=(200, 130, 150))
    on_gpu().matmul(A, B, C, S=stages)
    np.testing.assert_allclose(C, want, rtol=1e-3, atol=1e-3)


@pytest.mark.parametrize("shape", [(2, 100, 3), (1, 64, 5), (3, 7, 1)])
def test_a_head_of_a_batch_seq_heads_dim_tensor(shape):
    Q, O, P, R = bshd_case(shape=shape)
    on_gpu().bshd_scale(Q, O, P, R)
    np.testing.assert_array_equal(O, Q * np.float16(2))
    np.testing.assert_array_equal(P, (Q.astype(np.float32) * 2).transpose(0, 2, 1, 3))
    np.testing.assert_array_equal(R, (Q.astype(np.float32) * 2).transpose(1, 0, 2, 3))


@pytest.mark.parametrize("shape", [(37, 50), (16, 64), (100, 80)])
def test_rows_of_fragments_and_shared_buffers(shape):
    X, L, Y = rows_case(shape=shape)
    on_gpu().rows(X, L, Y)
    want_L, want_Y = rows_expected(X)
    np.testing.assert_array_equal(L, want_L)
    np.testing.assert_array_equal(Y, want_Y)


def test_rows_of_a_local_buffer():
    X = np.random.default_rng(3).standard_normal((10, 8)).astype(np.float32)
    Y = np.full_like(X, 7)
    on_gpu().local_rows(X, Y)
    np.testing.assert_array_equal(Y, X)


@pytest.mark.parametrize("shape", [(2, 50, 3), (1, 32, 1), (3, 100, 4)])
def test_a_tile_along_a_dimension_that_is_not_the_last(shape):
    G, O, P = columns_case(shape)
    on_gpu().columns(G, O, P)
    np.testing.assert_array_equal(O, G * 3)
    np.testing.assert_array_equal(P, G[:, :, 0].T)


@pytest.mark.parametrize("shape", [(2, 70, 3), (1, 32, 1)])
def test_a_column_into_a_tile_of_one_row(shape):
    G, O, _ = columns_case(shape)
    on_gpu().ones_tiles(G, O)
    np.testing.assert_array_equal(O, G + 1)
