"""Integer `//`, `%` and `>>` written as C's own operators where the operands' ranges prove C
agrees with the language (codegen/cexpr.py _plain_c_agrees): a non-negative value divided by a
positive one (in unsigned, so that nvcc needs no sign fixups), a shift by a count inside the
width; Python's semantics (tl::floordiv, tl::pymod, tl::shr) everywhere else.  std.gemm's w4a16
kernel depends on it: its packed weight's word `j // 32 * 4 + j % 8 // 2` must be one load for
the eight nibbles of a word (tests/stdlib/test_gemm_w4a16_cpu.py counts them)."""
import numpy as np
import pytest

import tlc
from tlc import ir
from tlc.codegen.ranges import in_dtype_range
from tlc.dtypes import lookup
from tlc.runner import build

SRC = """
@kernel
def ops(x: i32[N], y: i32[N], z: i32[N], n: i32, THREADS: const = 128):
    with grid(cdiv(N, 128), threads=THREADS) as b:
        for i in parallel(128):
            v = x[b * 128 + i]
            y[b * 128 + i] = (i // 8) * 100 + i % 8 + (v >> (i % 4))
            z[b * 128 + i] = v // 8 + v % 8 + n // 4 + (i - 64) // 8 + (v >> n)
"""


def _line(src: str, text: str) -> str:
    return next(line for line in src.splitlines() if text in line and "//" not in line.split(text)[0])


@pytest.fixture
def path(tmp_path):
    p = tmp_path / "ops.tl"
    p.write_text(SRC)
    return p


def test_plain_c_where_the_ranges_prove_it(path):
    src, _ = build(str(path), arch="sm_90a", kernels=("ops",))
    y = _line(src, "y[")
    assert "tl::floordiv" not in y and "tl::pymod" not in y and "tl::shr" not in y, y
    assert "static_cast<unsigned int>(i) / static_cast<unsigned int>(8)" in y
    assert "static_cast<unsigned int>(i) % static_cast<unsigned int>(8)" in y
    z = _line(src, "z[")
    # a loaded value, a scalar argument and a value that may be negative keep Python's semantics
    assert z.count("tl::floordiv") == 3 and z.count("tl::pymod") == 1 and z.count("tl::shr") == 1, z


def test_the_values_agree_with_python(path):
    mod = tlc.load(str(path), target="cpu")
    rng = np.random.default_rng(0)
    x = rng.integers(-1000, 1000, 300).astype(np.int32)
    y, z = np.zeros(300, np.int32), np.zeros(300, np.int32)
    mod.ops(x, y, z, np.int32(-7))
    i = np.arange(300) % 128
    assert np.array_equal(y, (i // 8) * 100 + i % 8 + (x >> (i % 4)))
    want = x // 8 + x % 8 + (-7) // 4 + (i - 64) // 8 + (x >> 31)  # a count of -7 shifts every bit out
    assert np.array_equal(z, want)


I32 = lookup("i32")


def _v(name):
    return ir.Var(name, I32)


def _c(v):
    return ir.Const(v, I32)


def test_a_range_that_wraps_on_the_way_proves_nothing():
    # (b * 2^30) // 2 of a block index up to 2^31 - 1: the product leaves i32, so no range
    e = ir.BinOp("//", ir.BinOp("*", _v("b"), _c(2 ** 30), I32), _c(2), I32)
    assert in_dtype_range(e, {"b": (0, 2 ** 31 - 1)}) is None
    assert in_dtype_range(e, {"b": (0, 1)}) == (0, 2 ** 29)


def test_sizes_that_factor_the_grid_are_at_least_one_inside_a_block():
    """std.data's index_select, grid(A * K * cdiv(C, BC)): with real arrays a block runs only where
    A, K and C are at least 1, and the kernel returns at once where one is below 1 (what a C
    launcher's caller might pass), so the generator knows them from 1 (codegen/ranges.py
    grid_sizes, size_ranges): the block's row, column block and (a, k) are C's unsigned divisions
    and remainders, where tl::floordiv's and tl::pymod's checks put about 150 instructions before
    the index's load (50 now; sm_90a, nvcc 13.0, NVRTC's assumption that sizes are not negative).
    N, a size but no factor of the grid, is not guarded."""
    from tlc.codegen.ranges import I32_MAX, grid_sizes, size_ranges, value_range

    k = tlc.load("std.data", target="cpu").index_select.scheduled({"T": "f16", "I": "i64"}, "sm_90a")
    assert grid_sizes(k) == ["A", "K", "C"] and size_ranges(k) == {s: (1, I32_MAX) for s in "AKC"}
    x = ir.BinOp("%", ir.Var("x", I32), ir.Var("K", I32), I32)  # Python's remainder by a positive K
    assert value_range(x, {"x": (-5, 100), "K": (1, 10)}) == (0, 9)
    src, _ = build("std.data", arch="sm_90a", kernels=("index_select",), defines=("T=f16", "I=i64"))
    body = src[src.index("void __launch_bounds__"):]
    assert "(void)bx;\n  if (A < 1 || K < 1 || C < 1) return;" in body
    for text in ("static_cast<unsigned int>(bx) / ", "static_cast<unsigned int>(bx) % ",
                 "static_cast<unsigned int>(row) % static_cast<unsigned int>(K)",
                 "static_cast<unsigned int>(row) / static_cast<unsigned int>(K)"):
        assert text in body, text
    assert "tl::floordiv" not in body and "tl::pymod" not in body


def test_sizes_that_factor_both_arms_of_a_where_grid_are_at_least_one():
    """std.broadcast's grid(where(D3 * 8 >= BN, D0 * D1 * D2 * cdiv(D3, BN), cdiv(D0 * D1 * D2, BM)
    * cdiv(D3, BN // 8))): whichever arm a launch takes, a block runs only where D0 to D3 are at
    least 1 (cdiv of a product of sizes is 0 where one of them is), so the block's row, column
    block and (i0, i1, i2) are C's unsigned divisions and remainders, where tl::floordiv and
    tl::pymod were five divisions with checks of a zero or negative divisor before the first load.
    A size in one arm only proves nothing: the other arm may be the one launched."""
    from tlc.codegen.ranges import grid_sizes

    k = tlc.load("std.broadcast", target="cpu").add.scheduled({"T": "f16"}, "sm_90a")
    assert grid_sizes(k) == ["D0", "D1", "D2", "D3"]
    src = tlc.load("std.broadcast", target="cpu").add.cuda_source("sm_90a", T="f16")
    start = src.index("void __launch_bounds__")
    body = src[start:src.index("  } else {", start)]
    assert "if (D0 < 1 || D1 < 1 || D2 < 1 || D3 < 1) return;" in body
    assert "tl::floordiv" not in body and "tl::pymod" not in body
    one_arm = tlc.compile_source("""
@kernel
def f(x: f32[M, N], y: f32[M, N]):
    with grid(where(N > 4, M * N, M), threads=32) as b:
        for i in parallel(32):
            y[b % M, i] = x[b % M, i]
""", target="cpu", path="one_arm.tl")
    assert grid_sizes(one_arm.f.scheduled({}, "sm_90a")) == ["M"]
