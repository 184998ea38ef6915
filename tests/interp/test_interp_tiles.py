"""Tile statements on the interpreter against NumPy: gemm, softmax, copies, reductions, fill."""
import numpy as np
import pytest

from interp_kit import c, kernel, op, rand, tensor, v
from tlc.dtypes import BF16, DTYPES, F16, F32, I32
from tlc.ir import (Buffer, BufferRef, Copy, Fill, Gemm, Reduce, Region, samples)
from tlc.interp import run_kernel

I8 = DTYPES["i8"]


@pytest.mark.parametrize("dtype, BM, BN, BK, shape", [
    (F16, 64, 64, 32, (100, 130, 70)),   # ragged in every dimension
    (BF16, 32, 64, 16, (64, 96, 48)),    # exact multiples
    (F32, 64, 32, 32, (33, 65, 97)),
])
def test_matmul_matches_numpy(dtype, BM, BN, BK, shape):
    M, N, K = shape
    rng = np.random.default_rng(1)
    A, B = rand(rng, (M, K), dtype, -2, 2), rand(rng, (K, N), dtype, -2, 2)
    C = np.full((M, N), 7, dtype.numpy())
    run_kernel(samples.matmul(dtype, BM, BN, BK), dict(A=A, B=B, C=C))
    exact = A.astype(np.float64) @ B.astype(np.float64)
    # f32 accumulation differs from f64 by ~1e-6; the output rounds once to `dtype`
    eps = {F16: 2.0 ** -10, BF16: 2.0 ** -7, F32: 1e-5}[dtype]
    np.testing.assert_allclose(C.astype(np.float64), exact, rtol=eps, atol=eps * 4)


def _one_tile_gemm(a_shape, b_shape, dtype, trans_a, trans_b, acc_dtype=F32):
    m = a_shape[1] if trans_a else a_shape[0]
    n = b_shape[0] if trans_b else b_shape[1]
    zero = (c(0, I32), c(0, I32))
    body = [Copy(Region("A", zero, a_shape), BufferRef("As")),
            Copy(Region("B", zero, b_shape), BufferRef("Bs")),
            Fill("acc", c(1, acc_dtype)),
            Gemm("As", "Bs", "acc", trans_a, trans_b),
            Copy(BufferRef("acc"), Region("C", zero, (m, n)))]
    bufs = [Buffer("As", "shared", dtype, a_shape), Buffer("Bs", "fragment", dtype, b_shape),
            Buffer("acc", "fragment", acc_dtype, (m, n))]
    params = [tensor("A", dtype, *a_shape), tensor("B", dtype, *b_shape),
              tensor("C", acc_dtype, m, n)]
    return kernel(params, body, bufs)


@pytest.mark.parametrize("dtype, trans_a, trans_b", [
    (F16, False, True), (F16, True, False), (BF16, True, True), (DTYPES["f8e4m3"], False, False)])
def test_gemm_transposes_accumulate_onto_the_fragment(dtype, trans_a, trans_b):
    rng = np.random.default_rng(2)
    a_shape, b_shape = ((8, 16) if trans_a else (16, 8)), ((24, 8) if trans_b else (8, 24))
    A, B = rand(rng, a_shape, dtype), rand(rng, b_shape, dtype)
    C = np.zeros((16, 24), np.float32)
    run_kernel(_one_tile_gemm(a_shape, b_shape, dtype, trans_a, trans_b), dict(A=A, B=B, C=C))
    a = A.astype(np.float32).T if trans_a else A.astype(np.float32)
    b = B.astype(np.float32).T if trans_b else B.astype(np.float32)
    np.testing.assert_allclose(C, 1 + a @ b, rtol=1e-6)


def test_gemm_on_i8_accumulates_exactly_in_i32():
    rng = np.random.default_rng(3)
    A, B = rand(rng, (16, 64), I8, -128, 127), rand(rng, (64, 16), I8, -128, 127)
    C = np.zeros((16, 16), np.int32)
    run_kernel(_one_tile_gemm((16, 64), (64, 16), I8, False, False, I32), dict(A=A, B=B, C=C))
    np.testing.assert_array_equal(C, 1 + A.astype(np.int32) @ B.astype(np.int32))


@pytest.mark.parametrize("dtype, shape, BM, BN", [
    (F32, (37, 50), 4, 64), (F16, (9, 31), 4, 32), (BF16, (16, 64), 8, 64), (F32, (3, 1), 4, 16)])
def test_softmax_ragged(dtype, shape, BM, BN):
    rng = np.random.default_rng(4)
    X = rand(rng, shape, dtype, -6, 6)
    Y = np.full(shape, 9, dtype.numpy())
    run_kernel(samples.softmax(dtype, BM, BN), dict(X=X, Y=Y))
    x = X.astype(np.float64)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    tol = {F32: 1e-6, F16: 2.0 ** -10, BF16: 2.0 ** -7}[dtype]
    np.testing.assert_allclose(Y.astype(np.float64), e / e.sum(axis=1, keepdims=True), rtol=tol, atol=tol)


def test_copy_edges_read_zero_and_skip_writes():
    # a 4x4 tile per block over a 6x7 tensor, shifted by (-1, +2): every edge is ragged
    bx, by = v("bx"), v("by")

    def origin(name):
        return Region(name, (op("-", op("*", by, c(4)), c(1)), op("+", op("*", bx, c(4)), c(2))),
                      (4, 4))

    body = [Copy(origin("X"), BufferRef("S")), Copy(BufferRef("S"), BufferRef("F")),
            Copy(BufferRef("F"), origin("Y"))]
    k = kernel([tensor("X", F32, "M", "N"), tensor("Y", F16, "M", "N")], body,
               [Buffer("S", "shared", F32, (4, 4)), Buffer("F", "fragment", F32, (4, 4))],
               grid=(c(2), c(3)))
    rng = np.random.default_rng(5)
    X = rand(rng, (6, 7), F32)
    Y = np.full((6, 7), -1, np.float16)
    run_kernel(k, dict(X=X, Y=Y))
    # blocks cover rows -1..10 and columns 2..9: inside the tensor that is rows 0..5, cols 2..6
    expect = np.full((6, 7), -1, np.float16)
    expect[:, 2:] = X[:, 2:].astype(np.float16)
    np.testing.assert_array_equal(Y, expect)


def test_copy_a_row_into_a_rank_one_buffer_and_back():
    by = v("by")
    body = [Copy(Region("X", (by, c(0)), (1, 8)), BufferRef("r")),
            Copy(BufferRef("r"), Region("Y", (by, c(0)), (1, 8)))]
    k = kernel([tensor("X", F16, "M", 8), tensor("Y", F32, "M", 8)], body,
               [Buffer("r", "fragment", F32, (8,))], grid=(c(5),), block_vars=("by",))
    X = rand(np.random.default_rng(6), (5, 8), F16)
    Y = np.zeros((5, 8), np.float32)
    run_kernel(k, dict(X=X, Y=Y))
    np.testing.assert_array_equal(Y, X.astype(np.float32))


@pytest.mark.parametrize("kind", ["sum", "max", "min", "absmax"])
@pytest.mark.parametrize("dim", [0, 1])
def test_reductions_clear_and_accumulate(kind, dim):
    zero = (c(0), c(0))
    out_n = 6 if dim == 1 else 10
    body = [Copy(Region("X", zero, (6, 10)), BufferRef("x")),
            Copy(Region("D", (c(0),), (out_n,)), BufferRef("d")),
            Reduce(kind, "x", "r", dim),
            Reduce(kind, "x", "d", dim, clear=False),
            Copy(BufferRef("r"), Region("R", (c(0),), (out_n,))),
            Copy(BufferRef("d"), Region("D", (c(0),), (out_n,)))]
    k = kernel([tensor("X", F16, 6, 10), tensor("R", F32, out_n), tensor("D", F32, out_n)], body,
               [Buffer("x", "fragment", F16, (6, 10)), Buffer("r", "fragment", F32, (out_n,)),
                Buffer("d", "fragment", F32, (out_n,))])
    rng = np.random.default_rng(7)
    X = rand(rng, (6, 10), F16)
    D0 = rand(rng, (out_n,), F32)
    R, D = np.zeros(out_n, np.float32), D0.copy()
    run_kernel(k, dict(X=X, R=R, D=D))
    x = X.astype(np.float32)
    ref = {"sum": x.sum(dim), "max": x.max(dim), "min": x.min(dim), "absmax": np.abs(x).max(dim)}[kind]
    combine = {"sum": np.add, "max": np.maximum, "min": np.minimum, "absmax": np.maximum}[kind]
    np.testing.assert_allclose(R, ref, rtol=1e-6)
    np.testing.assert_allclose(D, combine(D0, ref), rtol=1e-6)


def test_fill_converts_and_sets_every_element():
    body = [Fill("s", c(2.5, F16)), Copy(BufferRef("s"), Region("Y", (c(0), c(0)), (3, 5)))]
    k = kernel([tensor("Y", F16, 3, 5)], body, [Buffer("s", "shared", F16, (3, 5))])
    Y = np.zeros((3, 5), np.float16)
    run_kernel(k, dict(Y=Y))
    assert (Y == 2.5).all()


def test_buffers_start_as_nan_so_a_missing_clear_shows():
    body = [Gemm("a", "b", "acc"), Copy(BufferRef("acc"), Region("Y", (c(0), c(0)), (2, 2)))]
    k = kernel([tensor("Y", F32, 2, 2)], body,
               [Buffer("a", "shared", F16, (2, 2)), Buffer("b", "shared", F16, (2, 2)),
                Buffer("acc", "fragment", F32, (2, 2))])
    Y = np.zeros((2, 2), np.float32)
    run_kernel(k, dict(Y=Y))
    assert np.isnan(Y).all()


def test_copy_a_region_of_a_fragment_and_reduce_a_vector_to_one_element():
    # the right half of a 4x8 fragment goes to a 4x4 output; a rank-1 sum lands in a [1] buffer
    zero = (c(0), c(0))
    body = [Copy(Region("X", zero, (4, 8)), BufferRef("f")),
            Copy(Region("f", (c(0), c(4)), (4, 4)), Region("H", zero, (4, 4))),
            Copy(Region("X", zero, (1, 8)), BufferRef("row")),
            Reduce("sum", "row", "one", 0),
            Copy(BufferRef("one"), Region("S", (c(0),), (1,)))]
    k = kernel([tensor("X", F32, 4, 8), tensor("H", F32, 4, 4), tensor("S", F32, 1)], body,
               [Buffer("f", "fragment", F32, (4, 8)), Buffer("row", "fragment", F32, (8,)),
                Buffer("one", "fragment", F32, (1,))])
    X = rand(np.random.default_rng(8), (4, 8), F32)
    H, S = np.zeros((4, 4), np.float32), np.zeros(1, np.float32)
    run_kernel(k, dict(X=X, H=H, S=S))
    np.testing.assert_array_equal(H, X[:, 4:])
    np.testing.assert_allclose(S, X[0].sum(keepdims=True), rtol=1e-6)
