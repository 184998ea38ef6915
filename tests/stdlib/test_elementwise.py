"""std.elementwise: every operator against NumPy (float64, from the very inputs the operator
read) on the interpreter, on ragged shapes, in each dtype its row names; one nvcc build of the
whole module per target.  The table (OPS, CASTS) is the list of tested operators: a row is an
operator's test, tests/gpu/test_elementwise_gpu.py runs the same rows on the GPU, and
stdlib/tested.json records which rows passed (test_registry), which `tlc ops` counts.
Tolerances: tests/stdlib/op_tolerances.py."""
from __future__ import annotations

import math
import zlib
from dataclasses import dataclass, field
from typing import Callable

import ml_dtypes
import numpy as np
import pytest

import tlc
from op_registry import check_or_record
from op_tolerances import EPS, assert_close, numpy_dtype

MODULE = "std.elementwise"
SHAPE = (37, 45)  # ragged: a multiple of no tile
FLOATS = ("f32", "f16", "bf16")
INTS = ("i32",)


def _sigmoid(x):
    return 1 / (1 + np.exp(-x))


def _softplus(x):
    return np.maximum(x, 0) + np.log1p(np.exp(-np.abs(x)))


_erf = np.vectorize(math.erf, otypes=[np.float64])
K = 0.7978845608028654  # sqrt(2 / pi)


def _gelu(x):
    return 0.5 * x * (1 + np.tanh(K * (x + 0.044715 * x ** 3)))


def _gelu_bwd(dy, x):
    t = np.tanh(K * (x + 0.044715 * x ** 3))
    return dy * (0.5 * (1 + t) + 0.5 * x * (1 - t * t) * K * (1 + 3 * 0.044715 * x * x))


def _elu(x, a):
    return np.where(x > 0, x, a * np.expm1(x))


def _fmod(a, b):
    return np.fmod(a, b)


@dataclass(frozen=True)
class Op:
    """One operator's test: its reference over float64 inputs (the scalars after them), the
    domain of each tensor input, the dtypes, and the scalar arguments."""
    name: str
    ref: Callable
    domains: tuple
    dtypes: tuple = FLOATS
    scalars: tuple = ()
    out: str = "T"  # the result's dtype: "T", or "bool"


def u(name, ref, domain="normal", dtypes=FLOATS, scalars=()):
    return Op(name, ref, (domain,), dtypes, scalars)


def b(name, ref, da="normal", db="normal", dtypes=FLOATS, out="T", scalars=()):
    return Op(name, ref, (da, db), dtypes, scalars, out)


ALL = FLOATS + INTS
OPS = [
    # unary math
    u("abs", np.abs, dtypes=ALL), u("neg", np.negative, dtypes=ALL), u("square", np.square, dtypes=ALL),
    u("sign", np.sign, "halves", dtypes=ALL), u("reciprocal", np.reciprocal, "nonzero"),
    u("exp", np.exp), u("exp2", np.exp2), u("expm1", np.expm1, "tiny"), u("log", np.log, "pos"),
    u("log2", np.log2, "pos"), u("log10", np.log10, "pos"), u("log1p", np.log1p, "tiny1p"),
    u("sqrt", np.sqrt, "pos"), u("rsqrt", lambda x: 1 / np.sqrt(x), "pos"), u("sin", np.sin), u("cos", np.cos),
    u("tan", np.tan, "unit"), u("atan", np.arctan, "wide"), u("asin", np.arcsin, "unit"),
    u("acos", np.arccos, "unit"), u("sinh", np.sinh, "tiny"), u("cosh", np.cosh), u("tanh", np.tanh),
    u("asinh", np.arcsinh, "wide"), u("acosh", np.arccosh, "ge1"), u("atanh", np.arctanh, "unit"),
    u("sigmoid", _sigmoid), u("erf", _erf), u("floor", np.floor, "halves"), u("ceil", np.ceil, "halves"),
    u("round", np.round, "halves"), u("trunc", np.trunc, "halves"),
    # activations
    u("relu", lambda x: np.maximum(x, 0), dtypes=ALL), u("relu6", lambda x: np.clip(x, 0, 6), "wide"),
    u("leaky_relu", lambda x, s: np.where(x >= 0, x, s * x), scalars=(0.1,)),
    u("elu", _elu, scalars=(1.3,)), u("selu", lambda x: 1.0507009873554805 * _elu(x, 1.6732632423543772)),
    u("celu", lambda x, a: np.maximum(x, 0) + np.minimum(a * np.expm1(x / a), 0), scalars=(0.7,)),
    u("gelu", _gelu), u("gelu_erf", lambda x: 0.5 * x * (1 + _erf(x / np.sqrt(2)))),
    u("quick_gelu", lambda x: x * _sigmoid(1.702 * x)), u("silu", lambda x: x * _sigmoid(x)),
    u("mish", lambda x: x * np.tanh(_softplus(x))), u("softplus", _softplus, "wide"),
    u("softsign", lambda x: x / (1 + np.abs(x))), u("hardsigmoid", lambda x: np.clip(x / 6 + 0.5, 0, 1)),
    u("hardswish", lambda x: x * np.clip(x + 3, 0, 6) / 6),
    u("hardtanh", lambda x, lo, hi: np.clip(x, lo, hi), scalars=(-1.5, 2.0)),
    u("logsigmoid", lambda x: -_softplus(-x), "wide"), u("tanhshrink", lambda x: x - np.tanh(x)),
    u("softshrink", lambda x, l: np.where(x > l, x - l, np.where(x < -l, x + l, 0)), scalars=(0.5,)),
    u("hardshrink", lambda x, l: np.where(np.abs(x) > l, x, 0), scalars=(0.5,)),
    u("threshold", lambda x, t, v: np.where(x > t, x, v), scalars=(0.3, -2.0)),
    u("relu_squared", lambda x: np.maximum(x, 0) ** 2),
    # backward of the activations: NAME_bwd(dy, x)
    b("relu_bwd", lambda dy, x: np.where(x > 0, dy, 0)),
    b("leaky_relu_bwd", lambda dy, x, s: np.where(x > 0, dy, s * dy), scalars=(0.1,)),
    b("sigmoid_bwd", lambda dy, x: dy * _sigmoid(x) * (1 - _sigmoid(x))),
    b("tanh_bwd", lambda dy, x: dy * (1 - np.tanh(x) ** 2)),
    b("silu_bwd", lambda dy, x: dy * _sigmoid(x) * (1 + x * (1 - _sigmoid(x)))),
    b("gelu_bwd", _gelu_bwd),
    b("gelu_erf_bwd", lambda dy, x: dy * (0.5 * (1 + _erf(x / np.sqrt(2))) + x * np.exp(-x * x / 2) / np.sqrt(2 * np.pi))),
    b("softplus_bwd", lambda dy, x: dy * _sigmoid(x)),
    b("elu_bwd", lambda dy, x, a: np.where(x > 0, dy, dy * a * np.exp(x)), scalars=(1.3,)),
    b("hardswish_bwd", lambda dy, x: dy * np.where(x <= -3, 0, np.where(x >= 3, 1, (2 * x + 3) / 6)), db="wide"),
    b("mish_bwd", lambda dy, x: dy * (np.tanh(_softplus(x)) + x * _sigmoid(x) * (1 - np.tanh(_softplus(x)) ** 2))),
    # binary
    b("add", np.add, dtypes=ALL), b("sub", np.subtract, dtypes=ALL), b("mul", np.multiply, dtypes=ALL),
    b("div", np.divide, db="nonzero"), b("floor_divide", np.floor_divide, db="nonzero", dtypes=ALL),
    b("remainder", np.remainder, db="nonzero", dtypes=ALL), b("fmod", _fmod, db="nonzero"),
    b("pow", np.power, "pos", "normal"), b("maximum", np.maximum, dtypes=ALL), b("minimum", np.minimum, dtypes=ALL),
    b("atan2", np.arctan2), b("hypot", np.hypot), b("copysign", np.copysign),
    # NumPy broadcasting: b along the rows (b[N]), along the columns (b[M, 1]), a scalar
    *(b(f"{name}_{kind}", fn, db=f"{db}@{kind}", dtypes=FLOATS if name == "div" else ALL)
      for name, fn, db in [("add", np.add, "normal"), ("sub", np.subtract, "normal"), ("mul", np.multiply, "normal"),
                           ("div", np.divide, "nonzero"), ("maximum", np.maximum, "normal"),
                           ("minimum", np.minimum, "normal")]
      for kind in ("row", "col")),
    u("add_scalar", lambda x, s: x + s, scalars=(0.375,)), u("mul_scalar", lambda x, s: x * s, scalars=(-1.25,)),
    *(b(name, fn, "halves", "halves", dtypes=ALL, out="bool")
      for name, fn in [("eq", np.equal), ("ne", np.not_equal), ("lt", np.less), ("le", np.less_equal),
                       ("gt", np.greater), ("ge", np.greater_equal)]),
    b("logical_and", np.logical_and, "bool", "bool", dtypes=("bool",)),
    b("logical_or", np.logical_or, "bool", "bool", dtypes=("bool",)),
    b("logical_xor", np.logical_xor, "bool", "bool", dtypes=("bool",)),
    u("logical_not", np.logical_not, "bool", dtypes=("bool",)),
    # ternary
    Op("where", lambda c, a, b: np.where(c, a, b), ("bool", "normal", "normal"), ALL),
    u("clamp", lambda x, lo, hi: np.clip(x, lo, hi), scalars=(-1.0, 2.0)),
    Op("clamp_tensor", lambda x, lo, hi: np.minimum(np.maximum(x, lo), hi), ("wide", "neg", "pos"), ALL),
    Op("lerp", lambda a, b, w: a + w * (b - a), ("normal", "normal", "unit")),
    Op("addcmul", lambda x, a, b, v: x + v * a * b, ("normal",) * 3, scalars=(0.75,)),
    Op("addcdiv", lambda x, a, b, v: x + v * a / b, ("normal", "normal", "nonzero"), scalars=(0.5,)),
]

# casts: every pair of these dtypes, in range (convert) and saturating out of range (convert_sat)
CAST_DTYPES = ("f64", "f32", "f16", "bf16", "f8e4m3", "f8e5m2", "i64", "i32", "i16", "i8", "u8")
CASTS = [(s, d) for s in CAST_DTYPES for d in CAST_DTYPES]


def arg_shape(domain: str, shape) -> tuple:
    """The shape of an argument over `domain`: "normal@row" is a row vector [N] broadcast along
    the rows of an [M, N] result, "normal@col" a column [M, 1]."""
    kind = domain.partition("@")[2]
    return {"": tuple(shape), "row": (shape[1],), "col": (shape[0], 1)}[kind]


def inputs(rng, domain: str, dtype: str, shape=SHAPE):
    """A tensor of `dtype` over `domain` (integers: the domain's values rounded)."""
    shape, domain = arg_shape(domain, shape), domain.partition("@")[0]
    n = int(np.prod(shape))
    if domain == "bool":
        return rng.random(shape) < 0.5
    base = {
        "normal": lambda: rng.standard_normal(n) * 2,
        "wide": lambda: rng.standard_normal(n) * 8,
        "nonzero": lambda: np.where(rng.random(n) < 0.5, -1, 1) * rng.uniform(0.25, 4, n),
        "pos": lambda: rng.uniform(0.05, 8, n),
        "neg": lambda: -rng.uniform(0, 4, n),
        "unit": lambda: rng.uniform(-0.95, 0.95, n),
        "bounded": lambda: rng.uniform(-8, 8, n),  # exp and cosh stay finite in f16
        "ge1": lambda: rng.uniform(1, 10, n),
        "halves": lambda: np.round(rng.standard_normal(n) * 6) / 2,  # ties for round and comparisons
        "tiny": lambda: np.where(rng.random(n) < 0.5, rng.standard_normal(n) * 1e-4, rng.standard_normal(n) * 2),
        "tiny1p": lambda: np.where(rng.random(n) < 0.5, rng.standard_normal(n) * 1e-4, rng.uniform(-0.9, 6, n)),
    }[domain]().reshape(shape)
    if dtype in ("i32", "i8"):
        scale = 1 if domain in ("halves", "nonzero", "pos", "neg", "ge1") else 4
        v = np.round(base * scale)
        if domain in ("nonzero", "pos", "ge1"):
            v = np.where(v == 0, 1, v)
        return v.astype(numpy_dtype(dtype))
    return base.astype(np.float32).astype(numpy_dtype(dtype))


def case(op: Op, dtype: str, rng, shape=SHAPE):
    """(tensor arguments, scalar arguments, float64 reference, the result's dtype name)."""
    args = [inputs(rng, d, "bool" if d == "bool" else dtype, shape) for d in op.domains]
    ref = op.ref(*(a.astype(np.float64) if a.dtype != np.bool_ else a for a in args), *op.scalars)
    out = "bool" if op.out == "bool" or dtype == "bool" else dtype
    return args, list(op.scalars), np.asarray(ref), out


def call(ew, op: Op, dtype: str, args, scalars):
    kw = {} if dtype == "bool" else {"T": dtype}
    return getattr(ew, op.name)(*args, *scalars, **kw)


def cast_case(src: str, dst: str, sat: bool, rng, shape=SHAPE):
    """(x, reference) of convert / convert_sat from `src` to `dst`: in range for convert (a
    conversion out of range is C's, not NumPy's), across the range's ends for convert_sat."""
    lo, hi = _range(src, dst)
    x = rng.uniform(lo, hi, shape)
    if sat:
        x = np.concatenate([x[:, :-6], np.tile([-1e9, 1e9, lo * 3, hi * 3, 0.5, -0.5], (shape[0], 1))], axis=1)
    x = _to(x, src)
    if not sat:  # rounding to src may leave dst's range (f8e4m3 rounds 127 up to 128)
        x[(x.astype(np.float64) < _finite(dst)[0]) | (x.astype(np.float64) > _finite(dst)[1])] = 0
    xf = x.astype(np.float64)
    if sat:
        dlo, dhi = _finite(dst)
        xf = np.clip(xf, dlo, dhi)
    want = xf.astype(numpy_dtype(dst)) if numpy_dtype(dst).kind in "iu" else xf
    return x, want


def _finite(name: str):
    dt = numpy_dtype(name)
    info = np.iinfo(dt) if dt.kind in "iu" else __import__("ml_dtypes").finfo(dt)
    return float(info.min), float(info.max)


def _range(src: str, dst: str):
    lo = max(_finite(src)[0], _finite(dst)[0], -1e4)
    hi = min(_finite(src)[1], _finite(dst)[1], 1e4)
    return lo, hi


def _to(x, name: str):
    dt = numpy_dtype(name)
    lo, hi = _finite(name)
    x = np.clip(x, lo, hi)
    return np.trunc(x).astype(dt) if dt.kind in "iu" else x.astype(np.float32).astype(dt)


# ---- the interpreter ------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def ew():
    return tlc.load(MODULE, target="cpu")


PASSED: dict[str, set] = {}


@pytest.mark.parametrize("op", OPS, ids=lambda o: o.name)
def test_op(ew, op):
    rng = np.random.default_rng(zlib.crc32(op.name.encode()))  # not hash(): salted per process
    for dtype in op.dtypes:
        args, scalars, ref, out = case(op, dtype, rng)
        got = call(ew, op, dtype, args, scalars)
        assert got.dtype == numpy_dtype(out), f"{op.name} {dtype}: result dtype {got.dtype}"
        assert_close(got, ref, op.name, out)
    PASSED.setdefault(op.name, set()).update(op.dtypes)


@pytest.mark.parametrize("sat", [False, True], ids=["convert", "convert_sat"])
def test_casts_between_every_pair(ew, sat):
    rng = np.random.default_rng(7)
    for src, dst in CASTS:
        x, want = cast_case(src, dst, sat, rng)
        got = getattr(ew, "convert_sat" if sat else "convert")(x, S=src, D=dst)
        assert got.dtype == numpy_dtype(dst)
        assert_close(got, want, "convert", dst, f" from {src}")
    PASSED.setdefault("convert_sat" if sat else "convert", set()).update(CAST_DTYPES)


def test_saturating_cast_keeps_nan(ew):
    x = np.array([[np.nan, 1e6, -1e6, 3.0]], np.float32)
    got = ew.convert_sat(x, S="f32", D="f8e4m3").astype(np.float32)
    assert np.isnan(got[0, 0]) and got[0, 1:].tolist() == [448.0, -448.0, 3.0]


def test_expm1_and_log1p_keep_their_accuracy_near_zero(ew):
    """The reason they exist: exp(x) - 1 would lose every digit at 1e-7."""
    x = np.array([[1e-7, -3e-6, 2e-4, 1e-30]], np.float32)
    x64 = x.astype(np.float64)
    np.testing.assert_allclose(ew.expm1(x), np.expm1(x64), rtol=4e-7)
    np.testing.assert_allclose(ew.log1p(x), np.log1p(x64), rtol=4e-7)


def test_sinh_and_atan_at_the_ends_of_f32(ew):
    """sinh is finite up to 89.4 (its two exponentials e^|x| / 2 and e^-|x| / 2 do not overflow
    before it does; expm1's u / (u + 1) made NaN of inf there), infinite beyond and at inf; atan
    of +-inf is +-pi/2 and NaN stays NaN."""
    x = np.array([[89.0, 89.4, -89.4, 89.5, np.inf, -np.inf, np.nan, 1e30]], np.float32)
    x64 = x.astype(np.float64)
    with np.errstate(over="ignore"):
        want = np.sinh(x64).astype(np.float32)
    got = ew.sinh(x)
    assert np.isnan(got[0, 6]) and got[0, 3:6].tolist() == [np.inf, np.inf, -np.inf]
    np.testing.assert_allclose(got[0, :3], want[0, :3], rtol=4e-7)
    got = ew.atan(x)
    assert np.isnan(got[0, 6]) and got[0, 4:6].tolist() == [np.float32(np.pi / 2), -np.float32(np.pi / 2)]
    np.testing.assert_allclose(got[0, [0, 1, 2, 3, 7]], np.arctan(x64[0, [0, 1, 2, 3, 7]]), rtol=4e-7)


def test_hypot_at_the_ends_of_each_float(ew):
    """hypot scales both operands by a power of two (hypot_f32): no overflow where the squares
    would overflow (1e30, 1.7e38) and no underflow where they would (1e-20, subnormals), inf where
    the result leaves the dtype or an operand is infinite (NaN or not), NaN from NaN otherwise,
    within 2 f32 ulp (the ops table's rows stay between -8 and 8); bf16 reaches the same ends."""
    a = np.array([[3e38, 1e30, 2e19, 1e-20, 1e-30, 1e-40, 1.4e-45, 0.0, -0.0, np.inf, np.nan, -np.inf, np.nan, 3.0,
                   1.7e38, 5e-39]], np.float32)
    b = np.array([[3e38, -1e30, 1.0, 3e-20, 1e-45, 3e-40, 0.0, 0.0, 0.0, np.nan, -np.inf, 2.0, 1.0, 4.0, 1.7e38,
                   1e-38]], np.float32)
    for T in ("f32", "bf16", "f16"):
        x, y = a.astype(numpy_dtype(T)), b.astype(numpy_dtype(T))
        with np.errstate(over="ignore"):
            want = np.hypot(x.astype(np.float64), y.astype(np.float64))
        got = ew.hypot(x, y).astype(np.float64)
        assert np.array_equal(np.isnan(got), np.isnan(want)), (T, got)
        assert np.isnan(got[0, 12]) and np.isinf(got[0, [9, 10, 11]]).all() and got[0, 13] == 5.0, (T, got)
        finite = np.isfinite(want) & (want < 3.4e38)
        assert np.isinf(got[~finite & ~np.isnan(want)]).all(), (T, got)
        # 2 ulp of T where the result is normal, its spacing (the smallest subnormal) below
        tiny = float(ml_dtypes.finfo(numpy_dtype(T)).smallest_subnormal)
        np.testing.assert_allclose(got[finite], want[finite], rtol=2 * EPS[T], atol=2 * tiny)


def test_the_dtype_parameters_come_from_the_arrays(ew):
    x = np.arange(12, dtype=np.float16).reshape(3, 4)
    assert ew.silu(x).dtype == np.float16 and ew.add(x.astype(np.int32), x.astype(np.int32)).dtype == np.int32
    assert ew.convert(x, D="bf16").dtype == numpy_dtype("bf16")


def test_any_rank_through_a_2d_view(ew):
    x = np.random.default_rng(1).standard_normal((3, 5, 7)).astype(np.float32)
    got = ew.silu(x.reshape(-1, 7)).reshape(x.shape)
    np.testing.assert_allclose(got, x / (1 + np.exp(-x.astype(np.float64))), rtol=1e-6, atol=1e-7)


# each backward, its forward and the forward's scalars; the points kept away from kinks
BACKWARDS = {"relu_bwd": ("relu", ()), "leaky_relu_bwd": ("leaky_relu", (0.1,)), "sigmoid_bwd": ("sigmoid", ()),
             "tanh_bwd": ("tanh", ()), "silu_bwd": ("silu", ()), "gelu_bwd": ("gelu", ()),
             "gelu_erf_bwd": ("gelu_erf", ()), "softplus_bwd": ("softplus", ()), "elu_bwd": ("elu", (1.3,)),
             "hardswish_bwd": ("hardswish", ()), "mish_bwd": ("mish", ())}
KINKS = (0.0, -3.0, 3.0)


def test_every_backward_is_listed_with_its_forward():
    assert set(BACKWARDS) == {op.name for op in OPS if op.name.endswith("_bwd")}


@pytest.mark.parametrize("bwd", BACKWARDS)
def test_backward_against_finite_differences_of_the_forward(ew, bwd):
    """NAME_bwd(dy, x) against dy * (NAME(x + h) - NAME(x - h)) / 2h of the forward's float64
    reference (the operators compute in f32 whatever T is, too coarse for a difference), and the
    forward operator against that reference: the backward is the derivative of what the forward
    computes."""
    fwd, scalars = BACKWARDS[bwd]
    ref = next(op.ref for op in OPS if op.name == fwd)
    rng = np.random.default_rng(zlib.crc32(bwd.encode()))
    x = rng.standard_normal((9, 31)) * 3
    x = np.where(np.min([np.abs(x - k) for k in KINKS], axis=0) < 1e-2, x + 0.1, x)
    dy = rng.standard_normal(x.shape)
    h = 1e-5
    x = x.astype(np.float32).astype(np.float64)
    assert_close(getattr(ew, fwd)(x.astype(np.float32), *scalars), ref(x, *scalars), fwd, "f32")
    fd = dy * (ref(x + h, *scalars) - ref(x - h, *scalars)) / (2 * h)
    got = getattr(ew, bwd)(dy.astype(np.float32), x.astype(np.float32), *scalars, T="f32")
    np.testing.assert_allclose(got, fd, rtol=1e-5, atol=1e-6 * np.abs(dy).max(), err_msg=bwd)


def test_copysign_and_atan2_read_the_sign_of_negative_zero(ew):
    a, b = np.array([[2.0, -3.0, 4.0]], np.float32), np.array([[-0.0, 0.0, -1.0]], np.float32)
    assert ew.copysign(a, b).tolist() == [[-2.0, 3.0, -4.0]]
    y, x = np.array([[-0.0, 0.0, -0.0, 1.0]], np.float32), np.array([[-1.0, -1.0, 2.0, -0.0]], np.float32)
    np.testing.assert_array_equal(ew.atan2(y, x), np.arctan2(y, x))


def test_backwards_at_a_kink_take_pytorchs_side(ew):
    """At x = 0 (which 2^27 f16 draws do hit) the gradient is PyTorch's: relu's and leaky_relu's
    that of x < 0, elu's the exponential's (alpha); at x = -3 and 3 hardswish's is that of the
    outer pieces, 0 and 1 (aten's hardswish_backward; the H200's bench run of 2^27 f16 draws
    found 24,356 elements at the kinks where the middle piece's -0.5 and 1.5 were taken)."""
    dy, x = np.ones((1, 1), np.float32), np.zeros((1, 1), np.float32)
    assert (ew.relu_bwd(dy, x)[0, 0], ew.leaky_relu_bwd(dy, x, 0.25)[0, 0], ew.elu_bwd(dy, x, 1.5)[0, 0]) == (0, 0.25, 1.5)
    for T in ("f32", "f16"):
        x = np.array([[-3.5, -3.0, -2.5, 2.5, 3.0, 3.5]], numpy_dtype(T))
        assert ew.hardswish_bwd(np.full_like(x, 2), x, T=T)[0, [0, 1, 4, 5]].tolist() == [0, 0, 2, 2], T


@pytest.mark.slow
@pytest.mark.parametrize("shape", [(1, 1), (1, 3000), (257, 3), (129, 513)])
def test_every_op_at_more_shapes(ew, shape):
    rng = np.random.default_rng(3)
    for op in OPS:
        for dtype in op.dtypes:
            args, scalars, ref, out = case(op, dtype, rng, shape)
            assert_close(call(ew, op, dtype, args, scalars), ref, op.name, out, f" at {shape}")


def test_registry():
    """stdlib/tested.json lists exactly the operators of this table, each row passed in this
    run (TLC_RECORD_TESTED=1 rewrites it after a full run; see tests/stdlib/op_registry.py)."""
    table = {op.name: set(op.dtypes) for op in OPS} | {"convert": set(CAST_DTYPES), "convert_sat": set(CAST_DTYPES)}
    check_or_record(MODULE, table, PASSED, __file__)


# ---- nvcc: the whole module, one build per target -----------------------------------------------------

@pytest.mark.nvcc
# the float builds are 25-35 s of nvcc each (110 kernels): the slow run, which CI makes
@pytest.mark.parametrize("arch,dtype", [pytest.param("sm_80", "f16", marks=pytest.mark.slow),
                                        pytest.param("sm_90a", "bf16", marks=pytest.mark.slow), ("sm_90a", "i32")])
def test_module_builds(tmp_path, arch, dtype):
    """Every operator in one .cu (with i32: those whose row tests integers), built by nvcc."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "codegen"))
    from nvcc import compile_object

    from tlc import runner

    ops = tuple(op.name for op in OPS if dtype in op.dtypes) if dtype == "i32" else ()
    defines = (f"T={dtype}",) if ops else (f"T={dtype}", "D=f8e4m3")
    source, _ = runner.build(MODULE, kernels=ops, defines=defines, arch=arch, emit="cu",
                             header=False, line_directives=True, shapes=(), dump=None)
    kernels = source.count("__global__")
    assert kernels >= (len(ops) if ops else len(OPS) + 2), kernels
    compile_object(source, arch, tmp_path, "elementwise")
