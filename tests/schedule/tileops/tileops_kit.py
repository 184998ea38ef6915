"""Helpers for tile-op tests: one source with many tile ops, NumPy references, tolerances."""
from __future__ import annotations

import ml_dtypes
import numpy as np

import tlc
from tlc.diagnostics import DiagnosticError, render_all

BF16 = np.dtype(ml_dtypes.bfloat16)
TOL = {np.dtype(np.float16): 3e-3, BF16: 2e-2, np.dtype(np.float32): 2e-5, np.dtype(np.float64): 1e-12}


# layernorm as a tile op: two row reductions (the variance reads the mean) and their neighbours
LAYERNORM = """
def layernorm(x: f16[M, N], g: f32[N], b: f32[N]) -> f16[M, N]:
    mu = mean(x, axis=1, keepdims=True)
    d = x - mu
    var = mean(d * d, axis=1, keepdims=True)
    return f16(d * rsqrt(var + 1e-5) * g + b)
"""


def module(src: str, target: str = "cpu"):
    return tlc.compile_source(src, target=target, path="ops.tl")


def rand(rng, shape, dtype=np.float32):
    return rng.standard_normal(shape).astype(np.float32).astype(dtype)


def rel_err(got, want) -> float:
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    return float(np.linalg.norm(got - want) / max(np.linalg.norm(want), 1e-30))


def assert_close(got, want, dtype=None):
    dtype = np.dtype(dtype or got.dtype)
    assert got.shape == want.shape, (got.shape, want.shape)
    assert not np.isnan(np.asarray(got, np.float64)).any()
    assert rel_err(got, want) < TOL.get(dtype, 0.0), rel_err(got, want)


def f32(a):
    return np.asarray(a, np.float32)


def gelu(h):
    return 0.5 * h * (1.0 + np.tanh(0.7978845608 * (h + 0.044715 * h ** 3)))


def softmax(x, axis):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def error_text(src: str, name: str, *args) -> str:
    mod = module(src)
    try:
        getattr(mod, name).program()
    except DiagnosticError as e:
        return render_all(e.diagnostics, e.sources)
    raise AssertionError("no error")
