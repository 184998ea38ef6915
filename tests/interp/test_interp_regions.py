"""Regions and copies written as TileLang writes them, on the interpreter against NumPy
(tests/programs/regions.tl): `by * BM:(by + 1) * BM` slices on both sides of copy, pipelined
loops with stages=0 and 1, a (batch, seq, heads, dim) tensor read and written a head at a time,
and rows of fragments, shared and local buffers as either side of copy; ragged shapes throughout."""
from __future__ import annotations

import functools
import pathlib

import numpy as np
import pytest

from tlc.api import compile_source
from tlc.diagnostics import DiagnosticError

SOURCE = (pathlib.Path(__file__).resolve().parents[1] / "programs" / "regions.tl").read_text()


@functools.cache
def interpreted():
    return compile_source(SOURCE, target="cpu", path="regions.tl")


def matmul_case(seed=0, shape=(100, 70, 90)):
    M, N, K = shape
    rng = np.random.default_rng(seed)
    A = rng.uniform(-1, 1, (M, K)).astype(np.float16)
    B = rng.uniform(-1, 1, (K, N)).astype(np.float16)
    return A, B, np.full((M, N), 7, np.float32), A.astype(np.float32) @ B.astype(np.float32)


def bshd_case(seed=1, shape=(2, 100, 3)):
    Bn, T, H = shape
    Q = np.random.default_rng(seed).uniform(-2, 2, (Bn, T, H, 64)).astype(np.float16)
    O = np.full_like(Q, 5)
    P = np.full((Bn, H, T, 64), 5, np.float32)
    R = np.full((T, Bn, H, 64), 5, np.float32)
    return Q, O, P, R


def rows_case(seed=2, shape=(37, 50)):
    X = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    return X, np.full((2,) + shape, 7, np.float32), np.full(shape, 7, np.float32)


def rows_expected(X):
    """L and Y after `rows`: its copies move the first 64 columns, the rest stay 7."""
    L, Y = np.full((2,) + X.shape, 7, np.float32), np.full(X.shape, 7, np.float32)
    L[1, :, :64], Y[:, :64] = X[:, :64], X[:, :64] + 1
    return L, Y


@pytest.mark.parametrize("stages", [0, 1, 2])
def test_tilelang_regions_and_unpipelined_loops_multiply(stages):
    A, B, C, want = matmul_case()
    interpreted().matmul(A, B, C, S=stages)
    np.testing.assert_allclose(C, want, rtol=1e-5, atol=1e-5)


def test_a_head_of_a_batch_seq_heads_dim_tensor_is_a_tile():
    Q, O, P, R = bshd_case()
    interpreted().bshd_scale(Q, O, P, R)
    np.testing.assert_array_equal(O, Q * np.float16(2))  # the rows past T=100 are not written
    np.testing.assert_array_equal(P, (Q.astype(np.float32) * 2).transpose(0, 2, 1, 3))
    np.testing.assert_array_equal(R, (Q.astype(np.float32) * 2).transpose(1, 0, 2, 3))


@pytest.mark.parametrize("shape", [(37, 50), (20, 70)])
def test_rows_of_fragments_and_shared_buffers_copy_both_ways(shape):
    X, L, Y = rows_case(shape=shape)
    interpreted().rows(X, L, Y)
    want_L, want_Y = rows_expected(X)
    np.testing.assert_array_equal(L, want_L)  # the fixed index 1 picks one slice and writes nothing else
    np.testing.assert_array_equal(Y, want_Y)


def columns_case(shape=(2, 50, 3), seed=4):
    G = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    return G, np.full_like(G, 7), np.full((shape[1], shape[0]), 7, np.float32)


def test_a_tile_along_a_dimension_that_is_not_the_last():
    G, O, P = columns_case()
    interpreted().columns(G, O, P)
    np.testing.assert_array_equal(O, G * 3)
    np.testing.assert_array_equal(P, G[:, :, 0].T)


def test_a_column_into_a_tile_of_one_row():
    G, O, _ = columns_case((2, 70, 3))
    interpreted().ones_tiles(G, O)
    np.testing.assert_array_equal(O, G + 1)


def test_rows_of_a_local_buffer_copy_in_every_thread():
    X = np.random.default_rng(3).standard_normal((10, 8)).astype(np.float32)
    Y = np.full_like(X, 7)
    interpreted().local_rows(X, Y)
    np.testing.assert_array_equal(Y, X)


def test_a_row_between_a_fragment_and_a_local_buffer_is_refused():
    src = ("@kernel\ndef lf(X: f32[M, 8]):\n    with grid(cdiv(M, 4), threads=32) as bx:\n"
           "        loc = local(f32[4, 8])\n        f = fragment(f32[4, 8])\n        copy(X[bx * 4, 0], f)\n"
           "        copy(f[1, :], loc[2, :])\n        copy(loc, X[bx * 4, 0])\n")
    with pytest.raises(DiagnosticError) as e:
        compile_source(src, target="cpu", path="lf.tl").lf(np.zeros((8, 8), np.float32))
    assert str(e.value).startswith("lf.tl:7:9: error[E068]: copy between a local buffer and a fragment: a fragment is "
                                   "spread over the threads, a local buffer is each thread's own")
