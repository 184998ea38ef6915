"""Every kernel of every example in `examples/` runs on the NumPy reference interpreter
(`tlc.load(path, target="cpu")`) and matches a NumPy reference.

Inputs are seeded random normals (never all zero); shapes are chosen not to be multiples of
the tile sizes, and the kernels also run with non-default constants.  Every output is filled
with NaN before the run, so an element the kernel fails to write shows up.  Errors are
relative, ||out - ref|| / ||ref||, with a tolerance that fits the output dtype.
"""
from __future__ import annotations

from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

import tlc

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"

BF16 = np.dtype(ml_dtypes.bfloat16)
# the output is rounded to its dtype once (f16: 2^-11, bf16: 2^-8), on top of f32 math
TOL = {np.dtype(np.float16): 2e-3, BF16: 1e-2, np.dtype(np.float32): 1e-5}


_modules: dict = {}


def load(example: str):
    if example not in _modules:
        _modules[example] = tlc.load(str(EXAMPLES / f"{example}.tl"), target="cpu")
    return _modules[example]


def rand(rng, shape, dtype):
    a = rng.standard_normal(shape).astype(np.float32).astype(dtype)
    assert np.any(a != 0)
    return a


def poisoned(shape, dtype):
    return np.full(shape, np.nan, dtype=dtype)


def rel_err(out, ref) -> float:
    out, ref = np.asarray(out, np.float64), np.asarray(ref, np.float64)
    return float(np.linalg.norm(out - ref) / np.linalg.norm(ref))


def assert_close(out, ref, tol=None):
    assert not np.isnan(np.asarray(out, np.float64)).any(), \
        f"{int(np.isnan(np.asarray(out, np.float64)).sum())} of {out.size} output elements were never written"
    tol = TOL[out.dtype] if tol is None else tol
    err = rel_err(out, ref)
    assert err <= tol, f"relative error {err:.3g} > {tol:g}"


def assert_unchanged(*pairs):
    """Inputs are read, never written."""
    for now, before in pairs:
        np.testing.assert_array_equal(now, before)


# --- the module as a whole -------------------------------------------------------------------

COVERED = {"vector_add": {"vector_add"}, "gemm": {"matmul"}, "softmax": {"softmax"},
           "layernorm": {"layernorm"}, "linear_gelu": {"linear_gelu"}, "attention": {"attention"}}


def test_every_example_and_kernel_is_covered_here():
    found = {p.stem: set(load(p.stem).kernels) for p in EXAMPLES.glob("*.tl")}
    assert found == COVERED


# --- vector_add ------------------------------------------------------------------------------

@pytest.mark.parametrize("n, constants", [(3001, {}), (1024, {}), (1, {}), (3001, {"BLOCK": 256}),
                                          (777, {"BLOCK": 128})])
def test_vector_add(n, constants):
    rng = np.random.default_rng(n)
    x, y = rand(rng, n, np.float32), rand(rng, n, np.float32)
    out = poisoned(n, np.float32)
    x0, y0 = x.copy(), y.copy()
    alpha = 2.5
    load("vector_add").vector_add(x, y, out, alpha, **constants)
    assert_close(out, alpha * x + y)
    assert_unchanged((x, x0), (y, y0))


def test_vector_add_scalar_as_keyword_and_negative():
    rng = np.random.default_rng(7)
    x, y = rand(rng, 3001, np.float32), rand(rng, 3001, np.float32)
    out = poisoned(3001, np.float32)
    load("vector_add").vector_add(x, y, out, alpha=-0.75)
    assert_close(out, -0.75 * x + y)


# --- gemm ------------------------------------------------------------------------------------

GEMM_CASES = [
    # (M, N, K, dtype, constants)
    (300, 200, 100, np.float16, {}),
    (300, 200, 100, np.float16, {"BM": 64, "BN": 64, "BK": 16, "stages": 2}),
    (300, 200, 100, BF16, {"BM": 64, "BN": 64, "BK": 16, "stages": 2, "T": "bf16"}),
    (300, 200, 100, np.float32, {"BM": 64, "BN": 64, "BK": 16, "stages": 2, "T": "f32"}),
    (65, 130, 33, BF16, {"BM": 64, "BN": 64, "BK": 16, "stages": 2}),  # T bound from the arrays
    (128, 128, 64, np.float16, {}),  # exact multiples, K loop of 2
    (300, 200, 100, np.float16, {"THREADS": 256}),
    (1, 7, 5, np.float32, {"BM": 64, "BN": 64, "BK": 16}),  # smaller than one tile everywhere
]


@pytest.mark.parametrize("m, n, k, dtype, constants", GEMM_CASES,
                         ids=[f"{c[0]}x{c[1]}x{c[2]}-{np.dtype(c[3]).name}-{'-'.join(f'{a}{b}' for a, b in c[4].items()) or 'defaults'}"
                              for c in GEMM_CASES])
def test_gemm(m, n, k, dtype, constants):
    rng = np.random.default_rng(m * 1000 + n)
    a, b = rand(rng, (m, k), dtype), rand(rng, (k, n), dtype)
    c = poisoned((m, n), dtype)
    a0, b0 = a.copy(), b.copy()
    load("gemm").matmul(a, b, c, **constants)
    ref = a.astype(np.float64) @ b.astype(np.float64)
    assert_close(c, ref)
    assert_unchanged((a, a0), (b, b0))


def test_gemm_dtype_keyword_is_bf16_object_too():
    """`T` given as a tlc dtype instead of its name."""
    from tlc.dtypes import lookup

    rng = np.random.default_rng(3)
    a, b = rand(rng, (70, 40), BF16), rand(rng, (40, 90), BF16)
    c = poisoned((70, 90), BF16)
    load("gemm").matmul(a, b, c, T=lookup("bf16"), BM=64, BN=64, BK=16, stages=2)
    assert_close(c, a.astype(np.float64) @ b.astype(np.float64))


# --- softmax ---------------------------------------------------------------------------------

def softmax_ref(x):
    x = x.astype(np.float64)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


@pytest.mark.parametrize("m, n, constants", [
    (10, 100, {}),                        # M % BM != 0, N < BN, N % 8 != 0
    (7, 333, {"BM": 2, "BN": 512}),
    (5, 512, {"BM": 2, "BN": 512}),       # N == BN
    (1, 1, {}),                           # one element per row
    (9, 1023, {}),
])
def test_softmax(m, n, constants):
    rng = np.random.default_rng(m * 100 + n)
    x = (rand(rng, (m, n), np.float32) * 3).astype(np.float16)
    y = poisoned((m, n), np.float16)
    x0 = x.copy()
    load("softmax").softmax(x, y, **constants)
    assert_close(y, softmax_ref(x))
    assert_unchanged((x, x0))


def test_softmax_rows_sum_to_one_with_large_values():
    """Large inputs: the row max must be subtracted before exp (f16 input, no overflow)."""
    rng = np.random.default_rng(11)
    x = (rand(rng, (6, 77), np.float32) * 4 + 60000 / 4).astype(np.float16)
    y = poisoned((6, 77), np.float16)
    load("softmax").softmax(x, y)
    assert_close(y, softmax_ref(x))
    np.testing.assert_allclose(y.astype(np.float64).sum(axis=1), 1.0, rtol=2e-2)


# --- layernorm -------------------------------------------------------------------------------

def layernorm_ref(x, gamma, beta, eps):
    x = x.astype(np.float64)
    mean = x.mean(axis=1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * gamma.astype(np.float64) + beta.astype(np.float64)


@pytest.mark.parametrize("m, n, constants, eps", [
    (10, 77, {}, 1e-5),                          # M % BM != 0, N < BN, N % 8 != 0
    (7, 333, {"BM": 2, "BN": 512}, 1e-5),
    (6, 100, {"eps": "0.5"}, 0.5),               # -D style: the value as text
    (6, 100, {"eps": "1e-1", "BM": 3, "BN": 128}, 0.1),
    (3, 64, {"eps": 2.0}, 2.0),                  # as a Python float
])
def test_layernorm(m, n, constants, eps):
    rng = np.random.default_rng(m * 100 + n)
    x = (rand(rng, (m, n), np.float32) * 2 + 0.5).astype(np.float16)
    gamma, beta = rand(rng, n, np.float32), rand(rng, n, np.float32)
    y = poisoned((m, n), np.float16)
    x0, gamma0, beta0 = x.copy(), gamma.copy(), beta.copy()
    load("layernorm").layernorm(x, gamma, beta, y, **constants)
    assert_close(y, layernorm_ref(x, gamma, beta, eps))
    assert_unchanged((x, x0), (gamma, gamma0), (beta, beta0))


def test_layernorm_eps_matters():
    """A large eps changes the result measurably: the constant really reaches the kernel."""
    rng = np.random.default_rng(5)
    x = (rand(rng, (4, 50), np.float32) * 0.1).astype(np.float16)
    gamma, beta = np.ones(50, np.float32), np.zeros(50, np.float32)
    y1, y2 = poisoned((4, 50), np.float16), poisoned((4, 50), np.float16)
    load("layernorm").layernorm(x, gamma, beta, y1)
    load("layernorm").layernorm(x, gamma, beta, y2, eps="1.0")
    assert_close(y1, layernorm_ref(x, gamma, beta, 1e-5))
    assert_close(y2, layernorm_ref(x, gamma, beta, 1.0))
    assert rel_err(y2, y1) > 0.5


# --- linear_gelu: a @tile_op, scheduled into one matmul kernel with its epilogue -------------

def gelu_ref(h):
    return 0.5 * h * (1.0 + np.tanh(0.7978845608 * (h + 0.044715 * h ** 3)))


@pytest.mark.parametrize("m, n, k", [(33, 50, 40), (130, 300, 72), (1, 1, 1)])
def test_linear_gelu(m, n, k):
    rng = np.random.default_rng(m)
    x, w, b = rand(rng, (m, k), np.float16), rand(rng, (n, k), np.float16), rand(rng, n, np.float32)
    before = (x.copy(), w.copy(), b.copy())
    y = load("linear_gelu").linear_gelu(x, w, b)
    assert (y.dtype, y.shape) == (np.float16, (m, n))
    assert_close(y, gelu_ref(x.astype(np.float32) @ w.astype(np.float32).T + b))
    assert_unchanged(*zip((x, w, b), before))


def test_linear_gelu_is_one_kernel():
    prog = load("linear_gelu").linear_gelu.program()
    assert [x.kernel.name for x in prog.launches] == ["linear_gelu"] and not prog.temps


def test_fragment_exchange_program_on_the_interpreter():
    path = Path(__file__).resolve().parent / "programs" / "transpose_fragments.tl"
    mod = tlc.load(str(path), target="cpu")
    A = np.random.default_rng(5).standard_normal((100, 100)).astype(np.float32)
    B = np.full_like(A, np.nan)
    mod.transpose(A, B)
    np.testing.assert_array_equal(B, 2 * A.T)


@pytest.mark.parametrize("N", [2500, 1025])
def test_softmax_and_layernorm_rows_longer_than_a_tile(N):
    """Rows of more than BN columns go through the tile loop (online softmax; layernorm's three
    passes), and every element is written."""
    r = np.random.default_rng(N)
    x = (r.standard_normal((9, N)) * 2 + 1).astype(np.float16)
    y = np.full((9, N), np.nan, np.float16)
    tlc.load(str(EXAMPLES / "softmax.tl"), target="cpu").softmax(x, y)
    xf = x.astype(np.float64)
    e = np.exp(xf - xf.max(1, keepdims=True))
    np.testing.assert_allclose(y.astype(np.float64), e / e.sum(1, keepdims=True), rtol=5e-3, atol=1e-5)
    g, b = r.standard_normal(N).astype(np.float32), r.standard_normal(N).astype(np.float32)
    y = np.full((9, N), np.nan, np.float16)
    tlc.load(str(EXAMPLES / "layernorm.tl"), target="cpu").layernorm(x, g, b, y)
    ref = (xf - xf.mean(1, keepdims=True)) / np.sqrt(xf.var(1, keepdims=True) + 1e-5) * g + b
    np.testing.assert_allclose(y.astype(np.float64), ref, rtol=1e-2, atol=1e-2)


def test_local_buffer_program_on_the_interpreter():
    path = Path(__file__).resolve().parent / "programs" / "local_tile.tl"
    A = np.random.default_rng(6).standard_normal(29).astype(np.float32)
    B = np.full_like(A, np.nan)
    tlc.load(str(path), target="cpu").k(A, B)
    np.testing.assert_array_equal(B, 2 * A)


# --- attention: a @tile_op over stacks of heads, scheduled into one flash kernel ----------------

def attention_ref(q, k, v, scale):
    """softmax(q @ k.T * scale) @ v in f64 under the causal mask aligned to the bottom right; a
    query row that sees no key gives 0, as the flash kernel does."""
    S, SK = q.shape[-2], k.shape[-2]
    s = np.einsum("bhsd,bhtd->bhst", q.astype(np.float64), k.astype(np.float64)) * scale
    s = np.where(np.tri(S, SK, SK - S, dtype=bool), s, -np.inf)
    top = s.max(-1, keepdims=True)
    p = np.exp(s - np.where(np.isfinite(top), top, 0.0))
    total = p.sum(-1, keepdims=True)
    return np.where(total > 0, np.einsum("bhst,bhtd->bhsd", p, v.astype(np.float64)) / np.where(total > 0, total, 1), 0)


@pytest.mark.parametrize("B, H, S, SK, D, dtype", [(2, 3, 70, 100, 40, np.float16), (1, 2, 100, 64, 64, BF16),
                                                   (1, 1, 1, 1, 16, np.float16)])
def test_attention(B, H, S, SK, D, dtype):
    rng = np.random.default_rng(S * SK)
    q, k, v = (rand(rng, (B, H, n, D), dtype) for n in (S, SK, SK))
    before = [x.copy() for x in (q, k, v)]
    out = load("attention").attention(q, k, v, np.float32(D ** -0.5), T="bf16" if dtype == BF16 else "f16")
    assert out.shape == q.shape and out.dtype == dtype
    assert_close(out, attention_ref(q, k, v, D ** -0.5))
    assert_unchanged(*zip((q, k, v), before))


def test_attention_is_one_flash_kernel():
    prog = load("attention").attention.program(sizes={"D": 128})
    assert [x.kind for x in prog.launches] == ["attention"] and not prog.temps
