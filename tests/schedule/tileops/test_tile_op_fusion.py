"""Fusion decisions: which tile ops are one kernel, what the plan says at each boundary, and
the exact text of @fuse's diagnostic (E072) and of a construct the scheduler does not take
(E073)."""
from __future__ import annotations

import numpy as np
import pytest

from tileops_kit import LAYERNORM, assert_close, error_text, f32, module, rand

FUSED = """
from std.math import gelu

@fuse
@tile_op
def linear_bias_gelu(x: f16[M, K], w: f16[N, K], b: f32[N]) -> f16[M, N]:
    return f16(gelu(x @ w.T + b))

@fuse
@tile_op
def residual(x: f16[M, K], w: f16[K, N], r: f16[M, N], s: f32) -> f16[M, N]:
    return f16(s * (x @ w) + r)

@fuse
@tile_op
def chain(x: f16[N], y: f16[N]) -> f16[N]:
    return f16(exp(x * y) - sqrt(abs(y)) + x)

@fuse
@tile_op
def smax(x: f16[M, N]) -> f16[M, N]:
    return softmax(x, axis=1)

@fuse
@tile_op
def logsumexp(x: f32[M, N]) -> f32[M, 1]:
    m = max(x, axis=1, keepdims=True)
    return m + log(sum(exp(x - m), axis=1, keepdims=True))
""" + "@fuse\n@tile_op" + LAYERNORM


@pytest.mark.parametrize("name, kind", [("linear_bias_gelu", "matmul"), ("residual", "matmul"),
                                        ("chain", "elementwise"), ("smax", "rows"), ("layernorm", "rows"),
                                        ("logsumexp", "rows")])
def test_fuse_programs_are_one_kernel(name, kind):
    prog = getattr(module(FUSED), name).program()
    assert [x.kind for x in prog.launches] == [kind]
    assert prog.temps == () and prog.boundaries == ()
    assert prog.launches[0].kernel.name == name


def test_an_epilogue_rounds_to_the_results_dtype_once():
    # f16(gelu(...)) into an f16 result: the store rounds; the epilogue keeps the f32 value
    from tlc import ir

    text = ir.print_kernel(module(FUSED).linear_bias_gelu.program().launches[0].kernel)
    epilogue = next(line for line in text.splitlines() if line.strip().startswith("acc[i"))
    assert epilogue.strip() == "acc[i, j] = gelu_0_return"


NAMED_CALL = """
def cube_or_zero(x: f32) -> f32:
    if x < 0.0:
        return 0.0
    return x * x * x

@tile_op
def odd(x: f32[M, N]) -> f32[M, N]:
    u = cube_or_zero(abs(x))
    r = u + u / (u + 1.0)
    return where(x < 0.0, -r, r)
"""


def test_an_intermediate_inlines_its_device_function_once():
    """`u` read three times and `r` twice: one inlined call an element, not six (std.elementwise's
    sinh was six expm1s with their branches, which nvcc does not merge)."""
    from tlc import ir
    mod = module(NAMED_CALL)
    text = ir.print_kernel(mod.odd.program().launches[0].kernel)
    assert text.count("let cube_or_zero_") == 2  # its x and its result
    x = rand(np.random.default_rng(0), (5, 7))
    u = np.abs(x) ** 3
    r = u + u / (u + 1)
    assert_close(mod.odd(x), np.where(x < 0, -r, r))


def test_an_intermediate_that_calls_math_is_computed_once():
    """fmod's `r = a % b` is read four times: one remainder (fmodf's loop) an element, a scalar;
    an intermediate of plain arithmetic stays an expression where read."""
    from tlc import ir
    ew = module(STD_FMOD)
    text = ir.print_kernel(ew.fmod.program().launches[0].kernel)
    assert text.count(" % ") == 1 and "let r_0: f32 = a_tile[i] % b_tile[i]" in text
    text = ir.print_kernel(ew.centred.program().launches[0].kernel)
    assert "    out_tile[i] = (a_tile[i] - b_tile[i]) * (a_tile[i] - b_tile[i])\n" in text


STD_FMOD = """
@tile_op
def fmod(a: f32[M, N], b: f32[M, N]) -> f32[M, N]:
    r = a % b
    return where(r == 0.0, r, where((a < 0.0) != (b < 0.0), r - b, r))

@tile_op
def centred(a: f32[M, N], b: f32[M, N]) -> f32[M, N]:
    c = a - b
    return c * c
"""


def test_logsumexp_takes_two_passes_in_one_kernel():
    """The sum reads the max: a second pass over each row, in the same kernel."""
    from tlc import ir
    prog = module(FUSED).logsumexp.program()
    (branch,) = [s for s in prog.launches[0].kernel.body if isinstance(s, ir.If)]
    # rows of one tile (N the tile's length, unmasked, and shorter): read once, both reductions
    # from registers; longer rows: one loop per pass
    (exact,) = branch.then
    for path in (exact.then, exact.orelse):
        assert not [s for s in path if isinstance(s, ir.For)]
        assert [s.kind for s in path if isinstance(s, ir.Reduce)] == ["max", "sum"]
    assert len([s for s in branch.orelse if isinstance(s, ir.For)]) == 2


SPLIT = """
@fuse
@tile_op
def scores(q: f16[M, K], k: f16[N, K]) -> f16[M, N]:
    s = q @ k.T
    return f16(softmax(s, axis=1))
"""


def test_fuse_names_the_operation_that_breaks_fusion():
    assert error_text(SPLIT, "scores") == (
        "ops.tl:5:9: error[E072]: @fuse: 'q @ k.T' cannot be fused: 'softmax(s, axis=1)' needs whole rows it "
        "reduces, and a matmul kernel holds one tile of the product\n"
        "  |\n"
        "5 |     s = q @ k.T\n"
        "  |         ^^^^^^^\n"
        "  = hint: without @fuse this tile op runs as 2 kernels")


OPERANDS = """
@fuse
@tile_op
def scaled_linear(x: f16[M, K], s: f32[K], w: f16[N, K], b: f32[N]) -> f16[M, N]:
    return f16((f16(x * s) @ w.T) + b)

@fuse
@tile_op
def both_computed(x: f32[M, K], w: f32[K, N]) -> f32[M, N]:
    return f16(exp(x * 0.5)) @ f16(w * 2.0)
"""


def test_element_wise_operands_are_computed_into_the_matmuls_tiles():
    mod = module(OPERANDS)
    prog = mod.scaled_linear.program()
    assert len(prog.launches) == 1 and not prog.temps and not prog.boundaries
    k = prog.launches[0].kernel
    # w's tile is still copied (and pipelined); x * s is evaluated into As, 0 outside the operand
    assert "left operand f16(x * s) (computed into its shared tile each K step)" in prog.describe()
    loop = next(st for st in k.body if getattr(st, "kind", "") == "pipelined")
    assert type(loop.body[0]).__name__ == "Copy" and loop.body[0].src.name == "w"
    assert type(loop.body[1]).__name__ == "Parallel"
    rng = np.random.default_rng(3)
    for m, n, kk in [(130, 70, 100), (1, 9, 33)]:  # ragged: tiles past M, N and K
        x, s, w, b = rand(rng, (m, kk), np.float16), rand(rng, kk), rand(rng, (n, kk), np.float16), rand(rng, n)
        want = (f32(x) * s).astype(np.float16).astype(np.float32) @ f32(w).T + b
        assert_close(mod.scaled_linear(x, s, w, b), want, np.float16)
    x, w = rand(rng, (70, 45)), rand(rng, (45, 90))
    want = f32(np.exp(x * 0.5).astype(np.float16)) @ f32((w * 2.0).astype(np.float16))
    assert len(mod.both_computed.program().launches) == 1
    assert_close(mod.both_computed(x, w), want, np.float16)


def test_without_fuse_a_computed_operand_goes_through_a_temporary():
    # the copied (TMA / cp.async) operand keeps std.gemm's fast loop; computing it per K step does not
    prog = module(OPERANDS.replace("@fuse\n", "")).scaled_linear.program()
    assert [x.kernel.name for x in prog.launches] == ["scaled_linear_0_elementwise", "scaled_linear_1_matmul"]


def test_an_operand_that_reads_a_reduction_breaks_fusion():
    src = "@fuse\n@tile_op\ndef t(x: f16[M, K], w: f16[N, K]) -> f32[M, N]:\n    return softmax(x, axis=1) @ w.T\n"
    assert error_text(src, "t") == (
        "ops.tl:4:12: error[E072]: @fuse: 'softmax(x, axis=1)' cannot be fused: the left operand of "
        "'softmax(x, axis=1) @ w.T' reads 'softmax(x, axis=1)', which needs more than the operand's tile; an "
        "operand is loaded from a tensor or computed element-wise from parameters\n"
        "  |\n"
        "4 |     return softmax(x, axis=1) @ w.T\n"
        "  |            ^^^^^^^^^^^^^^^^^^\n"
        "  = hint: without @fuse this tile op runs as 2 kernels")


def test_second_product_breaks_fusion():
    src = ("@fuse\n@tile_op\ndef t(x: f16[M, K], a: f16[K, N], b: f16[K, N]) -> f32[M, N]:\n"
           "    return x @ a + x @ b\n")
    assert error_text(src, "t").splitlines()[0] == (
        "ops.tl:4:20: error[E072]: @fuse: 'x @ b' cannot be fused: it is a second matrix product next to 'x @ a'; "
        "one kernel computes one '@'")


def test_reductions_along_two_axes_break_fusion():
    src = ("@fuse\n@tile_op\ndef t(x: f32[M, N]) -> f32[M, N]:\n"
           "    return x - mean(x, axis=1, keepdims=True) - mean(x, axis=0, keepdims=True)\n")
    assert error_text(src, "t").splitlines()[0] == (
        "ops.tl:4:49: error[E072]: @fuse: 'mean(x, axis=0, keepdims=True)' cannot be fused: it reduces another "
        "shape or axis than 'mean(x, axis=1, keepdims=True)', and a row kernel reduces one")


def test_without_fuse_the_same_program_runs_as_two_kernels():
    prog = module(SPLIT.replace("@fuse\n", "")).scores.program()
    assert [x.kernel.name for x in prog.launches] == ["scores_0_matmul", "scores_1_rows"]
    assert [t.name for t in prog.temps] == ["tmp0"]


FULL = """
@tile_op
def total(x: f32[M, N]) -> f32[1, 1]:
    return sum(x, keepdims=True)

@tile_op
def centred(x: f32[M, N]) -> f32[M, N]:
    return x - mean(x, keepdims=True)

@tile_op
def extremes(x: f16[M, N]) -> f16[1, 1]:
    return max(x, keepdims=True) - min(x, keepdims=True)
"""


def test_a_reduction_over_every_axis_of_a_matrix_runs_as_rows_then_their_results():
    mod = module(FULL)
    prog = mod.total.program()
    assert [x.kind for x in prog.launches] == ["rows", "rows"] and len(prog.temps) == 1
    assert prog.temps[0].shape == ("M", 1)  # the rows' partial sums
    rng = np.random.default_rng(4)
    for m, n in [(300, 200), (1, 7), (1000, 3)]:
        x = rand(rng, (m, n))
        assert_close(mod.total(x), x.astype(np.float64).sum(keepdims=True).astype(np.float32))
        assert_close(mod.centred(x), x - x.astype(np.float64).mean(keepdims=True).astype(np.float32))
        h = rand(rng, (m, n), np.float16)
        np.testing.assert_array_equal(mod.extremes(h), (h.max(keepdims=True) - h.min(keepdims=True)).astype(np.float16))


def test_fuse_says_why_a_reduction_over_every_axis_takes_two_kernels():
    src = "@fuse\n@tile_op\ndef t(x: f32[M, N]) -> f32[1, 1]:\n    return sum(x, keepdims=True)\n"
    assert error_text(src, "t") == (
        "ops.tl:4:12: error[E072]: @fuse: 'sum(x, keepdims=True)' cannot be fused: a reduction over every axis of "
        "a matrix takes two kernels: the rows, then their results\n"
        "  |\n"
        "4 |     return sum(x, keepdims=True)\n"
        "  |            ^^^^^^^^^^^^^^^^^^^^^\n"
        "  = hint: without @fuse this tile op runs as 2 kernels")


def test_three_dimensional_tensors():
    src = "@tile_op\ndef t(x: f32[B, M, N]) -> f32[B, M, N]:\n    return x * 2.0\n"
    assert error_text(src, "t") == (
        "ops.tl:2:7: error[E073]: tile op tensors have one or two dimensions; 'x' has 3\n"
        "  |\n"
        "2 | def t(x: f32[B, M, N]) -> f32[B, M, N]:\n"
        "  |       ^^^^^^^^^^^^^^^\n"
        "  = hint: reshape it to a matrix before the call")


def test_mixed_operand_dtypes():
    src = "@tile_op\ndef t(x: f16[M, K], w: f32[K, N]) -> f32[M, N]:\n    return x @ w\n"
    assert error_text(src, "t") == (
        "ops.tl:3:12: error[E073]: 'x @ w' multiplies f16 by f32; the operands of '@' need one dtype\n"
        "  |\n"
        "3 |     return x @ w\n"
        "  |            ^^^^^\n"
        "  = hint: convert one of them, e.g. f16(...)")


def test_reduction_without_keepdims_read_along_the_rows():
    src = "@tile_op\ndef t(x: f32[N, N]) -> f32[N, N]:\n    return x - sum(x, axis=1)\n"
    assert error_text(src, "t") == (
        "ops.tl:3:16: error[E073]: 'sum(x, axis=1)' is read at other rows than the ones it reduces\n"
        "  |\n"
        "3 |     return x - sum(x, axis=1)\n"
        "  |                ^^^^^^^^^^^^^^\n"
        "  = hint: keep the reduced axis (keepdims=True) so that it broadcasts along the rows it was computed from")
