"""Element semantics: casts, rounding per operation, integer division, math builtins."""
import math

import ml_dtypes
import numpy as np
import pytest

from interp_kit import c, kernel, ld, op, tensor, v
from tlc.dtypes import BF16, BOOL, DTYPES, F16, F32, I32
from tlc.interp import numerics as nx
from tlc.interp import run_kernel
from tlc.ir import Parallel, Store

I8, U8, I64, F64, E4M3, E5M2 = (DTYPES[n] for n in ("i8", "u8", "i64", "f64", "f8e4m3", "f8e5m2"))


@pytest.fixture(autouse=True)
def _quiet():
    # run_kernel runs under this errstate: overflow and division by zero are values, not warnings
    with np.errstate(all="ignore"):
        yield


def a(values, dtype):
    return np.array(values, dtype.numpy())


def test_float_to_int_truncates_toward_zero_and_saturates():
    x = a([2.7, -2.7, 0.5, -0.5, 1e10, -1e10, np.nan, np.inf], F32)
    assert nx.cast(x, I32).tolist() == [2, -2, 0, 0, 2**31 - 1, -2**31, 0, 2**31 - 1]
    assert nx.cast(a([300.0, -3.5], F16), U8).tolist() == [255, 0]
    assert nx.cast(a([2.0**63, -2.0**70], F64), I64).tolist() == [2**63 - 1, -2**63]


def test_int_to_int_wraps_and_to_bool_tests_nonzero():
    assert nx.cast(a([300, -129], I32), I8).tolist() == [44, 127]
    assert nx.cast(a([0.0, -0.0, 0.1, np.nan], F32), BOOL).tolist() == [False, False, True, True]


def test_float_narrowing_rounds_to_nearest_even():
    # 1 + 2**-11 is halfway between two f16 values: ties go to the even one (1.0)
    x = a([1 + 2.0**-11, 1 + 3 * 2.0**-11, 70000.0], F32)
    assert nx.cast(x, F16).tolist() == [1.0, 1.0 + 2.0**-9, np.inf]
    assert nx.cast(a([1 + 2.0**-8], F32), BF16).astype(np.float32).tolist() == [1.0]


def test_f8_saturates_like_cuda_satfinite():
    x = a([1000.0, -1e6, np.inf, 1.0], F32)
    assert nx.cast(x, E4M3).astype(np.float32).tolist() == [448.0, -448.0, 448.0, 1.0]
    assert nx.cast(a([1e6], F32), E5M2).astype(np.float32).tolist() == [57344.0]
    assert np.isnan(nx.cast(a([np.nan], F32), E4M3).astype(np.float32)).all()


def test_half_arithmetic_rounds_after_every_operation():
    # (2048 + 1) + 1 in f16: each add rounds 2049 down to 2048; f32 once would give 2050
    x, one = a([2048.0], F16), a([1.0], F16)
    once = nx.binop("+", nx.binop("+", x, one, F16), one, F16)
    assert once.dtype == np.float16 and once.tolist() == [2048.0]
    bx, bone = a([256.0], BF16), a([1.0], BF16)
    assert nx.binop("+", nx.binop("+", bx, bone, BF16), bone, BF16).astype(np.float32).tolist() == [256.0]
    rng = np.random.default_rng(0)
    p, q = rng.uniform(-9, 9, 1000).astype(np.float16), rng.uniform(-9, 9, 1000).astype(np.float16)
    for o, f in (("*", np.multiply), ("/", np.divide), ("-", np.subtract)):
        ref = f(p.astype(np.float32), q.astype(np.float32)).astype(np.float16)
        np.testing.assert_array_equal(nx.binop(o, p, q, F16), ref)


def test_integer_division_c_truncates_python_floors_and_zero_gives_zero():
    x, y = a([7, -7, 7, -7, 5, -2**31], I32), a([2, 2, -2, -2, 0, -1], I32)
    assert nx.binop("/", x, y, I32).tolist() == [3, -3, -3, 3, 0, -2**31]
    assert nx.binop("//", x, y, I32).tolist() == [3, -4, -4, 3, 0, -2**31]
    assert nx.binop("%", x, y, I32).tolist() == [1, 1, -1, -1, 0, 0]


def test_float_floor_division_and_modulo_follow_python():
    x, y = a([7.5, -7.5], F32), a([2.0, 2.0], F32)
    assert nx.binop("//", x, y, F32).tolist() == [3.0, -4.0]
    assert nx.binop("%", x, y, F32).tolist() == [1.5, 0.5]
    assert nx.binop("/", a([1.0], F32), a([0.0], F32), F32).tolist() == [np.inf]


def test_integer_power_with_negative_exponents_truncates():
    x, y = a([2, 1, -1, -1, 3, 0], I32), a([-1, -5, -3, -2, 4, 0], I32)
    assert nx.binop("**", x, y, I32).tolist() == [0, 1, -1, 1, 81, 1]


def test_min_max_ignore_nan_and_comparisons_promote():
    x, y = a([np.nan, 1.0], F32), a([2.0, np.nan], F32)
    assert nx.binop("max", x, y, F32).tolist() == [2.0, 1.0]
    assert nx.binop("min", a([3, -3], I32), a([1, 1], I32), I32).tolist() == [1, -3]
    # i32 compared with f32 compares as f32, the promoted type
    assert nx.binop("<", a([1], I32), a([1.5], F32), BOOL).tolist() == [True]


def test_bit_operations_and_shifts():
    x = a([-8, 5], I32)
    assert nx.binop(">>", x, a([1, 1], I32), I32).tolist() == [-4, 2]
    assert nx.binop("<<", x, a([2, 30], I32), I32).tolist() == [-32, 1 << 30]  # bit 32 drops
    assert nx.binop("^", x, a([1, 1], I32), I32).tolist() == [-7, 4]
    assert nx.unop("~", x, I32).tolist() == [7, -6]
    assert nx.unop("not", a([True, False], BOOL), BOOL).tolist() == [False, True]


@pytest.mark.parametrize("fn, ref", [
    ("exp", np.exp), ("exp2", np.exp2), ("log", np.log), ("log2", np.log2), ("sqrt", np.sqrt),
    ("rsqrt", lambda x: 1 / np.sqrt(x)), ("tanh", np.tanh), ("fast_tanh", np.tanh),
    ("sigmoid", lambda x: 1 / (1 + np.exp(-x))),
    ("erf", np.vectorize(math.erf)), ("sin", np.sin), ("cos", np.cos), ("abs", np.abs),
    ("floor", np.floor), ("ceil", np.ceil), ("round", np.rint)])
@pytest.mark.parametrize("dtype", [F32, F16])
def test_math_builtins_match_numpy_in_the_result_precision(fn, ref, dtype):
    x = np.random.default_rng(1).uniform(0.1, 4.0, 200).astype(dtype.numpy())
    got = nx.call(fn, [x], dtype)
    assert got.dtype == dtype.numpy()
    want = ref(x.astype(np.float64)).astype(dtype.numpy())
    ulp = 2.0**-10 if dtype == F16 else 2.0**-22
    np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=ulp, atol=ulp)


def test_round_is_half_to_even_and_pow_takes_two_arguments():
    assert nx.call("round", [a([0.5, 1.5, 2.5, -0.5], F32)], F32).tolist() == [0.0, 2.0, 2.0, -0.0]
    assert nx.call("pow", [a([2.0], F32), a([10.0], F32)], F32).tolist() == [1024.0]
    assert nx.call("abs", [a([-3], I32)], I32).tolist() == [3]


def test_division_by_zero_inside_a_kernel_carries_on():
    i = v("i")
    body = [Parallel(("i",), (4,), [
        Store("q", (i,), op("/", ld("x", i, dtype=I32), ld("d", i, dtype=I32))),
        Store("r", (i,), op("%", ld("x", i, dtype=I32), ld("d", i, dtype=I32))),
    ])]
    k = kernel([tensor(n_, I32, 4) for n_ in ("x", "d", "q", "r")], body)
    x, d = np.array([7, 7, -9, 5], np.int32), np.array([2, 0, 4, 0], np.int32)
    q, r = np.full(4, 9, np.int32), np.full(4, 9, np.int32)
    run_kernel(k, dict(x=x, d=d, q=q, r=r))
    assert q.tolist() == [3, 0, -2, 0] and r.tolist() == [1, 0, 3, 0]


def test_constants_of_low_precision_dtypes_are_rounded():
    assert nx.const(0.1, F16) == np.float16(0.1)
    assert nx.const(0.1, BF16) == ml_dtypes.bfloat16(0.1)
    assert c(3, I32).value == 3
