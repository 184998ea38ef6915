"""`tri(N, M, k=0)` (NumPy's: the bool[N, M] tensor true where column j <= row i + k) in the
checker: what it accepts in a tile op, and the exact diagnostic of each wrong use."""
import pytest

from diagnostic_kit import rendered


def tile_op(expr: str) -> str:
    return f"@tile_op\ndef t(x: f32[M, N], k: i32) -> f32[M, N]:\n    return where({expr}, x, 0.0)\n"


@pytest.mark.parametrize("expr", ["tri(M, N)", "tri(M, N, k)", "tri(M, N, k=N - M)", "tri(M, N, -1)"])
def test_accepted(expr):
    assert rendered(tile_op(expr)) == ""


CASES = {
    "in_a_kernel": (
        "@kernel\ndef t(x: f32[M, N]):\n    with grid(1, threads=32) as b:\n        y = tri(M, N)\n",
        "t.tl:4:13: error[E034]: tri() builds a whole tensor inside a @tile_op\n"
        "  |\n4 |         y = tri(M, N)\n  |             ^^^^^^^^^\n"
        "  = hint: in a kernel, compare the indices: j <= i + k"),
    "a_size_computed": (
        tile_op("tri(M, N * 2)"),
        "t.tl:3:25: error[E035]: a size of tri() is a shape symbol or an integer constant\n"
        "  |\n3 |     return where(tri(M, N * 2), x, 0.0)\n  |                         ^^^^^\n"
        "  = hint: tri(S, SK) of q: T[S, D] and k: T[SK, D]"),
    "k_twice": (
        tile_op("tri(M, N, 1, k=2)"),
        "t.tl:3:31: error[E034]: tri() takes k once\n"
        "  |\n3 |     return where(tri(M, N, 1, k=2), x, 0.0)\n  |                               ^^^\n"),
    "k_a_float": (
        tile_op("tri(M, N, 0.5)"),
        "t.tl:3:28: error[E035]: tri()'s k must be an integer, found f32\n"
        "  |\n3 |     return where(tri(M, N, 0.5), x, 0.0)\n  |                            ^^^\n"),
    "too_few": (
        tile_op("tri(M)"),
        "t.tl:3:18: error[E034]: tri() takes 2 to 3 arguments, 1 given\n"
        "  |\n3 |     return where(tri(M), x, 0.0)\n  |                  ^^^^^^\n"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_diagnostic(case):
    src, want = CASES[case]
    assert rendered(src).strip() == want.strip()
