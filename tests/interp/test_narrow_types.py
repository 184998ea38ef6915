"""The 4-bit integers i4 and u4 and the microscaling scale e8m0 (issue #18, first step): the
dtype table and its promotion rules, the type checker, the interpreter's values, conversions and
wrapping arithmetic, and the code generators' refusal (E420 on the CUDA targets; the cpu target
falls back to the interpreter, E345).  In memory i4 and u4 are to be packed two a byte on the
GPU; the interpreter holds NumPy arrays of ml_dtypes' int4 / uint4 (a byte each)."""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import tlc
from tlc.diagnostics import DiagnosticError, render_all
from tlc.driver import check_source
from tlc.dtypes import DTYPES, can_widen, from_numpy, promote
from tlc.interp.numerics import binop, cast, unop

I4, U4, E8M0 = DTYPES["i4"], DTYPES["u4"], DTYPES["e8m0"]


def test_the_table():
    assert (I4.kind, I4.bits, I4.packed, U4.kind, U4.packed) == ("int", 4, True, "uint", True)
    assert (E8M0.kind, E8M0.bits, E8M0.packed) == ("float", 8, False)
    assert I4.numpy() == np.dtype(ml_dtypes.int4) and from_numpy(ml_dtypes.uint4) is U4
    assert from_numpy(ml_dtypes.float8_e8m0fnu) is E8M0
    assert E8M0.largest_finite() == 2.0 ** 127
    assert [I4.wrap(v) for v in (7, 8, -9, 16)] == [7, -8, 7, 0]


@pytest.mark.parametrize("a,b,want", [("i4", "i4", "i4"), ("i4", "u4", "i8"), ("u4", "u4", "u4"), ("i4", "i8", "i8"),
                                      ("u4", "i8", "i8"), ("u4", "u8", "u8"), ("i4", "f16", "f16"),
                                      ("e8m0", "e8m0", "e8m0"), ("e8m0", "f16", "f32"), ("e8m0", "bf16", "f32"),
                                      ("e8m0", "f8e4m3", "f32"), ("e8m0", "f64", "f64"), ("i32", "e8m0", "e8m0")])
def test_promotion(a, b, want):
    """P5 for the 4-bit integers (i4 with u4 meets at i8), P6: e8m0 with another float at f32,
    the narrowest float holding both its range and the other's values."""
    assert promote(DTYPES[a], DTYPES[b]).name == want and promote(DTYPES[b], DTYPES[a]).name == want


def test_widening():
    assert can_widen(I4, DTYPES["i8"]) and can_widen(U4, DTYPES["i8"]) and not can_widen(DTYPES["i8"], I4)
    assert can_widen(E8M0, DTYPES["f32"]) and not can_widen(E8M0, DTYPES["f16"])
    assert not can_widen(DTYPES["f8e4m3"], E8M0) and not can_widen(DTYPES["f32"], E8M0)


def test_integer_arithmetic_wraps_in_four_bits():
    """As i8 arithmetic wraps in 8 bits (LANGUAGE.md section 1): every pair of i4 values, and of
    u4 values, against the 8-bit result reduced to 4 bits."""
    for dt, vals in ((I4, np.arange(-8, 8)), (U4, np.arange(16))):
        a, b = np.repeat(vals, len(vals)), np.tile(vals, len(vals))
        x, y = cast(a, dt), cast(b, dt)
        wrap = lambda r: cast(np.asarray(r, np.int64), dt).astype(np.int64)  # noqa: E731
        for op, ref in (("+", a + b), ("-", a - b), ("*", a * b), ("&", a & b), ("|", a | b), ("^", a ^ b)):
            got = binop(op, x, y, dt)
            assert got.dtype == dt.numpy()
            np.testing.assert_array_equal(got.astype(np.int64), wrap(ref), err_msg=f"{dt} {op}")
        np.testing.assert_array_equal(unop("~", x, dt).astype(np.int64), wrap(~a))
        np.testing.assert_array_equal(unop("-", x, dt).astype(np.int64), wrap(-a))
        counts = np.clip(b, 0, 7)
        shifted = binop(">>", x, cast(counts, dt), dt).astype(np.int64)
        np.testing.assert_array_equal(shifted, np.where(counts >= 4, np.where(a < 0, -1, 0), a >> np.minimum(counts, 3)))
    assert [int(v) for v in cast(np.array([-8, 7], np.int64), I4) * 1] == [-8, 7]


def test_conversions():
    """float -> i4 / u4 truncates toward zero and saturates, NaN 0; int -> i4 wraps; into e8m0
    |x| rounds up to a power of two (CUDA's __nv_fp8_e8m0(float): cudaRoundPosInf, __NV_SATFINITE),
    clipped to 2^-127 .. 2^127 (0 too), NaN kept; e8m0 -> f32 is exact."""
    f = np.array([7.9, -8.9, 100.0, -100.0, np.nan, np.inf, -0.5], np.float32)
    assert cast(f, I4).astype(int).tolist() == [7, -8, 7, -8, 0, 7, 0]
    assert cast(f, U4).astype(int).tolist() == [7, 0, 15, 0, 0, 15, 0]
    assert cast(np.array([9, -9, 255, 16], np.int32), I4).astype(int).tolist() == [-7, 7, -1, 0]
    assert cast(np.array([17, -1], np.int32), U4).astype(int).tolist() == [1, 15]
    x = np.array([0.3, 0.25, 1.5, -3.0, 0.0, 1e-40, 7e-39, 3e38, np.inf, np.nan, 2.0 ** -126], np.float32)
    e = cast(x, E8M0)
    assert e.dtype == np.dtype(ml_dtypes.float8_e8m0fnu)
    want = [0.5, 0.25, 2.0, 4.0, 2.0 ** -127, 2.0 ** -127, 2.0 ** -126, 2.0 ** 127, 2.0 ** 127, np.nan, 2.0 ** -126]
    np.testing.assert_array_equal(cast(e, DTYPES["f32"]), np.array(want, np.float32))
    assert e.view(np.uint8).tolist() == [126, 125, 128, 129, 0, 0, 1, 254, 254, 255, 1]


ROUND_TRIP = """
@kernel
def round_trip(x: f32[M, N], q: i4[M, N], s: e8m0[M], y: f32[M, N], BM: const = 4, BN: const = 32):
    # each row's scale 2^ceil(log2(amax / 7)) as e8m0, x / scale rounded into i4 (in shared
    # memory and a tensor), and back
    with grid(cdiv(M, BM), threads=32) as bx:
        t = fragment(f32[BM, BN])
        qs = shared(i4[BM, BN])
        amax = fragment(f32[BM])
        e = fragment(e8m0[BM])
        copy(x[bx * BM, 0], t)
        reduce_absmax(t, amax, dim=1)
        for i in parallel(BM):
            e[i] = e8m0(amax[i] / 7.0)
        for i, j in parallel(BM, BN):
            qs[i, j] = i4(round(t[i, j] / f32(e[i])))
        copy(qs, q[bx * BM, 0])
        copy(e, s[bx * BM])
        for i, j in parallel(BM, BN):
            t[i, j] = f32(qs[i, j]) * f32(e[i])
        copy(t, y[bx * BM, 0])
"""


def test_a_kernel_of_i4_and_e8m0_on_the_interpreter():
    mod = tlc.compile_source(ROUND_TRIP, target="cpu")
    x = np.random.default_rng(0).standard_normal((6, 32)).astype(np.float32)
    x[5] = 0
    q, s = np.zeros((6, 32), ml_dtypes.int4), np.zeros(6, ml_dtypes.float8_e8m0fnu)
    y = np.zeros((6, 32), np.float32)
    mod.round_trip(x, q, s, y)
    amax = np.abs(x).max(axis=1)
    scale = cast(amax / np.float32(7), E8M0).astype(np.float32)
    want_q = np.clip(np.trunc(np.rint(x / scale[:, None])), -8, 7)
    np.testing.assert_array_equal(s.astype(np.float32), scale)
    np.testing.assert_array_equal(q.astype(np.float32), want_q)
    np.testing.assert_array_equal(y, want_q * scale[:, None])
    assert (np.abs(y - x) <= scale[:, None] / 2).all()  # ceil keeps amax / scale <= 7: nothing saturates


def test_a_literal_must_fit_i4():
    src = ("@kernel\ndef k(A: i4[64]):\n    with grid(1, threads=64) as bx:\n        for i in parallel(64):\n"
           "            A[i] = A[i] & 15\n")
    r = check_source(src, "t.tl")
    assert render_all(r.diagnostics, r.sources) == (
        "t.tl:5:27: error[E157]: the literal 15 does not fit i4, the type of the other operand of '&'\n  |\n"
        "5 |             A[i] = A[i] & 15\n  |                           ^^\n"
        "  = hint: 15 is -1 as an i4: write A[i] & -1 for the same bits, or i16(A[i]) & 15 to compute in i16")


HINT = ("  = hint: {dt} runs on the interpreter (tlc.load(..., target=\"cpu\")); on the GPU, hold 4-bit values two a "
        "byte in a u8 tensor and e8m0 scales in a u8 tensor (as std.quant does)")


def test_the_cuda_targets_refuse_them_with_e420(tmp_path):
    """Until the generators pack them: at the first tensor, buffer or value of such a dtype."""
    from tlc.runner import build

    path = tmp_path / "round_trip.tl"
    path.write_text(ROUND_TRIP)
    with pytest.raises(DiagnosticError) as e:
        build(str(path), arch="sm_90a")
    line = ROUND_TRIP.splitlines()[2]
    assert render_all(e.value.diagnostics, e.value.sources) == (
        f"{path}:3:30: error[E420]: the sm_90a target does not generate i4 values yet\n  |\n3 | {line}\n"
        f"  | {' ' * 29}^^^^^^^^^^^\n" + HINT.format(dt="i4"))
    path = tmp_path / "k.tl"
    path.write_text("@kernel\ndef k(x: f32[64], y: f32[64]):\n    with grid(1, threads=64) as bx:\n"
                    "        for i in parallel(64):\n            y[i] = f32(e8m0(x[i]))\n")
    with pytest.raises(DiagnosticError) as e:
        build(str(path), arch="sm_80")
    text = render_all(e.value.diagnostics, e.value.sources)
    assert text.startswith(f"{path}:5:29: error[E420]: the sm_80 target does not generate e8m0 values yet\n"), text
    assert text.endswith(HINT.format(dt="e8m0"))


def test_the_cpu_target_runs_them_on_the_interpreter(capsys):
    mod = tlc.compile_source(ROUND_TRIP, target="cpp")
    x = np.ones((4, 32), np.float32)
    q, s, y = np.zeros((4, 32), ml_dtypes.int4), np.zeros(4, ml_dtypes.float8_e8m0fnu), np.zeros((4, 32), np.float32)
    mod.round_trip(x, q, s, y)
    assert (y == 1).all()
    assert "warning[E345]: the cpu target does not generate i4 values yet" in capsys.readouterr().err
