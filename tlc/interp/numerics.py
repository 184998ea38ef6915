"""Scalar semantics of the interpreter, applied element-wise to NumPy arrays.

Owns how each IR operator, math builtin and cast computes, matching what the GPU does:
- float -> float rounds to nearest even (NumPy / ml_dtypes casts); into f8 it saturates to the
  largest finite value, as CUDA's `__nv_fp8_*` constructors do (`__NV_SATFINITE`);
- float -> int truncates toward zero and saturates, NaN gives 0 (PTX `cvt.rzi.sat`);
  int -> int wraps (into i4 and u4 too: 4 bits); anything -> bool is `!= 0`;
- into e8m0, |x| rounds up to a power of two, clipped to 2^-127 .. 2^127, NaN kept (to_e8m0);
- f16, bf16 and f8 arithmetic and math compute in f32 and round to the result dtype after each
  operation, as `half` operators do; f32 computes in f32, f64 in f64, integers wrap;
- `/` on integers truncates (C), `//` floors and `%` takes the divisor's sign (Python); an
  integer division or remainder by zero is undefined in C: here it gives 0 and carries on;
- `min`/`max` on floats ignore a NaN operand (`fminf`/`fmaxf`); `round` is half-to-even
  (`rintf`), as Python's `round`.
Values are NumPy arrays or NumPy scalars whose NumPy dtype is the IR dtype's `numpy_dtype`.
"""
from __future__ import annotations

import math
import numpy as np

from ..dtypes import BOOL, DTYPES, F64, DType, promote

_LOW_FLOATS = ("f16", "bf16", "f8e4m3", "f8e5m2", "e8m0")
_F8_MAX = {"f8e4m3": 448.0, "f8e5m2": 57344.0}
# 4-bit integers compute in 8 bits and wrap back to 4 (ml_dtypes' int4 arrays have no bit operations)
_NARROW_INT_WORK = {"i4": np.dtype(np.int8), "u4": np.dtype(np.uint8)}


# plain dicts keyed by name: these run for every operation, and hashing a DType is slower
_NP = {name: dt.numpy() for name, dt in DTYPES.items()}
_WORK = {name: np.dtype(np.float32) if name in _LOW_FLOATS else _NARROW_INT_WORK.get(name, d)
         for name, d in _NP.items()}
_OF_NP = {d: DTYPES[name] for name, d in _NP.items()}


def np_dtype(dt: DType) -> np.dtype:
    return _NP[dt.name]


def dtype_of(x) -> DType:
    """The IR dtype of a value the interpreter holds."""
    return _OF_NP[x.dtype]


def work_dtype(dt: DType) -> np.dtype:
    """The NumPy dtype that arithmetic of result dtype `dt` runs in."""
    return _WORK[dt.name]


def const(value, dt: DType):
    if dt.is_int and isinstance(value, int) and not isinstance(value, bool):
        # a literal that the dtype cannot hold (`x & 255` of an i8 x) wraps, as the generated
        # code's does (codegen/cnames.literal); NumPy would raise OverflowError
        value = dt.wrap(value)
    return np_dtype(dt).type(value)


def cast(x, dt: DType):
    """`x` converted to `dt` as a C cast on the GPU converts it (see the module docstring)."""
    target = _NP[dt.name]
    if x.dtype == target:
        return x
    src = dtype_of(x)
    if dt.is_bool:
        return x != 0
    if dt.is_float:
        if dt.name == "e8m0":
            return to_e8m0(x)
        if dt.name in _F8_MAX:  # ml_dtypes turns overflow into NaN; CUDA saturates
            lim = _F8_MAX[dt.name]
            x = np.clip(x.astype(np.float32), -lim, lim)
        return x.astype(target)
    if src.is_float:
        lo, hi = int_range(dt)
        v = np.trunc(x.astype(np.float64))
        over, under = v >= float(hi), v <= float(lo)
        bad = over | under | np.isnan(v)
        safe = np.where(bad, 0.0, v).astype(target)
        return np.where(over, hi, np.where(under, lo, safe)).astype(target)
    if dt.packed and not src.is_bool:  # ml_dtypes wraps from its own 8-bit and wider integers
        return x.astype(np.int64).astype(target)
    return x.astype(target)


def int_range(dt: DType) -> tuple[int, int]:
    if dt.kind == "int":
        return -(1 << (dt.bits - 1)), (1 << (dt.bits - 1)) - 1
    return 0, (1 << dt.bits) - 1


def to_e8m0(x):
    """Values converted to e8m0 as CUDA's `__nv_fp8_e8m0(float)` converts them: |x| rounded up
    to a power of two (cudaRoundPosInf), clipped to 2^-127 .. 2^127 (__NV_SATFINITE: 0 gives
    2^-127, inf 2^127), NaN stays NaN (0xFF)."""
    import ml_dtypes

    f = np.abs(np.asarray(x).astype(np.float32))
    bits = f.view(np.uint32).astype(np.int64)
    exp, man = bits >> 23, bits & 0x7FFFFF
    # a normal 2^(e - 127) * 1.m rounds up to byte e + (m != 0); below 2^-126 (e = 0) the
    # value m * 2^-149 rounds up to 2^-127 (byte 0) or 2^-126 (byte 1)
    byte = np.where(exp == 0, (man > (1 << 22)).astype(np.int64), exp + (man != 0))
    byte = np.where(np.isnan(f), 255, np.minimum(byte, 254))
    return byte.astype(np.uint8).view(ml_dtypes.float8_e8m0fnu)


def _int_divide(x, y, floor: bool):
    zero = y == 0
    ys = np.where(zero, 1, y).astype(x.dtype)
    q = np.floor_divide(x, ys)
    if not floor:  # floor -> toward zero where the exact quotient was negative and inexact
        q = q + ((x - q * ys != 0) & ((x < 0) != (ys < 0))).astype(x.dtype)
    return np.where(zero, 0, q).astype(x.dtype)


def _int_mod(x, y):
    zero = y == 0
    r = np.remainder(x, np.where(zero, 1, y).astype(x.dtype))
    return np.where(zero, 0, r).astype(x.dtype)


def _int_pow(x, y):
    neg = y < 0
    r = np.power(x, np.where(neg, 0, y).astype(y.dtype))
    if x.dtype.kind == "u":  # no negative exponent; a u64 meeting the int64 below would go through f64
        return r
    # a negative exponent truncates 1 / x**n to 0 unless |x| is 1
    odd = (y % 2) != 0
    frac = np.where(x == 1, 1, np.where(x == -1, np.where(odd, -1, 1), 0))
    return np.where(neg, frac, r).astype(x.dtype)


_FLOAT_ARITH = {
    "+": np.add, "-": np.subtract, "*": np.multiply, "/": np.true_divide,
    "//": np.floor_divide, "%": np.remainder, "**": np.power, "min": np.fmin, "max": np.fmax,
}
_INT_ARITH = {
    "+": np.add, "-": np.subtract, "*": np.multiply,
    "/": lambda x, y: _int_divide(x, y, floor=False),
    "//": lambda x, y: _int_divide(x, y, floor=True),
    "%": _int_mod, "**": _int_pow, "min": np.minimum, "max": np.maximum,
    "<<": np.left_shift, ">>": np.right_shift,
    "&": np.bitwise_and, "|": np.bitwise_or, "^": np.bitwise_xor,
}
_COMPARE = {"==": np.equal, "!=": np.not_equal, "<": np.less, "<=": np.less_equal,
            ">": np.greater, ">=": np.greater_equal}


def _to_work(x, dt: DType):
    """`x` converted to `dt`, then widened to the dtype arithmetic on `dt` runs in."""
    x = cast(x, dt)
    w = _WORK[dt.name]
    return x if x.dtype == w else x.astype(w)


# The operators and dtypes `binop` can run directly on operands already of the result's NumPy
# dtype: arithmetic of a dtype that computes in its own NumPy dtype (f32, f64, the 8- to 64-bit
# integers), where `_to_work` and `cast` would give the operands back unchanged.  Most of an
# interpreted kernel's operations (index arithmetic on i32) are these; `binop`'s general path gives
# the same values through four casts and two table lookups.
_DIRECT = {(op, name): fn
           for name, dt in DTYPES.items() if not dt.is_bool and _WORK[name] == _NP[name]
           for op, fn in (_FLOAT_ARITH if dt.is_float else _INT_ARITH).items()}
# the NumPy dtypes whose IR dtype computes in them: a comparison of two such operands of one
# dtype compares them as they are (`promote` of a dtype with itself is that dtype)
_DIRECT_COMPARE = frozenset(d for d, dt in _OF_NP.items() if _WORK[dt.name] == d)


def binop(op: str, a, b, dt: DType):
    """`a OP b` with result dtype `dt` (bool for comparisons and `and`/`or`)."""
    fn = _DIRECT.get((op, dt.name))
    if fn is not None:
        target = _NP[dt.name]
        if a.dtype == target and b.dtype == target:
            r = fn(a, b)
            return r if r.dtype == target else cast(r, dt)
    compare = _COMPARE.get(op)
    if compare is not None and a.dtype == b.dtype and a.dtype in _DIRECT_COMPARE:
        return compare(a, b)
    if op in _COMPARE:
        ct = promote(dtype_of(a), dtype_of(b))
        return _COMPARE[op](_to_work(a, ct), _to_work(b, ct))
    if op == "and":
        return np.logical_and(cast(a, dt), cast(b, dt))
    if op == "or":
        return np.logical_or(cast(a, dt), cast(b, dt))
    if dt.is_bool and op in ("&", "|", "^"):
        return _INT_ARITH[op](cast(a, dt), cast(b, dt))
    x, y = _to_work(a, dt), _to_work(b, dt)
    table = _FLOAT_ARITH if dt.is_float else _INT_ARITH
    return cast(table[op](x, y), dt)


def unop(op: str, x, dt: DType):
    if op == "not":
        return np.logical_not(cast(x, dt))
    if op == "~":
        return cast(np.invert(_to_work(x, dt)), dt)
    return cast(np.negative(_to_work(x, dt)), dt)


def _erf(x):
    # NumPy has no erf; math.erf per element is exact and tile-sized arrays keep it cheap
    out = np.frompyfunc(math.erf, 1, 1)(x)
    return np.asarray(out, dtype=x.dtype)


_MATH = {
    "exp": np.exp, "exp2": np.exp2, "fast_exp2": np.exp2, "fast_log2": np.log2, "fast_log1p": np.log1p, "fast_pow": np.power, "fast_pow_near": np.power, "fast_pow_rare": np.power, "fast_pow_near_rare": np.power, "fast_div": np.divide, "fast_div_near": np.divide, "fast_sqrt": np.sqrt, "log": np.log, "log2": np.log2, "log1p": np.log1p, "sqrt": np.sqrt,
    "rsqrt": lambda x: np.reciprocal(np.sqrt(x)), "tanh": np.tanh, "fast_tanh": np.tanh,
    "sigmoid": lambda x: np.reciprocal(1 + np.exp(-x)), "erf": _erf, "fast_erf": _erf, "sin": np.sin, "tan": np.tan, "fast_tan": np.tan, "fast_tan_near": np.tan,
    "fast_sin": np.sin, "fast_sin_near": np.sin, "fast_cos": np.cos, "fast_cos_near": np.cos,
    "atan": np.arctan, "fast_atan": np.arctan, "asinh": np.arcsinh, "fast_asinh": np.arcsinh, "fast_asinh_near": np.arcsinh,
    "atanh": np.arctanh, "fast_atanh": np.arctanh, "asin": np.arcsin, "fast_asin": np.arcsin,
    "acos": np.arccos, "fast_acos": np.arccos, "acosh": np.arccosh, "fast_acosh": np.arccosh,
    "fast_acosh_near": np.arccosh,
    "expm1": np.expm1, "fast_expm1": np.expm1,
    "cos": np.cos, "abs": np.abs, "floor": np.floor, "ceil": np.ceil, "round": np.rint,
    "pow": np.power, "fmod": np.fmod, "atan2": np.arctan2, "fast_atan2": np.arctan2, "fast_atan2_near": np.arctan2,
}


def bitcast(x, dt: DType):
    """The bits of `x` read as `dt`, of the same width (TileLang's reinterpret)."""
    arr = np.asarray(x)
    out = arr.view(_NP[dt.name])
    return out if arr.ndim else out[()]


def call(fn: str, args, dt: DType):
    """A math builtin with result dtype `dt`; its arguments are converted to `dt` first."""
    if fn == "bitcast":
        return bitcast(args[0], dt)
    if dt.is_float:
        return cast(_MATH[fn](*(_to_work(a, dt) for a in args)), dt)
    if fn in ("floor", "ceil", "round"):  # already whole numbers
        return cast(args[0], dt)
    if fn == "abs":
        return np.abs(cast(args[0], dt))
    if fn == "pow":
        return binop("**", args[0], args[1], dt)
    # a float function asked for an integer result: compute in f64, then convert as C does
    return cast(_MATH[fn](*(_to_work(a, F64) for a in args)), dt)


def select(cond, a, b, dt: DType):
    return np.where(cast(cond, BOOL), cast(a, dt), cast(b, dt))


def accumulate_dtype(dt: DType) -> np.dtype:
    """The dtype gemm and reduce_sum accumulate `dt` values in: f32 for floats up to 32 bits,
    f64 for f64, i32 for 8- and 16-bit integers, i64 for wider ones."""
    if dt.is_float:
        return np.dtype(np.float64) if dt.bits == 64 else np.dtype(np.float32)
    return np.dtype(np.int64) if dt.bits > 16 else np.dtype(np.int32)

