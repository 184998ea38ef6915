"""A constant grid that no GPU launches is a diagnostic at check time (E130), and so is a grid
dimension that divides by a constant zero (E131); dimensions known only at launch are checked
there (tests/runtime/test_grid.py, tests/codegen/test_host_grid.py)."""
import pytest

from tlc.driver import check_source
from tlc.diagnostics import render_all


def indices(dims: str) -> str:
    """`bx`, `(bx, by)` or `(bx, by, bz)`: one block index per dimension of `dims`."""
    depth, count = 0, 1
    for c in dims:
        depth += (c == "(") - (c == ")")
        count += c == "," and depth == 0
    return "bx" if count == 1 else "(" + ", ".join(["bx", "by", "bz"][:count]) + ")"


def grid(dims: str) -> str:
    return (f"@kernel\ndef k(x: f32[N], B: const = 64):\n    with grid({dims}, threads=32) as {indices(dims)}:\n"
            "        for i in parallel(32):\n            x[bx * 32 + i] = 1.0\n")


def rendered(dims: str) -> str:
    r = check_source(grid(dims), "t.tl")
    return render_all(r.diagnostics, r.sources)


def caret(dims: str, col: int, width: int) -> str:
    return f"  |\n3 |     with grid({dims}, threads=32) as {indices(dims)}:\n  |{' ' * col}{'^' * width}"


@pytest.mark.parametrize("dims, col, width, message", [
    ("2**40", 15, 5, "grid dimension x is 1099511627776; the GPU launches 1 to 2147483647 blocks in it"),
    ("-5", 15, 2, "grid dimension x is -5; the GPU launches 1 to 2147483647 blocks in it"),
    ("0", 15, 1, "grid dimension x is 0; the GPU launches 1 to 2147483647 blocks in it"),
    ("1, 65536 * B // 64", 18, 15, "grid dimension y is 65536; the GPU launches 1 to 65535 blocks in it"),
    ("1, 1, 1 << 16", 21, 7, "grid dimension z is 65536; the GPU launches 1 to 65535 blocks in it"),
])
def test_a_constant_grid_the_gpu_cannot_launch(dims, col, width, message):
    assert rendered(dims) == f"t.tl:3:{col}: error[E130]: {message}\n{caret(dims, col, width)}"


@pytest.mark.parametrize("dims, col, width, axis", [
    ("cdiv(N, 0)", 23, 1, "x"),
    ("1, N // (B - 64)", 24, 6, "y"),
    ("1, 1, 1 + N % (B * 0)", 30, 5, "z"),
])
def test_a_grid_dimension_that_divides_by_a_constant_zero(dims, col, width, axis):
    assert rendered(dims) == f"t.tl:3:{col}: error[E131]: grid dimension {axis} divides by zero\n{caret(dims, col, width)}"


@pytest.mark.parametrize("dims", ["2147483647", "1, 65535, 65535", "cdiv(N, B)", "N // B, N % 7 + 1"])
def test_grids_the_gpu_launches_pass(dims):
    assert rendered(dims) == ""
