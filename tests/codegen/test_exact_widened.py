"""A min, max or select of 16- or 8-bit floats that is wanted as a wider float is computed in
that float (codegen/cexpr.py `_exact_widened`): its value is one of its operands', so rounding it
to the narrow type first and widening it again changes nothing, and cost an F2FP and a
HADD2.F32 an element on sm_90a (std.elementwise's convert_sat of f16 to f8e4m3 clamped x in f16:
16.5 SASS instructions an element on the hot path at (16384, 8192), 11.6 so).  A conversion of
such a value to another type starts from the f32 value: a narrow float converts through f32."""
from __future__ import annotations

import numpy as np
import pytest

import tlc
from tlc.codegen import generate, generate_file
from tlc.driver import check_source
from tlc.schedule import schedule

SRC = """
@kernel
def widen(x: f16[N], y: f32[N], z: f16[N]):
    with grid(cdiv(N, 128), threads=128) as bx:
        for i in parallel(128):
            v = x[bx * 128 + i]
            y[bx * 128 + i] = f32(min(max(v, 0.5), 2.0)) * 3.0
            z[bx * 128 + i] = min(max(v, 0.5), 2.0) * v
"""


def test_a_narrow_min_of_max_is_computed_in_f32():
    checked = check_source(SRC, "widen.tl")
    assert checked.ok
    body = generate(schedule(checked.program, "widen", {}, target="sm_90a"), "sm_90a").source
    body = body[body.index("__global__"):]
    # y: all in f32; z: the min and max in half (exact: cexpr.py's __hmin / __hmax), the half
    # that __hmul_rn multiplies
    assert "tl::cvt<half>(fmaxf(" not in body and body.count("fminf(fmaxf(tl::cvt<float>(v)") == 1, body
    assert "__hmul_rn(__hmin(__hmax(v, " in body, body


def test_convert_sat_clamps_an_f16_in_f32():
    ew = tlc.load("std.elementwise", target="cpu")
    p = ew.convert_sat.program({"S": "f16", "D": "f8e4m3"}, "sm_90a", {"M": 64, "N": 64})
    text = generate_file(list(p.kernels), "sm_90a", line_directives=False)
    text = text[text.index("__global__"):]
    assert "tl::cvt<__nv_fp8_e4m3>(((tl::cvt<float>(x_tile[tl_r]) != tl::cvt<float>(x_tile[tl_r])) ? " \
           "tl::cvt<float>(x_tile[tl_r]) : fminf(fmaxf(tl::cvt<float>(x_tile[tl_r])" in text, text


@pytest.mark.parametrize("dst", ["f8e4m3", "f8e5m2", "i8"])
def test_convert_sat_of_f16_ends_and_nan(dst):
    """The values at and beyond the destination's ends, NaN and the infinities, on the cpu target
    (its C++ takes the same expressions)."""
    import ml_dtypes

    ew = tlc.load("std.elementwise", target="cpu")
    x = np.array([[-np.inf, -60000.0, -500.0, -448.0, -240.0, -128.5, -1.0, -0.0, 0.0, 1e-7, 127.25, 300.0,
                   448.0, 464.0, 57344.0, np.inf, np.nan]], np.float16)
    got = np.asarray(ew.convert_sat(x, S="f16", D=dst)).astype(np.float64)
    info = ml_dtypes.finfo(dst.replace("f8", "float8_") + ("fn" if dst == "f8e4m3" else "")) if dst != "i8" \
        else np.iinfo(np.int8)
    want = np.clip(x.astype(np.float64), float(info.min), float(info.max))
    if dst == "i8":  # NaN is 0 in an integer, as every conversion of tlc's; the rest truncated
        want = np.trunc(np.nan_to_num(want, nan=0.0))
    else:
        want = want.astype(getattr(ml_dtypes, dst.replace("f8", "float8_") + ("fn" if dst == "f8e4m3" else ""))) \
            .astype(np.float64)
    np.testing.assert_array_equal(got, want)
