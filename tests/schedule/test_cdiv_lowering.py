"""`cdiv(a, b)` by a positive constant lowers to `(a - 1) // b + 1`: a size near the top of an
i32 (a dimension of 2^31 - 1) plus b would overflow, and the kernel would loop a negative
number of times or launch no tile, with no error."""
import numpy as np

import tlc

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
