"""Tensor parameter dimensions that are expressions of shape symbols and constants (issue #20,
item 5; tlc/typecheck/dims.py): what a kernel may declare, and each wrong use with its exact
diagnostic."""
import pytest

from test_diagnostics import rendered


def kernel(params: str) -> str:
    return f"@kernel\ndef k({params}):\n    with grid(1, threads=32) as bx:\n        pass\n"


@pytest.mark.parametrize("params", [
    "B: i8[N, K // 2], C: f32[N, K]",  # packed int4, the symbol bound after its use
    "S: f32[M, cdiv(K, 128)], A: f32[M, K]",
    "O: f32[N, (H + 2 * P - KH) // S + 1], X: f32[N, H], W: f32[KH], P: const = 1, S: const = 2",
    "A: f32[max(M, 4) * 2 - min(M, 4) % 3], B: f32[M]",
    "A: f32[BM * M + 1], B: f32[M], BM: const = 64",
])
def test_accepted(params):
    assert rendered(kernel(params)) == ""


HINT = "  = hint: a dimension is built from literals, constants and shape symbols"
CASES = {
    "E200_unbound": (
        "S: f32[M, cdiv(J, 128)], C: f32[M, K]",
        "t.tl:2:22: error[E200]: 'J' in the dimension cdiv(J, 128) of 'S' is not bound by any dimension\n"
        "  |\n2 | def k(S: f32[M, cdiv(J, 128)], C: f32[M, K]):\n  |                      ^\n"
        "  = hint: bind it with a plain dimension of a tensor parameter (X: f32[J]), or make it a const parameter"),
    "E201_scalar": (
        "U: f32[n + 1], n: i32",
        "t.tl:2:14: error[E201]: 'n' in the dimension n + 1 of 'U' is the scalar parameter 'n'\n"
        "  |\n2 | def k(U: f32[n + 1], n: i32):\n  |              ^\n" + HINT),
    "E201_tensor": (
        "U: f32[K + X], X: f32[K]",
        "t.tl:2:18: error[E201]: 'X' in the dimension K + X of 'U' is the tensor parameter 'X'\n"
        "  |\n2 | def k(U: f32[K + X], X: f32[K]):\n  |                  ^\n" + HINT),
    "E201_dtype": (
        "U: f32[K * f16], C: f32[K]",
        "t.tl:2:18: error[E201]: 'f16' in the dimension K * f16 of 'U' is a dtype\n"
        "  |\n2 | def k(U: f32[K * f16], C: f32[K]):\n  |                  ^^^\n" + HINT),
    "E202_float_division": (
        "T: f32[K / 2], C: f32[K]",
        "t.tl:2:14: error[E202]: the dimension K / 2 of 'T' is not an integer expression of shape symbols and "
        "constants (+, -, *, //, %, cdiv, min and max)\n  |\n2 | def k(T: f32[K / 2], C: f32[K]):\n  |              ^^^^^\n"
        "  = hint: '/' divides as floats; write //"),
    "E202_unknown_function": (
        "U: f32[log2(K)], C: f32[K]",
        "t.tl:2:14: error[E202]: the dimension log2(K) of 'U' is not an integer expression of shape symbols and "
        "constants (+, -, *, //, %, cdiv, min and max)\n  |\n2 | def k(U: f32[log2(K)], C: f32[K]):\n  |              ^^^^^^^"),
    "E202_divides_by_zero": (  # a constant divisor of 0: std.nn_layers.group_norm's bias at G=0
        "U: f32[G * (C // G)], X: f32[C], G: const = 0",
        "t.tl:2:19: error[E202]: the dimension G * (C // G) of 'U' divides by zero (C // G with G = 0)\n"
        "  |\n2 | def k(U: f32[G * (C // G)], X: f32[C], G: const = 0):\n  |                   ^^^^^^"),
    "E202_remainder_by_zero": (
        "U: f32[C % G], X: f32[C], G: const = 0",
        "t.tl:2:14: error[E202]: the dimension C % G of 'U' divides by zero (C % G with G = 0)\n"
        "  |\n2 | def k(U: f32[C % G], X: f32[C], G: const = 0):\n  |              ^^^^^"),
}


@pytest.mark.parametrize("name", CASES)
def test_diagnostic(name):
    params, want = CASES[name]
    assert rendered(kernel(params)) == want
