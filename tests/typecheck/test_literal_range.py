"""E157: an integer literal that takes a typed operand's integer dtype must fit it (issue #16,
"never silently wrong"; LANGUAGE.md, promotion).  Before, `x < 200` of an i8 x compared with -56
on both targets and `t & 255` was `t & -1`; NumPy 2 raises for such Python ints (NEP 50)."""
import pytest

from diagnostic_kit import rendered


def kernel(*lines: str) -> str:
    """A kernel with an i8 tensor A, a u8 tensor B and an i32 tensor C, `lines` in a parallel loop."""
    return ("@kernel\ndef k(A: i8[64], B: u8[64], C: i32[64], BM: const = 200):\n"
            "    with grid(1, threads=64) as bx:\n        for i in parallel(64):\n"
            + "".join("            " + line + "\n" for line in lines))


def pinned(line: str, col: int, message: str, width: int, hint: str) -> str:
    return (f"t.tl:5:{col}: error[E157]: {message}\n  |\n5 |             {line}\n"
            f"  | {' ' * (col - 1)}{'^' * width}\n  = hint: {hint}")


CASES = {
    "compare": ("x = A[i] < 200", 24,
                "the literal 200 does not fit i8, the type of the other operand of '<'", 3,
                "write i16(A[i]) < 200, or a literal within -128..127"),
    "mask": ("A[i] = A[i] & 0xFF", 27,
             "the literal 255 does not fit i8, the type of the other operand of '&'", 4,
             "255 is -1 as an i8: write A[i] & -1 for the same bits, or i16(A[i]) & 255 to compute in i16"),
    "unsigned_minus_one": ("B[i] = B[i] & -1", 27,
                           "the literal -1 does not fit u8, the type of the other operand of '&'", 2,
                           "write ~u8(0) or 255 for all bits set"),
    "wide_i32": ("x = C[i] < 3000000000", 24,
                 "the literal 3000000000 does not fit i32, the type of the other operand of '<'", 10,
                 "write i64(C[i]) < 3000000000, or a literal within -2147483648..2147483647"),
    "literal_on_the_left": ("x = 300 + B[i]", 17,
                            "the literal 300 does not fit u8, the type of the other operand of '+'", 3,
                            "write 300 + i16(B[i]), or a literal within 0..255"),
    "shift_left_operand": ("A[i] = 256 << A[i]", 20,
                           "the literal 256 does not fit i8, the type of the other operand of '<<'", 3,
                           "write 256 << i16(A[i]), or a literal within -128..127"),
    "constant_expression": ("x = A[i] >= -2**7 - 1", 25,
                            "the literal -2 ** 7 - 1 = -129 does not fit i8, the type of the other operand of '>='", 9,
                            "write i16(A[i]) >= -2 ** 7 - 1, or a literal within -128..127"),
    "store": ("B[i] = 300", 20, "the literal 300 does not fit u8, the type of an element of 'B'", 3,
              "write a literal within 0..255, or convert explicitly"),
    "where": ("A[i] = where(C[i] > 0, A[i], 128)", 42,
              "the literal 128 does not fit i8, the type of the other arguments of where()", 3,
              "write a literal within -128..127, or convert explicitly"),
    "max": ("A[i] = max(A[i], -129)", 30,
            "the literal -129 does not fit i8, the type of the other arguments of max()", 4,
            "write a literal within -128..127, or convert explicitly"),
    "conditional": ("A[i] = A[i] if C[i] > 0 else 200", 42,
                    "the literal 200 does not fit i8, the type of the other branch of the conditional expression", 3,
                    "write a literal within -128..127, or convert explicitly"),
    "cdiv": ("A[i] = cdiv(A[i], 300)", 31, "the literal 300 does not fit i8, the type of the other arguments of cdiv()",
             3, "write a literal within -128..127, or convert explicitly"),
    "augmented": ("A[i] += 1000", 21,
                  "the literal 1000 does not fit i8, the type of the target of '+='", 4,
                  "write a literal within -128..127, or convert explicitly"),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_literal_out_of_range_text(name):
    line, col, message, width, hint = CASES[name]
    assert rendered(kernel(line)) == pinned(line, col, message, width, hint)


@pytest.mark.parametrize("line", [
    "x = A[i] < 127", "A[i] = A[i] & 0x7F", "A[i] = A[i] & -128", "B[i] = B[i] & 255", "x = i16(A[i]) < 200",
    "A[i] = A[i] >> 200", "A[i] = i8(300)", "x = C[i] < 2**31 - 1", "x = A[i] < BM", "B[i] = ~u8(0)",
    "A[i] = where(C[i] > 0, A[i], -128)", "x = 200 + 3000000000", "A[i] = A[i] + 2.5 > 0",
])
def test_literals_within_range_or_typed_constants_pass(line):
    """A literal within the dtype, an explicit conversion, a shift count, a typed constant (BM is
    an i32 200: `A[i] < BM` promotes and compares exactly), two literals (i64)."""
    assert rendered(kernel(line)) == ""


def test_a_device_function_argument():
    src = "def f(v: u8) -> u8:\n    return v\n" + kernel("B[i] = f(256)").replace("t.tl", "")
    assert rendered(src) == (
        "t.tl:7:22: error[E157]: the literal 256 does not fit u8, the type of argument 'v' of f()\n  |\n"
        "7 |             B[i] = f(256)\n  |                      ^^^\n"
        "  = hint: write a literal within 0..255, or convert explicitly")


def test_fill_and_atomic():
    src = ("@kernel\ndef k(A: u8[64], C: i16[64]):\n    with grid(1, threads=64) as bx:\n"
           "        t = fragment(u8[64])\n        fill(t, 256)\n        atomic_add(C[0], 40000)\n        copy(t, A[0])\n")
    assert rendered(src) == (
        "t.tl:5:17: error[E157]: the literal 256 does not fit u8, the type of the buffer's elements\n  |\n"
        "5 |         fill(t, 256)\n  |                 ^^^\n  = hint: write a literal within 0..255, or convert explicitly\n\n"
        "t.tl:6:26: error[E157]: the literal 40000 does not fit i16, the type of the element updated\n  |\n"
        "6 |         atomic_add(C[0], 40000)\n  |                          ^^^^^\n"
        "  = hint: write a literal within -32768..32767, or convert explicitly")
