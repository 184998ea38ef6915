"""std.elementwise's atan, tan, erf, asinh, atanh, asin, acos, sin, cos, acosh and expm1 of f16 and
bf16 on the GPU take tl::fast_atan, fast_tan, fast_erf, fast_asinh, fast_atanh, fast_asin,
fast_acos, fast_sin, fast_cos, fast_acosh and fast_expm1 (the hardware's reciprocal, 2^x, log2
and square root, not the host stand-ins of
tests/codegen/test_fast_math16.py), and reciprocal of f16 fast_div_near (1 times MUFU.RCP's
reciprocal; of bf16 fast_div): on every finite 16-bit value, each result is the correctly
rounded one or, where that lies within 2^-15 of a tie, its neighbour."""
import math

import ml_dtypes
import numpy as np
import pytest

import tlc

pytestmark = pytest.mark.gpu

TARGET = "cuda"
REF = {"atan": np.arctan, "tan": np.tan, "erf": np.vectorize(math.erf, otypes=[np.float64]), "asinh": np.arcsinh,
       "atanh": np.arctanh, "asin": np.arcsin, "acos": np.arccos, "sin": np.sin, "cos": np.cos, "acosh": np.arccosh,
       "expm1": np.expm1, "reciprocal": lambda x: 1.0 / x}


@pytest.mark.parametrize("dtype", ["f16", "bf16"])
@pytest.mark.parametrize("name", list(REF))
def test_every_16_bit_value(name, dtype):
    np_dt = np.dtype(np.float16) if dtype == "f16" else np.dtype(ml_dtypes.bfloat16)
    x = np.arange(65536, dtype=np.uint16).view(np_dt).reshape(256, 256)
    x = np.where(np.isfinite(x.astype(np.float32)), x, np.zeros((), np_dt)).astype(np_dt)
    got = np.asarray(getattr(tlc.load("std.elementwise", target=TARGET), name)(x))
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):  # tan next to a pole: inf in f16; atanh: NaN beyond 1 (acosh below 1)
        want = REF[name](x.astype(np.float64))
        n = np.abs(_order(got) - _order(want.astype(np_dt)))
        tie_gap = np.abs(want - 0.5 * (got.astype(np.float64) + want.astype(np_dt).astype(np.float64)))
    nan = np.isnan(want)
    wrong = (np.isnan(got.astype(np.float32)) != nan) | (~nan & ((n > 1) | ((n == 1) & (tie_gap > 2.0 ** -15 * np.abs(want)))))
    assert not wrong.any(), (f"{name} {dtype}: {int(wrong.sum())} values off, e.g. x = "
                             f"{x[wrong][:4].astype(np.float32).tolist()}: {got[wrong][:4].astype(np.float32).tolist()}, "
                             f"want {want[wrong][:4].tolist()}")


@pytest.mark.parametrize("dtype", ["f16", "bf16"])
def test_atan2_of_every_16_bit_y(dtype):
    """atan2 (tl::fast_atan2_near of f16, fast_atan2 of bf16) of every finite y against four x
    each (the values rolled by 1, 61, 4099 and 32768 places: all signs and sizes), as above."""
    np_dt = np.dtype(np.float16) if dtype == "f16" else np.dtype(ml_dtypes.bfloat16)
    v = np.arange(65536, dtype=np.uint16).view(np_dt)
    v = np.where(np.isfinite(v.astype(np.float32)), v, np.zeros((), np_dt)).astype(np_dt)
    y = np.concatenate([v] * 4).reshape(1024, 256)
    x = np.concatenate([np.roll(v, k) for k in (1, 61, 4099, 32768)]).reshape(1024, 256)
    got = np.asarray(tlc.load("std.elementwise", target=TARGET).atan2(y, x))
    want = np.arctan2(y.astype(np.float64), x.astype(np.float64))
    n = np.abs(_order(got) - _order(want.astype(np_dt)))
    tie_gap = np.abs(want - 0.5 * (got.astype(np.float64) + want.astype(np_dt).astype(np.float64)))
    wrong = (n > 1) | ((n == 1) & (tie_gap > 2.0 ** -15 * np.abs(want)))
    assert not wrong.any(), (f"atan2 {dtype}: {int(wrong.sum())} values off, e.g. (y, x) = "
                             f"{list(zip(y[wrong][:4].astype(np.float32).tolist(), x[wrong][:4].astype(np.float32).tolist()))}: "
                             f"{got[wrong][:4].astype(np.float32).tolist()}, want {want[wrong][:4].tolist()}")


def _order(v):
    """16-bit floats as integers in their order (-0 and 0 one)."""
    u = v.view(np.uint16).astype(np.int32)
    return np.where(u & 0x8000, -(u & 0x7FFF), u)
