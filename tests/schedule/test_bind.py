"""Binding constants from -D / keywords: names, types, and errors blamed on the constant."""
import numpy as np

from tlc.dtypes import BF16
from tlc.schedule.bind import parse_value
from kit import GEMM, schedule_error, scheduled


def test_parse_value():
    assert parse_value("64") == 64 and parse_value("0x10") == 16 and parse_value("1e-5") == 1e-5
    assert parse_value("True") is True and parse_value("bf16") == BF16


def test_constants_and_dtypes_are_bound():
    k = scheduled(GEMM, "matmul", {"BM": "64", "T": "bf16"})
    assert dict(k.constants)["BM"] == 64 and k.param("A").dtype == BF16
    assert k.buffer("As").shape == (64, 32)


def test_unknown_constant():
    assert schedule_error(GEMM, "matmul", {"BX": 64}) == (
        "error[E064]: 'matmul' has no constant or dtype parameter 'BX'\n  = hint: its constants are: T, BM, BN, BK, stages")


def test_wrong_kind_of_value():
    text = schedule_error(GEMM, "matmul", {"BM": "abc"})
    assert text.startswith("s.tl:4:28: error[E065]: the constant 'BM' takes an integer, not 'abc'")


def test_non_positive_buffer_is_blamed_on_the_constant():
    text = schedule_error(GEMM, "matmul", {"BK": 0})
    assert text.splitlines()[0] == ("s.tl:4:62: error[E061]: with BK=0: a buffer dimension must be a positive "
                                    "integer, found 0")
    assert "= hint: the error is at s.tl:6:27" in text


def test_a_tile_op_is_not_one_kernel():
    """schedule() makes one kernel; a tile op goes through schedule_tile_op (tests/schedule/tileops)."""
    src = "@tile_op\ndef t(a: f32[M, K]) -> f32[M, K]:\n    return a * 2.0\n"
    assert schedule_error(src, "t") == (
        "s.tl:2:5: error[E067]: 't' is a @tile_op, which is scheduled into one or more kernels, not one\n"
        "  |\n"
        "2 | def t(a: f32[M, K]) -> f32[M, K]:\n"
        "  |     ^\n"
        "  = hint: call it from Python (it returns its result), or build its kernels with tlc build -k NAME")


def test_not_a_kernel():
    assert schedule_error(GEMM, "nothing") == (
        "error[E066]: no kernel named 'nothing' in s.tl\n  = hint: its kernels are: matmul")


def test_a_constant_takes_a_number_of_its_kind():
    """Issue #16: None (and a bool, a complex number, a list) for an integer constant was bound
    and failed later, or not at all; NumPy integers are integers."""
    for value, shown in [(None, "None"), (True, "True"), (2 + 0j, "(2+0j)"), ([64], "[64]")]:
        assert schedule_error(GEMM, "matmul", {"BM": value}).splitlines()[0] == (
            f"s.tl:4:28: error[E065]: the constant 'BM' takes an integer, not {shown}")
    assert dict(scheduled(GEMM, "matmul", {"BM": np.int64(64)}).constants)["BM"] == 64
