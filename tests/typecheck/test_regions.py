"""Regions written as TileLang writes them (issue #20): the extent of `by * BM:(by + 1) * BM` is
found by simplifying stop - start (tlc/typecheck/linear.py), single indices drop their
dimension as in NumPy (`Q[b, rows, h, :]`, `lse[k, :]`), and pipelined(n, stages=0) is a loop
without prefetch.  What is accepted, and each wrong use with its exact diagnostic."""
import pytest

from test_diagnostics import rendered
from tlc.parser import nodes as n, parse
from tlc.typecheck import linear


def kernel_body(*lines: str) -> str:
    head = ("@kernel\ndef k(A: f32[M, N], Q: f16[B, T, H, 64], C: f32[M, N], BM: const = 64):\n"
            "    with grid(cdiv(M, BM), threads=128) as bx:\n")
    return head + "".join("        " + line + "\n" for line in lines)


ACCEPTED = {
    "tilelang_slices_both_sides": ('s = shared(f32[BM, 64])', 'copy(A[bx * BM:(bx + 1) * BM, 0:64], s)',
                                   'copy(s, C[bx * BM:(bx + 1) * BM, 64:128])'),
    "start_plus_extent": ('s = shared(f32[BM, 64])', 'for k in range(4):',
                          '    copy(A[bx * BM:bx * BM + BM, k * 64:k * 64 + 64], s)'),
    "extent_from_constants": ('s = shared(f32[BM, 64])', 'copy(A[2 * bx * BM:(2 * bx + 1) * BM, (BM - 64) * bx:64 + 0], s)'),
    "stop_written_first": ('s = shared(f32[BM, 64])', 'copy(A[BM + bx * BM - BM:(1 + bx) * BM, 0:-(-64)], s)'),
    "a_head_of_bshd": ('s = shared(f16[BM, 64])', 'copy(Q[1, bx * BM:(bx + 1) * BM, 2, :], s)',
                       'copy(s, Q[0, bx * BM:(bx + 1) * BM, bx, 0:64])'),
    "rows_of_buffers": ('f = fragment(f32[BM, 64])', 'r = shared(f32[64])', 'copy(f[3, :], r)', 'copy(r, f[bx, 0:64])',
                        'copy(f[0, :], C[bx, 0:64])', 'copy(A[bx, 0:64], f[1, :])'),
    "origin_regions_keep_their_meaning": ('s = shared(f16[BM, 64])', 'copy(Q[0, 1, bx * BM, 0], s)',
                                          'copy(Q[0, bx * BM:bx * BM + BM, 1, 0], s)'),
    # an extent of a shape symbol specializes it (tests/runtime/test_specialize.py)
    "extent_is_a_shape_symbol": ('s = shared(f32[BM, 64])', 'copy(A[bx * BM:(bx + 1) * BM, 0:N], s)',
                                 'copy(s, C[bx * BM:(bx + 1) * BM, :])'),
    "shapes_that_agree_but_for_ones": ('s = shared(f16[1, 64])', 'copy(Q[0, bx * BM:bx * BM + 64, 2, 7], s)',
                                       't = shared(f32[BM, 1])', 'copy(t, A[0:BM, bx])'),
    "stages_0_and_1": ('for k in pipelined(4, stages=0):', '    pass', 'for k in pipelined(4, stages=1):', '    pass'),
}


@pytest.mark.parametrize("name", ACCEPTED)
def test_accepted(name):
    assert rendered(kernel_body(*ACCEPTED[name])) == ""


HINT = ("  = hint: write the region as r:r+BM or by * BM:(by + 1) * BM, with BM a constant")
CASES = {
    "E031_extent_grows_with_the_block": (
        ('s = shared(f32[BM, 64])', 'copy(A[bx * BM:bx * 2 * BM, 0:64], s)'),
        "t.tl:5:16: error[E031]: the extent of a region must be a compile-time constant; this one is 64 * bx\n"
        "  |\n5 |         copy(A[bx * BM:bx * 2 * BM, 0:64], s)\n  |                ^^^^^^^^^^^^^^^^^^^\n" + HINT),
    "E031_stages_out_of_range": (
        ('for k in pipelined(4, stages=9):', '    pass'),
        "t.tl:4:38: error[E031]: stages must be an integer from 0 to 8, found 9\n"
        "  |\n4 |         for k in pipelined(4, stages=9):\n  |                                      ^\n"
        "  = hint: 0 or 1 runs the loop without prefetching"),
    "E031_stages_a_bool": (
        ('for k in pipelined(4, stages=True):', '    pass'),
        "t.tl:4:38: error[E031]: stages must be an integer from 0 to 8, found True\n"
        "  |\n4 |         for k in pipelined(4, stages=True):\n  |                                      ^^^^\n"
        "  = hint: 0 or 1 runs the loop without prefetching"),
    "E061_simplified_extent_is_empty": (
        ('s = shared(f32[BM, 64])', 'copy(A[bx * BM:(bx + 1) * BM - BM, 0:64], s)'),
        "t.tl:5:16: error[E061]: this region is empty (0 elements)\n"
        "  |\n5 |         copy(A[bx * BM:(bx + 1) * BM - BM, 0:64], s)\n  |                ^^^^^^^^^^^^^^^^^^^^^^^^^^"),
    "E036_dropped_dimensions_leave_another_rank": (
        ('s = shared(f16[BM])', 'copy(Q[0, bx * BM:(bx + 1) * BM, 1, :], s)'),
        "t.tl:5:9: error[E036]: copy between 2-D and 1-D tiles: [64, 64] and [BM]\n"
        "  |\n5 |         copy(Q[0, bx * BM:(bx + 1) * BM, 1, :], s)\n  |         ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^\n"
        "  = hint: a single index drops its dimension, as in NumPy: Q[b, r:r+BM, h, :] is a [BM, D] tile; a region "
        "given only by single indices, A[r, c], is an origin with the other side's shape"),
    "E036_dropped_dimensions_leave_another_shape": (
        ('s = shared(f16[BM, 32])', 'copy(Q[0, bx * BM:(bx + 1) * BM, 1, :], s)'),
        "t.tl:5:9: error[E036]: copy between tiles of different shapes: [64, 64] and [BM, 32]\n"
        "  |\n5 |         copy(Q[0, bx * BM:(bx + 1) * BM, 1, :], s)\n  |         ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^"),
    "E036_two_origins": (
        ('s = shared(f16[BM, 64])', 'copy(Q[0, 1, 2, 3], s[1, 0])'),
        "t.tl:5:9: error[E036]: both sides of copy are regions; one side must be a buffer that gives the tile's shape\n"
        "  |\n5 |         copy(Q[0, 1, 2, 3], s[1, 0])\n  |         ^^^^^^^^^^^^^^^^^^^^^^^^^^^^"),
}


@pytest.mark.parametrize("name", CASES)
def test_diagnostic(name):
    lines, want = CASES[name]
    assert rendered(kernel_body(*lines)) == want


def _e(text: str):
    return parse(f"X = {text}\n").consts[0].value


@pytest.mark.parametrize("a, b, consts, diff", [
    ("(by + 1) * BM", "by * BM", {"BM": 64}, 64),
    ("(by + 1) * BM", "by * BM", {}, None),  # BM a symbol: the extent is BM, not a constant
    ("by * BM + BM", "BM * by", {}, "BM"),
    ("2 * (k + 3) // 2", "k", {}, 3),  # an exact // by a constant divides every term
    ("(k + 3) // 2", "k // 2", {}, None),  # not exact: kept as a part of its own
    ("cdiv(K, 128) + 1", "cdiv(K, 128)", {}, 1),  # the same call is the same atom
    ("x * y - y * x", "0", {}, 0),
])
def test_linear_difference(a, b, consts, diff):
    got = linear.difference(_e(a), _e(b), consts)
    if isinstance(diff, str):
        assert got is None and linear.to_expr(linear.simplify(n.BinOp("-", _e(a), _e(b)), consts)) == n.Name(diff)
    else:
        assert got == diff
