"""Tolerances of the std operators' tests, per dtype and per operator, in one place, and the
comparison every table-driven std test uses (std.elementwise, std.reduce, std.data, ...).

A result of dtype T is compared with a float64 NumPy reference computed from the very inputs the
operator read (already rounded to T).  An operator computes in f32 and rounds once to T, so its
error is its f32 function's error plus half a unit of T:

    |got - want| <= rtol * |want| + atol,  rtol = ulps * eps(T),  atol = ulps * eps(T) * scale

eps(T) is the spacing of T's values at 1 (2^-10 for f16, 2^-7 bf16, 2^-23 f32, 2^-3 f8e4m3);
`ulps` is the operator's (OP_ULPS, default DEFAULT_ULPS) for f32 and at least 1 for narrower
floats (rounding to T dominates there); `scale` is the size of values near which absolute
error stops shrinking (ATOL_SCALE, default 1: sin near pi, a difference near 0).  Integers and
booleans: exact.  A module's test adds its operators to OP_ULPS / ATOL_SCALE here, not in its
own file, so that the numbers are reviewed together.
"""
from __future__ import annotations

import ml_dtypes
import numpy as np

BF16 = np.dtype(ml_dtypes.bfloat16)
F8E4M3 = np.dtype(ml_dtypes.float8_e4m3fn)
F8E5M2 = np.dtype(ml_dtypes.float8_e5m2)

# tlc dtype names <-> NumPy dtypes (ml_dtypes for bf16 and f8)
NUMPY = {"f64": np.dtype(np.float64), "f32": np.dtype(np.float32), "f16": np.dtype(np.float16), "bf16": BF16,
         "f8e4m3": F8E4M3, "f8e5m2": F8E5M2, "i64": np.dtype(np.int64), "i32": np.dtype(np.int32),
         "i16": np.dtype(np.int16), "i8": np.dtype(np.int8), "u8": np.dtype(np.uint8), "u32": np.dtype(np.uint32),
         "bool": np.dtype(np.bool_)}

EPS = {"f64": 2.0 ** -52, "f32": 2.0 ** -23, "f16": 2.0 ** -10, "bf16": 2.0 ** -7, "f8e4m3": 2.0 ** -3,
       "f8e5m2": 2.0 ** -2}

DEFAULT_ULPS = 2
# f32 units an operator may be off by (its own function's error; the narrow dtypes take at least 1)
OP_ULPS = {
    # std.elementwise: composed functions (a few operations, each rounded)
    "expm1": 4, "log1p": 4, "log10": 3, "tan": 6, "atan": 3, "asin": 6, "acos": 6, "sinh": 6, "cosh": 3,
    "asinh": 6, "acosh": 6, "atanh": 8, "atan2": 4, "hypot": 3, "pow": 4, "mish": 8, "softplus": 4,
    "logsigmoid": 4, "elu": 4, "selu": 4, "celu": 4, "gelu": 8, "gelu_erf": 4, "silu": 4, "quick_gelu": 4,
    "sigmoid": 4, "tanhshrink": 4, "lerp": 4, "addcmul": 4, "addcdiv": 4, "hardswish": 3,
    "sigmoid_bwd": 8, "tanh_bwd": 8, "silu_bwd": 8, "gelu_bwd": 16, "gelu_erf_bwd": 8, "softplus_bwd": 4,
    "elu_bwd": 4, "mish_bwd": 16,
    # std.reduce (test_reduce compares sums in units of the magnitudes they add): f32 trees over
    # up to 1e5 elements; a scan's tiles carry one into the next; a product of n factors
    # rounds n times (about sqrt(n) units, 9000 factors on the GPU)
    "sum": 16, "mean": 16, "norm_l1": 16, "norm_l2": 16, "var": 16, "std": 16, "logsumexp": 8,
    "cumsum": 32, "prod": 256, "cumprod": 256,
    # std.nn_train (test_nn_train: rows of up to 200 elements, weight gradients summed over up
    # to 11 rows): a log-sum-exp or a row's sums in f32 (a few units of the row's magnitude,
    # ATOL_SCALE below, where the result cancels); rope, the GLUs and a gather: one function
    "log_softmax": 8, "softmax_bwd": 8, "log_softmax_bwd": 8, "rms_norm_bwd": 16, "rms_norm_bwd.dweight": 16,
    "layer_norm_bwd": 16, "layer_norm_bwd.dweight": 16, "add_rms_norm": 4, "cross_entropy": 8,
    "cross_entropy_bwd": 8, "embedding": 0, "embedding_bwd": 8, "rope": 4, "glu": 8, "glu_bwd": 16,
    "batch_norm": 4, "group_norm": 16, "add_layer_norm": 8,
    # std.moe: K weighted rows added in f32 (FMAs on the GPU), whose sum can cancel: units of the
    # terms' size (ATOL_SCALE)
    "moe_unpermute": 8,
}
# where absolute error stops shrinking with the result (a multiple of eps(T))
ATOL_SCALE = {
    "sin": 4, "cos": 4, "tan": 4, "tanhshrink": 2, "gelu": 2, "gelu_erf": 2, "silu": 1, "mish": 2,
    "quick_gelu": 2, "lerp": 4, "addcmul": 4, "addcdiv": 4, "gelu_bwd": 2, "gelu_erf_bwd": 2, "mish_bwd": 2,
    "silu_bwd": 2, "sigmoid_bwd": 1, "tanh_bwd": 1, "hypot": 1, "asin": 1, "acos": 1, "atan2": 1,
    "log_softmax": 16, "softmax_bwd": 2, "log_softmax_bwd": 4, "rms_norm_bwd": 8, "rms_norm_bwd.dweight": 16,
    "layer_norm_bwd": 8, "layer_norm_bwd.dweight": 16, "add_rms_norm": 2, "cross_entropy": 16,
    "cross_entropy_bwd": 2, "embedding_bwd": 8, "rope": 4, "glu": 4, "glu_bwd": 8, "batch_norm": 2, "group_norm": 4,
    "add_layer_norm": 4, "moe_unpermute": 8,
}


def numpy_dtype(name: str) -> np.dtype:
    return NUMPY[name]


# the tables' rows and reductions are at most this long; the units above are for those
CALIBRATED_TERMS = 256


def tolerance(op: str, dtype: str, terms: int = 1) -> tuple[float, float]:
    """(rtol, atol) of operator `op`'s result of dtype `dtype` (a tlc name: "f16"); `terms`: how
    many values the result sums where that is more than the tables' CALIBRATED_TERMS (a row of
    10000, a weight gradient over 32768 positions): a sum's rounding error grows as the square
    root of its length."""
    if dtype not in EPS:
        return 0.0, 0.0
    ulps = OP_ULPS.get(op, DEFAULT_ULPS) * max(1.0, (terms / CALIBRATED_TERMS) ** 0.5)
    if dtype != "f32" and dtype != "f64":
        ulps = max(1.0, ulps * EPS["f32"] / EPS[dtype] * 4)  # rounding to T, plus f32's error seen through it
    rtol = ulps * EPS[dtype]
    return rtol, rtol * ATOL_SCALE.get(op, 1)


def assert_close(got, want, op: str, dtype: str, where: str = "", terms: int = 1) -> None:
    """`got` (an operator's result of dtype `dtype`) against the float64 reference `want`:
    shape, NaN positions and the tolerance above, with the worst element in the message."""
    got = np.asarray(got)
    want = np.asarray(want)
    assert got.shape == want.shape, f"{op} {dtype}{where}: shape {got.shape}, the reference's {want.shape}"
    if dtype not in EPS:
        np.testing.assert_array_equal(got, want.astype(got.dtype), err_msg=f"{op} {dtype}{where}")
        return
    g, w = got.astype(np.float64), want.astype(np.float64)
    # the reference rounded to the result's dtype: overflow to inf and tiny values agree with T
    with np.errstate(over="ignore"):
        w_t = w.astype(numpy_dtype(dtype)).astype(np.float64)
    nan = np.isnan(w)
    assert (np.isnan(g) == nan).all(), f"{op} {dtype}{where}: NaN at {np.argwhere(np.isnan(g) != nan)[:3].tolist()}"
    inf = np.isinf(w_t) & ~nan
    assert (g[inf] == w_t[inf]).all(), f"{op} {dtype}{where}: infinities differ"
    ok = ~nan & ~inf
    rtol, atol = tolerance(op, dtype, terms)
    err = np.abs(g[ok] - w[ok])
    bound = rtol * np.abs(w[ok]) + atol
    if err.size and (err > bound).any():
        i = int(np.argmax(err - bound))
        raise AssertionError(f"{op} {dtype}{where}: {int((err > bound).sum())} of {err.size} elements off; worst: "
                             f"got {g[ok][i]!r}, want {w[ok][i]!r} (error {err[i]:.3g}, bound {bound[i]:.3g}: "
                             f"rtol {rtol:.3g}, atol {atol:.3g})")
