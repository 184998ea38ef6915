"""Every tile-op construct against NumPy on the reference interpreter: element-wise arithmetic
with broadcasting, math, device functions, `where`, casts and `.T`; `@` with each transpose and
an epilogue; sum/max/min/mean along either axis with and without keepdims; softmax; chains of
them that take several kernels.  Shapes are ragged (not multiples of any tile)."""
from __future__ import annotations

import numpy as np
import pytest

from tileops_kit import LAYERNORM, assert_close, f32, gelu, module, rand, softmax

SRC = """
def gelu(x: f32) -> f32:
    return 0.5 * x * (1.0 + tanh(0.7978845608 * (x + 0.044715 * x * x * x)))

def clamp01(x: f32) -> f32:
    if x < 0.0:
        return 0.0
    return min(x, 1.0)

@tile_op
def chain6(x: f16[M, N], y: f16[M, N]) -> f16[M, N]:
    a = x * y
    b = a + x
    c = b * 0.5
    d = exp(c)
    e = d - y
    return e * e

@tile_op
def mixed(x: f16[M, N], y: f32[M, N], alpha: f32) -> f32[M, N]:
    return alpha * x + sigmoid(y) - abs(y) / (1.0 + x * x)

@tile_op
def bcast(x: f32[M, N], row: f32[N], col: f32[M, 1]) -> f32[M, N]:
    return (x - col) * row + max(x, 0.0)

@tile_op
def devfn(x: f32[M, N]) -> f32[M, N]:
    return clamp01(x) + gelu(x)

@tile_op
def choose(x: f32[M, N], y: f32[M, N]) -> f32[M, N]:
    return where(x > y, x - y, y * 2.0)

@tile_op
def transposed(x: f32[N, M], y: f32[M, N]) -> f32[M, N]:
    return x.T * 2.0 + y

@tile_op
def narrow(x: f32[M, N]) -> bf16[M, N]:
    return bf16(x * 3.0)

@tile_op
def widen(x: f16[N]) -> f32[N]:
    return x + 1.0

@tile_op
def ints(a: i32[M, N], b: i32[M, N]) -> i32[M, N]:
    return a * b - a // 3 + (a % 5)

@tile_op
def vec(x: f32[N], y: f32[1]) -> f32[N]:
    return x * y

@tile_op
def mm(a: f16[M, K], b: f16[K, N]) -> f32[M, N]:
    return a @ b

@tile_op
def mm_nt(a: f16[M, K], b: f16[N, K]) -> f32[M, N]:
    return a @ b.T

@tile_op
def mm_tn(a: f16[K, M], b: f16[K, N]) -> f32[M, N]:
    return a.T @ b

@tile_op
def mm_tt(a: f16[K, M], b: f16[N, K]) -> f32[M, N]:
    return a.T @ b.T

@tile_op
def mm_f32(a: f32[M, K], b: f32[K, N]) -> f32[M, N]:
    return a @ b

@tile_op
def linear_gelu(x: f16[M, K], w: f16[N, K], b: f32[N]) -> f16[M, N]:
    return f16(gelu(x @ w.T + b))

@tile_op
def residual(x: f16[M, K], w: f16[K, N], r: f16[M, N], scale: f32) -> f16[M, N]:
    h = x @ w
    return f16(scale * h + r)

@tile_op
def rowsum(x: f32[M, N]) -> f32[M]:
    return sum(x, axis=1)

@tile_op
def rowmax_keep(x: f16[M, N]) -> f16[M, 1]:
    return max(x, axis=1, keepdims=True)

@tile_op
def colmin(x: f32[M, N]) -> f32[N]:
    return min(x, axis=0)

@tile_op
def colmean_keep(x: f32[M, N]) -> f32[1, N]:
    return mean(x, axis=0, keepdims=True)

@tile_op
def vecsum(x: f32[N]) -> f32[1]:
    return sum(x * x, axis=0, keepdims=True)

@tile_op
def isum(x: i32[M, N]) -> i32[M]:
    return sum(x, axis=1)

@tile_op
def center(x: f32[M, N]) -> f32[M, N]:
    return x - mean(x, axis=1, keepdims=True)

@tile_op
def smax(x: f16[M, N]) -> f16[M, N]:
    return softmax(x, axis=1)

@tile_op
def smax_cols(x: f32[M, N]) -> f32[M, N]:
    return softmax(x, axis=0)

@tile_op
def smax_scaled(x: f16[M, N], t: f32) -> f32[M, N]:
    return softmax(x * t, axis=-1) * 2.0

@tile_op
def rmsnorm(x: f16[M, N], g: f16[N]) -> f16[M, N]:
    ms = mean(f32(x) * f32(x), axis=1, keepdims=True)
    return f16(x * rsqrt(ms + 1e-6) * g)

@tile_op
def attention_row(q: f16[M, K], k: f16[N, K]) -> f32[M, N]:
    return softmax(q @ k.T * 0.125, axis=1)

@tile_op
def scaled_operand(x: f32[M, K], w: f16[K, N]) -> f32[M, N]:
    return f16(x * 2.0) @ w

@tile_op
def two_products(x: f16[M, K], w1: f16[K, N], w2: f16[K, N]) -> f32[M, N]:
    return x @ w1 + x @ w2

@tile_op
def row_then_col(x: f32[M, N]) -> f32[M, N]:
    s = softmax(x, axis=1)
    return s / sum(s, axis=0, keepdims=True)
""" + "@tile_op" + LAYERNORM

RNG = np.random.default_rng(7)


@pytest.fixture(scope="module")
def mod():
    return module(SRC)


def test_chain_of_six(mod):
    x, y = rand(RNG, (37, 45), np.float16), rand(RNG, (37, 45), np.float16)
    a = f32(x * y)
    ref = a + f32(x)
    ref = np.exp(ref * 0.5) - f32(y)
    assert_close(mod.chain6(x, y), ref * ref)


def test_promotion_scalars_and_math(mod):
    x, y = rand(RNG, (20, 33), np.float16), rand(RNG, (20, 33))
    # 1.0 + x * x stays f16 (a literal takes the other operand's type), as in NumPy
    ref = 1.5 * f32(x) + 1 / (1 + np.exp(-y)) - np.abs(y) / f32(np.float16(1) + x * x)
    assert_close(mod.mixed(x, y, 1.5), ref)


def test_broadcast_row_column_and_scalar(mod):
    x, row, col = rand(RNG, (29, 70)), rand(RNG, 70), rand(RNG, (29, 1))
    assert_close(mod.bcast(x, row, col), (x - col) * row + np.maximum(x, 0))


def test_device_functions_inline(mod):
    x = rand(RNG, (17, 300))
    assert_close(mod.devfn(x), np.clip(x, 0, 1) + gelu(x))


def test_where(mod):
    x, y = rand(RNG, (19, 21)), rand(RNG, (19, 21))
    assert_close(mod.choose(x, y), np.where(x > y, x - y, y * 2))


def test_transpose_in_element_wise(mod):
    x, y = rand(RNG, (40, 23)), rand(RNG, (23, 40))
    assert_close(mod.transposed(x, y), x.T * 2 + y)


def test_casts(mod):
    x = rand(RNG, (9, 130))
    from tileops_kit import BF16
    got = mod.narrow(x)
    assert got.dtype == BF16
    assert_close(got, x * 3)
    h = rand(RNG, 1001, np.float16)
    got = mod.widen(h)
    assert got.dtype == np.float32
    assert_close(got, f32(h + np.float16(1)))  # x + 1.0 is f16 arithmetic, then widened


def test_integers_exactly(mod):
    a = RNG.integers(-50, 50, (13, 77)).astype(np.int32)
    b = RNG.integers(-50, 50, (13, 77)).astype(np.int32)
    np.testing.assert_array_equal(mod.ints(a, b), a * b - a // 3 + a % 5)


def test_rank_one_broadcast(mod):
    x, y = rand(RNG, 5000), rand(RNG, 1)
    assert_close(mod.vec(x, y), x * y)


@pytest.mark.parametrize("name, ta, tb", [("mm", False, False), ("mm_nt", False, True), ("mm_tn", True, False),
                                          ("mm_tt", True, True)])
def test_matmul_each_transpose(mod, name, ta, tb):
    m, k, n = 70, 90, 130
    a = rand(RNG, (k, m) if ta else (m, k), np.float16)
    b = rand(RNG, (n, k) if tb else (k, n), np.float16)
    ref = f32(a.T if ta else a) @ f32(b.T if tb else b)
    got = getattr(mod, name)(a, b)
    assert got.dtype == np.float32
    assert_close(got, ref)


def test_matmul_f32(mod):
    a, b = rand(RNG, (33, 65)), rand(RNG, (65, 31))
    assert_close(mod.mm_f32(a, b), a @ b)


def test_linear_gelu_epilogue(mod):
    x, w, b = rand(RNG, (33, 40), np.float16), rand(RNG, (50, 40), np.float16), rand(RNG, 50)
    got = mod.linear_gelu(x, w, b)
    assert got.dtype == np.float16
    assert_close(got, gelu(f32(x) @ f32(w).T + b))


def test_residual_and_scaling_epilogue(mod):
    x, w, r = rand(RNG, (130, 64), np.float16), rand(RNG, (64, 300), np.float16), rand(RNG, (130, 300), np.float16)
    assert_close(mod.residual(x, w, r, 0.5), 0.5 * (f32(x) @ f32(w)) + f32(r))


def test_reductions(mod):
    x = rand(RNG, (23, 1100))
    assert_close(mod.rowsum(x), x.sum(1))
    xh = x.astype(np.float16)
    assert_close(mod.rowmax_keep(xh), xh.max(1, keepdims=True))
    x2 = rand(RNG, (301, 45))
    assert_close(mod.colmin(x2), x2.min(0))
    assert_close(mod.colmean_keep(x2), x2.mean(0, keepdims=True))
    v = rand(RNG, 3333)
    assert_close(mod.vecsum(v), (v * v).sum(0, keepdims=True))
    xi = RNG.integers(-100, 100, (11, 257)).astype(np.int32)
    np.testing.assert_array_equal(mod.isum(xi), xi.sum(1).astype(np.int32))


def test_reduction_broadcast_back(mod):
    x = rand(RNG, (10, 77))
    assert_close(mod.center(x), x - x.mean(1, keepdims=True))


@pytest.mark.parametrize("cols", [50, 1024, 9000])
def test_softmax_rows(mod, cols):
    """9000 columns take two tiles per row: the online max and sum across tiles."""
    x = rand(RNG, (5, cols), np.float16) * 4
    assert_close(mod.smax(x), softmax(f32(x), 1))


def test_softmax_columns_and_neighbours(mod):
    x = rand(RNG, (70, 33))
    assert_close(mod.smax_cols(x), softmax(x, 0))
    xh = rand(RNG, (6, 500), np.float16)
    assert_close(mod.smax_scaled(xh, 0.7), softmax(f32(xh) * 0.7, 1) * 2)


@pytest.mark.parametrize("cols", [300, 10000])
def test_normalizations(mod, cols):
    x, g, b = rand(RNG, (7, cols), np.float16), rand(RNG, cols), rand(RNG, cols)
    xr = f32(x)
    mu = xr.mean(1, keepdims=True)
    var = ((xr - mu) ** 2).mean(1, keepdims=True)
    assert_close(mod.layernorm(x, g, b), (xr - mu) / np.sqrt(var + 1e-5) * g + b)
    gh = g.astype(np.float16)
    assert_close(mod.rmsnorm(x, gh), xr / np.sqrt((xr * xr).mean(1, keepdims=True) + 1e-6) * f32(gh))


def test_several_kernels(mod):
    q, k = rand(RNG, (40, 64), np.float16), rand(RNG, (70, 64), np.float16)
    assert_close(mod.attention_row(q, k), softmax(f32(q) @ f32(k).T * 0.125, 1))
    x, w = rand(RNG, (33, 40)), rand(RNG, (40, 20), np.float16)
    assert_close(mod.scaled_operand(x, w), f32((x * 2).astype(np.float16)) @ f32(w))
    w1, w2 = rand(RNG, (40, 20), np.float16), rand(RNG, (40, 20), np.float16)
    xh = x.astype(np.float16)
    assert_close(mod.two_products(xh, w1, w2), f32(xh) @ f32(w1) + f32(xh) @ f32(w2))
    x3 = rand(RNG, (30, 20))
    s = softmax(x3, 1)
    assert_close(mod.row_then_col(x3), s / s.sum(0, keepdims=True))
