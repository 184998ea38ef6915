"""The numbered typing rules of tlc/typecheck/rules.py and tlc/dtypes.promote, one test each."""
from tlc import dtypes as d
from tlc.parser import nodes as n
from tlc.typecheck import rules
from tlc.typecheck.types import ScalarType

I8, I16, U8, F8 = d.DTYPES["i8"], d.DTYPES["i16"], d.DTYPES["u8"], d.DTYPES["f8e4m3"]


def s(dt, weak=False):
    return ScalarType(dt, weak=weak)


def test_P1_equal_dtypes_stay():
    assert d.promote(d.F16, d.F16) == d.F16


def test_P2_bool_takes_the_other():
    assert d.promote(d.BOOL, d.I32) == d.I32


def test_P3_integer_meeting_float_becomes_the_float():
    assert d.promote(d.I64, d.F16) == d.F16


def test_P4_floats_widen():
    assert d.promote(d.F16, d.F32) == d.F32
    assert d.promote(d.F16, d.BF16) == d.F32
    assert d.promote(F8, d.F16) == d.F16


def test_P5_integers():
    assert d.promote(I8, d.I32) == d.I32
    assert d.promote(U8, I8) == I16


def test_T1_literal_takes_other_type():
    assert rules.combine(s(d.F16), s(d.F32, weak=True)) == d.F16
    assert rules.combine(s(d.I32, weak=True), s(d.BF16)) == d.BF16
    assert rules.combine(s(d.I32), s(d.F32, weak=True)) == d.F32
    assert rules.literal_type(2**40).dtype == d.I64


def test_T2_typed_operands_promote():
    assert rules.combine(s(d.F16), s(d.F32)) == d.F32


def test_T3_true_division_of_integers():
    assert rules.arithmetic("/", s(d.I32), s(d.I32)) == d.F32
    assert rules.arithmetic("//", s(d.I32), s(d.I32)) == d.I32


def test_T4_bit_operations_need_integers():
    assert rules.arithmetic("&", s(d.F32), s(d.I32)) is None
    assert rules.arithmetic("<<", s(d.I32), s(d.I32, weak=True)) == d.I32


def test_T6_nothing_narrows_silently():
    assert not rules.assignable(s(d.F32), d.F16)
    assert rules.assignable(s(d.F16), d.F32)
    assert not rules.assignable(s(d.F32), d.I32)
    assert rules.assignable(s(d.F32, weak=True), d.F16)
    assert not rules.assignable(s(d.F32, weak=True), d.I32)
    assert rules.assignable(s(d.I32, weak=True), d.F16)


def test_T7_math_on_integers_is_f32():
    assert rules.math_result(s(d.I32)) == d.F32
    assert rules.math_result(s(d.F16)) == d.F16


def test_T8_broadcasting():
    M, N = n.Name("M"), n.Name("N")
    assert rules.broadcast((M, N), (N,)) == (M, N)
    assert rules.broadcast((M, n.Constant(1)), (M, N)) == (M, N)
    assert rules.broadcast((M, N), (M,)) is None


def test_T9_matmul_accumulates_wide():
    assert rules.matmul_dtype(d.F16, d.F16) == d.F32
    assert rules.matmul_dtype(I8, I8) == d.I32
