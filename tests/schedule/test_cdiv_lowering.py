"""`cdiv(a, b)` by a positive constant lowers to `(a - 1) // b + 1`: a size near the top of an
i32 (a dimension of 2^31 - 1) plus b would overflow, and the kernel would loop a negative
number of times or launch no tile, with no error."""
import numpy as np

import tlc
from tlc import ir
from tlc.dtypes import lookup
from tlc.schedule.lower import _folded_int

SRC = """
@kernel
def ceil_div(out: i32[4], n: i32):
    with grid(1, threads=32) as bx:
        for i in parallel(1):
            out[0] = cdiv(n, 64)
            out[1] = cdiv(n, 1)
            out[2] = cdiv(n - 2147483647, 64)
            out[3] = cdiv(-n, 64)
"""
TOP = 2**31 - 1
WANT = [-(-TOP // 64), TOP, 0, -(TOP // 64)]


def test_cdiv_at_the_top_of_an_i32_does_not_overflow():
    out = np.zeros(4, np.int32)
    tlc.compile_source(SRC, target="cpu", path="c.tl").ceil_div(out, TOP)
    assert out.tolist() == WANT


def test_cdiv_keeps_its_meaning_for_every_sign():
    mod = tlc.compile_source(SRC, target="cpu", path="c.tl")
    for n in (0, 1, 63, 64, 65, -1, -64, -65, 1000):
        out = np.zeros(4, np.int32)
        mod.ceil_div(out, n)
        assert out.tolist()[:2] == [-(-n // 64), n] and out[3] == -(n // 64), n


UNSIGNED = """
@kernel
def ceil_div(out: {dt}[3], n: {dt}):
    with grid(1, threads=32) as bx:
        for i in parallel(1):
            out[0] = cdiv(n, {dt}(4))
            out[1] = cdiv(n, {dt}(1))
            out[2] = cdiv(n + {dt}(1), {dt}(4))
"""


def test_cdiv_of_unsigned_zero_is_zero():
    """(a - 1) // b + 1 wraps at an unsigned a = 0: cdiv(u16 0, 4) was 16384 (found by
    fuzzing); an unsigned a divides as a // b + (a % b != 0)."""
    for dt, top in (("u8", 255), ("u16", 65535), ("u32", 2**32 - 1), ("u64", 2**64 - 1)):
        mod = tlc.compile_source(UNSIGNED.format(dt=dt), target="cpu", path="c.tl")
        for n in (0, 1, 4, 5, top):
            out = np.zeros(3, np.dtype(dt.replace("u", "uint")))
            mod.ceil_div(out, n)
            assert out.tolist() == [-(-n // 4), n, -(-((n + 1) % (top + 1)) // 4)], (dt, n)


RUNTIME_DIVISOR = """
@kernel
def ceil_div(out: i32[2], a: i32, b: i32):
    with grid(1, threads=32) as bx:
        for i in parallel(1):
            out[0] = cdiv(a, b)
            out[1] = cdiv(a, -3)
"""


def test_cdiv_by_a_divisor_of_either_sign_is_the_ceiling():
    """A run-time or negative divisor lowered to (a + b - 1) // b, which is the ceiling only for
    b > 0: cdiv(3, -2) was 0 on both targets where the constant evaluator gave -1."""
    mod = tlc.compile_source(RUNTIME_DIVISOR, target="cpu", path="c.tl")
    for a in (-7, -6, -1, 0, 1, 3, 6, 7):
        for b in (-4, -2, -1, 1, 2, 5):
            out = np.zeros(2, np.int32)
            mod.ceil_div(out, a, b)
            assert out.tolist() == [-(-a // b), -(-a // -3)], (a, b)


FOLDS = """
@kernel
def folds(out: i32[N], BN: const = 4096):
    with grid(cdiv(N, BN // 8), threads=32) as bx:
        for i in parallel(1):
            out[bx] = BN // 8 + BN % 3 * 2 + bx // (BN - 4096) + BN // (BN - 4096)
"""


def test_integer_constants_fold_where_the_result_is_a_value_of_their_type():
    """`BN // 8` of a const BN is the constant 512 in the IR, so that cdiv(N, BN // 8) lowers as
    cdiv by a positive constant and codegen/whole_runs.py sees `* (BN // 8)` as a multiple of 512
    (std.broadcast's row tiles did not qualify for TL_WHOLE_RUNS before).  A result that would
    wrap its type (the typechecker refuses such literals: an i8 here) and a division by 0 stay
    operations, as the language computes them."""
    k = tlc.compile_source(FOLDS, target="cpu", path="f.tl").folds.scheduled({}, "sm_90a")
    text = ir.print_kernel(k)
    assert "grid (bx) in ((N - 1) // 512 + 1)" in text
    assert "out[bx] = 514 + bx // 0 + 4096 // 0" in text
    i8 = lookup("i8")
    assert _folded_int("+", ir.Const(127, i8), ir.Const(1, i8), i8) is None  # would wrap
    assert _folded_int("-", ir.Const(-127, i8), ir.Const(1, i8), i8) == -128
    bc = tlc.load("std.broadcast", target="cpu").add.generated({"T": "f16"}, "sm_90a")
    assert bc.whole_runs == (("a", "A3", -8), ("b", "B3", -8), ("y", "D3", 8))  # -8: or 1 (whole_runs.py)
