"""A constant that divides by zero (consteval.DividesByZero): a buffer of `32 // B` with B = 0
was "a compile-time constant; it is computed at run time", which it is not.  (An integer `//`
or `%` by 0 computed at run time gives 0 on every target: LANGUAGE.md section 1.)"""
from diagnostic_kit import rendered


def test_a_constant_that_divides_by_zero_says_so():
    src = ("@kernel\ndef k(y: f32[64], B: const = 0):\n    with grid(1, threads=64) as bx:\n"
           "        s = fragment(f32[32 // B])\n        y[0] = 1.0\n")
    assert rendered(src) == (
        "t.tl:4:26: error[E031]: a buffer dimension must be a compile-time constant; 32 // B divides by zero\n"
        "  |\n4 |         s = fragment(f32[32 // B])\n  |                          ^^^^^^^")
