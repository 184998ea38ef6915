"""The CUDA generator tells nvcc that the dividend of a `//` or `%` it keeps as tl::floordiv or
tl::pymod is never negative (tl::nonneg, tl::sized_nonneg: `__builtin_assume`) where the open
ranges prove it (codegen/ranges.py open_range: C's int arithmetic, which does not wrap) from a
scalar or a size that the dividend reads, signs nvcc does not see on its own: std.gemm's split-K
w4a16 kernel, whose K step `(bz * steps + k) * BK + j` with `steps = cdiv(cdiv(K, BK), S)` kept
each weight's group division and remainder (twice the SASS of the kernel without split-K)."""
import re

import pytest

import tlc
from tlc import ir
from tlc.api import compile_source
from tlc.codegen.ranges import open_range
from tlc.dtypes import lookup
from nvcc import cubin_sass

I32 = lookup("i32")


def v(name):
    return ir.Var(name, I32)


def c(value):
    return ir.Const(value, I32)


def op(o, a, b):
    return ir.BinOp(o, a, b, I32)


def cdiv(a, b):  # as the IR spells cdiv(a, b): -((-a) // b)
    return ir.UnaryOp("-", op("//", ir.UnaryOp("-", a, I32), b), I32)


def test_open_ranges():
    known = {"K": (0, None), "S": (1, 2 ** 31 - 1), "bz": (0, 2 ** 31 - 1), "k": (0, None), "j": (0, 511)}
    steps = cdiv(cdiv(v("K"), c(512)), v("S"))
    assert open_range(steps, known) == (0, None)
    assert open_range(steps, {**known, "K": (None, None)}) == (None, None)  # a size of no known sign
    known["steps"] = (0, None)
    assert open_range(op("+", op("*", op("+", op("*", v("bz"), v("steps")), v("k")), c(512)), v("j")), known) == (0, None)
    assert open_range(op("-", v("k"), c(1)), known) == (-1, None)  # k - 1: negative at k = 0
    assert open_range(op("%", v("x"), c(8)), known) == (0, 7)  # Python's remainder, any x
    assert open_range(op("//", v("j"), c(128)), known) == (0, 3)
    assert open_range(op("*", v("x"), v("k")), known) == (None, None)  # x of no range
    assert open_range(op("max", v("x"), c(0)), known) == (0, None)
    # what wraps: unsigned arithmetic (defined in C) and 8- and 16-bit integers (wrapped to
    # their width), and an unsigned value read as a signed one of its width
    u32, i16 = lookup("u32"), lookup("i16")
    big = ir.BinOp("*", ir.Cast(v("k"), u32), ir.Const(1 << 20, u32), u32)
    assert open_range(big, known) == (0, None)
    assert open_range(ir.Cast(big, I32), known) == (None, None)
    assert open_range(ir.Cast(big, lookup("i64")), known) == (0, None)
    assert open_range(ir.BinOp("+", ir.Cast(v("j"), i16), ir.Const(30000, i16), i16), known) == (None, None)


SOURCE = """\
@kernel
def parts(X: f32[K], Y: f32[S, 64], BK: const = 64):
    with grid(S, threads=64) as (bz,):
        steps = cdiv(cdiv(K, BK), S)
        t = bz + 1
        for k in range(steps):
            for j in parallel(64):
                e = (bz * steps + k) * BK + j
                Y[bz, j] = Y[bz, j] + X[e] * f32(e // 32 % 4) + f32((bz * t + j) // 8)
"""


def test_a_dividend_that_reads_a_scalar_is_said_to_be_never_negative():
    text = compile_source(SOURCE).parts.generated({}, "sm_90a").source
    body = text.split("#endif  // TL_PRIMITIVES", 1)[1]
    # the size K's sign is NVRTC's assumption: said to NVRTC's builds only
    assert "e = ((((bz * steps) + k) * 64) + j);" in body
    assert "tl::pymod<int>(tl::sized_nonneg(tl::floordiv<int>(tl::sized_nonneg(e), 32)), 4)" in body
    # bz * t, t = bz + 1: from the block index alone, said to every build
    assert "tl::floordiv<int>(tl::nonneg(((bz * t) + j)), 8)" in body


def test_a_dividend_of_loop_counters_alone_is_left_to_nvcc():
    src = """\
@kernel
def steps(X: f32[K], Y: f32[64]):
    with grid(1, threads=64) as (bx,):
        for k in range(cdiv(K, 64)):
            for j in parallel(64):
                Y[j] = Y[j] + f32((k * 64 + j) // 32)
"""
    body = compile_source(src).steps.generated({}, "sm_90a").source.split("#endif  // TL_PRIMITIVES", 1)[1]
    assert "tl::floordiv<int>(((k * 64) + j), 32)" in body  # nvcc sees k >= 0 and j >= 0 itself
    assert "nonneg" not in body


def _instructions(sass: str) -> int:
    return len(re.findall(r"^\s+/\*[0-9a-f]{4,}\*/", sass, re.M))


@pytest.mark.nvcc
@pytest.mark.slow  # two sm_90a builds of the split-K w4a16 kernel (~7 s)
def test_the_split_k_w4a16_kernel_dequantizes_as_the_one_without(tmp_path):
    """nvcc's build with the sizes assumed (TL_ASSUME_SIZES, what NVRTC's builds assume): the
    split-K kernel at BM = 8, K steps of 512 on 3 stages has matmul_w4a16's SASS, half what it had
    (nvcc 13.0, sm_90a: 5,152 instructions and 254 registers -> 2,552 and 64; matmul_w4a16 2,480
    and 64), and without the assumption it stays as it was."""
    gemm = tlc.load("std.gemm", target="cpu")
    consts = {"BM": 8, "BK": 512, "stages": 3}
    split = gemm.matmul_w4a16_splitk.cuda_source("sm_90a", **consts)
    plain = gemm.matmul_w4a16.cuda_source("sm_90a", **consts)
    assumed, log = cubin_sass("#define TL_ASSUME_SIZES 1\n" + split, "sm_90a", tmp_path, "assumed")
    guarded, _ = cubin_sass(split, "sm_90a", tmp_path, "guarded")
    reference, _ = cubin_sass(plain, "sm_90a", tmp_path, "plain")
    assert _instructions(assumed) < 1.1 * _instructions(reference) < 0.6 * _instructions(guarded), \
        (_instructions(assumed), _instructions(reference), _instructions(guarded))
    assert int(re.search(r"Used (\d+) registers", log).group(1)) <= 96, log
    assert "LDL" not in assumed and "STL" not in assumed
