"""The checker on two constructs of TileLang's flash-attention backward (tests/ports/mha_bwd_bhsd.tl):
a reduction's dim and clear given by position or by name (`reduce_sum(acc, delta, 1)`, negative
dims counted from the last), and a copy from global memory to global memory.  Each wrong use has
its exact diagnostic; the right uses check clean and reach the lowering as keywords."""
import pytest

from tlc.diagnostics import render_all
from tlc.driver import check_source
from tlc.ir import print_kernel
from tlc.schedule import schedule

HEAD = ("@kernel\ndef k(A: f32[M, N], C: f16[M, N], d: i32, BM: const = 16, D: const = 1):\n"
        "    with grid(cdiv(M, BM), threads=64) as bx:\n"
        "        f = fragment(f32[BM, 32])\n"
        "        m = fragment(f32[BM])\n")


def checked(*body: str):
    return check_source(HEAD + "".join("        " + line + "\n" for line in body), "t.tl")


def rendered(*body: str) -> str:
    r = checked(*body)
    return render_all(r.diagnostics, r.sources)


CASES = {
    'E262_dim': (
        ['reduce_sum(f, m, 1, dim=1)'],
        't.tl:6:29: error[E262]: reduce_sum() gets dim twice: as its third argument and as dim=\n  |\n6 |         reduce_sum(f, m, 1, dim=1)\n  |                             ^^^^^\n  = hint: give it once: reduce_sum(src, dst, 1) or reduce_sum(src, dst, dim=1)',
    ),
    'E262_clear': (
        ['reduce_max(f, m, 1, False, clear=True)'],
        't.tl:6:36: error[E262]: reduce_max() gets clear twice: as its fourth argument and as clear=\n  |\n6 |         reduce_max(f, m, 1, False, clear=True)\n  |                                    ^^^^^^^^^^\n  = hint: give it once: reduce_max(src, dst, 1, False) or reduce_max(src, dst, dim=1, clear=False)',
    ),
    'E263_run_time': (
        ['reduce_min(f, m, d)'],
        "t.tl:6:26: error[E263]: the dim of reduce_min() must be a constant integer; 'd' is not a constant\n  |\n6 |         reduce_min(f, m, d)\n  |                          ^\n  = hint: the dimension reduced fixes the destination's shape, so it is known when the kernel is compiled: write a literal such as 1 or -1 (counted from the last), or a const parameter",
    ),
    'E263_shape_symbol': (
        ['reduce_min(f, m, M)'],
        "t.tl:6:26: error[E263]: the dim of reduce_min() must be a constant integer; 'M' is not a constant\n  |\n6 |         reduce_min(f, m, M)\n  |                          ^\n  = hint: the dimension reduced fixes the destination's shape, so it is known when the kernel is compiled: write a literal such as 1 or -1 (counted from the last), or a const parameter",
    ),
    'E263_float': (
        ['reduce_sum(f, m, 1.5)'],
        "t.tl:6:26: error[E263]: the dim of reduce_sum() must be a constant integer; found 1.5\n  |\n6 |         reduce_sum(f, m, 1.5)\n  |                          ^^^\n  = hint: the dimension reduced fixes the destination's shape, so it is known when the kernel is compiled: write a literal such as 1 or -1 (counted from the last), or a const parameter",
    ),
    'E263_bool': (
        ['reduce_sum(f, m, True)'],
        "t.tl:6:26: error[E263]: the dim of reduce_sum() must be a constant integer; found True\n  |\n6 |         reduce_sum(f, m, True)\n  |                          ^^^^\n  = hint: the dimension reduced fixes the destination's shape, so it is known when the kernel is compiled: write a literal such as 1 or -1 (counted from the last), or a const parameter",
    ),
    'E264_int': (
        ['reduce_absmax(f, m, 1, 1)'],
        't.tl:6:32: error[E264]: the clear of reduce_absmax() must be a constant True or False; found 1\n  |\n6 |         reduce_absmax(f, m, 1, 1)\n  |                                ^\n  = hint: clear=True (the default) overwrites the destination; clear=False combines the reduction with the values it holds',
    ),
    'E264_run_time': (
        ['reduce_absmax(f, m, 1, clear=d > 0)'],
        "t.tl:6:38: error[E264]: the clear of reduce_absmax() must be a constant True or False; 'd' is not a constant\n  |\n6 |         reduce_absmax(f, m, 1, clear=d > 0)\n  |                                      ^^^^^\n  = hint: clear=True (the default) overwrites the destination; clear=False combines the reduction with the values it holds",
    ),
    'E038_negative': (
        ['reduce_sum(f, m, -3)'],
        't.tl:6:26: error[E038]: dim=-3 is out of range for the 2-D tile f32[BM, 32]\n  |\n6 |         reduce_sum(f, m, -3)\n  |                          ^^',
    ),
    'E038_positional': (
        ['reduce_max(f, m, 2, False)'],
        't.tl:6:26: error[E038]: dim=2 is out of range for the 2-D tile f32[BM, 32]\n  |\n6 |         reduce_max(f, m, 2, False)\n  |                          ^',
    ),
    'E038_the_default_is_the_last_dim': (
        ['g = fragment(f32[BM, 4, 8])', 'h = fragment(f32[BM, 8])', 'reduce_sum(g, h)'],
        't.tl:8:9: error[E038]: reduce_sum of f32[BM, 4, 8] along dim 2 gives [BM, 4], but the destination is f32[BM, 8]\n  |\n8 |         reduce_sum(g, h)\n  |         ^^^^^^^^^^^^^^^^',
    ),
    'E034_too_many': (
        ['reduce_sum(f, m, 1, True, 2)'],
        't.tl:6:9: error[E034]: reduce_sum() takes 2 to 4 arguments, 5 given\n  |\n6 |         reduce_sum(f, m, 1, True, 2)\n  |         ^^^^^^^^^^^^^^^^^^^^^^^^^^^^',
    ),
    'E265_whole_tensors': (
        ['copy(A, C)'],
        "t.tl:6:9: error[E265]: a copy from global to global memory takes the tile's size from a region with slices, and neither side has one\n  |\n6 |         copy(A, C)\n  |         ^^^^^^^^^^\n  = hint: each block copies its region: copy(A[bx * BM:(bx + 1) * BM, :], B[bx * BM:(bx + 1) * BM, :])",
    ),
    'E265_origins': (
        ['copy(A[bx, 0], C[bx, 0])'],
        "t.tl:6:9: error[E265]: a copy from global to global memory takes the tile's size from a region with slices, and neither side has one\n  |\n6 |         copy(A[bx, 0], C[bx, 0])\n  |         ^^^^^^^^^^^^^^^^^^^^^^^^\n  = hint: each block copies its region: copy(A[bx * BM:(bx + 1) * BM, :], B[bx * BM:(bx + 1) * BM, :])",
    ),
}


@pytest.mark.parametrize("key", CASES)
def test_wrong_uses_have_their_exact_diagnostic(key):
    body, want = CASES[key]
    assert rendered(*body) == want


RIGHT = [
    "reduce_sum(f, m, 1)",  # TileLang's T.reduce_sum(acc, delta, 1)
    "reduce_sum(f, m, -1, False)",
    "reduce_max(f, m, 1, clear=False)",
    "reduce_min(f, m, dim=-1, clear=True)",
    "reduce_absmax(f, m, D)",  # a const parameter
    "reduce_sum(f, m, BM // 16, not True)",  # constant expressions
    "copy(A[bx * BM:(bx + 1) * BM, 0:32], C[bx * BM:(bx + 1) * BM, 0:32])",
    "copy(A[bx * BM:(bx + 1) * BM, 0:32], C[bx * BM, 0])",  # an origin takes the other side's extents
]


@pytest.mark.parametrize("body", RIGHT)
def test_right_uses_check_clean(body):
    assert rendered(body) == ""


@pytest.mark.parametrize("body, ir_text", [
    ("reduce_sum(f, m, 1, False)", "reduce_sum f -> m dim=1 accumulate"),
    ("reduce_max(f, m, -1)", "reduce_max f -> m dim=1\n"),
    ("reduce_min(f, c, clear=False, dim=-2)", "reduce_min f -> c dim=0 accumulate"),
    ("reduce_sum(f, c, 0, clear=False)", "reduce_sum f -> c dim=0 accumulate"),
])
def test_options_by_position_or_by_name_reach_the_tile_ir(body, ir_text):
    r = checked("c = fragment(f32[32])", body, "copy(m, A[bx * BM:(bx + 1) * BM, 0])", "copy(c, A[0, 0:32])")
    assert r.ok, render_all(r.diagnostics, r.sources)
    kernel = schedule(r.program, "k", {}, target="sm_80")
    assert ir_text in print_kernel(kernel)
