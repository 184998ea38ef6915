"""A `where` of float values one of which calls a math function is `tl::select(c, a, b)` in the
generated C (codegen/cexpr.py): both arms computed, then selected, where a `?:` of the calls let
NVVM branch an element (std.elementwise's sinh: 20.4 SASS instructions an element with the
branch, 15.0 as a select; tests/stdlib/test_elementwise_sass.py).  A `where` of plain values stays
a `?:`, which costs nothing to keep (the golden snapshots' masks), and so does a mask of a call (one
arm a constant): computing its call for the masked elements cost std.reduce's lse row kernel a
spilled register."""
from __future__ import annotations

from tlc.codegen import generate
from tlc.driver import check_source
from tlc.schedule import schedule

SRC = """
@kernel
def pick(x: f32[N], y: f32[N], z: f32[N], w: f32[N]):
    with grid(cdiv(N, 128), threads=128) as bx:
        for i in parallel(128):
            v = x[bx * 128 + i]
            y[bx * 128 + i] = where(v < 1.0, v * v, exp(v) - exp(-v))
            z[bx * 128 + i] = where(v < 1.0, v * v, -v)
            w[bx * 128 + i] = where(v < 1.0, exp(v), 0.0)
"""


def test_a_where_of_calls_is_a_select_and_a_plain_one_a_conditional():
    checked = check_source(SRC, "pick.tl")
    assert checked.ok
    src = generate(schedule(checked.program, "pick", {}, target="sm_90a"), "sm_90a").source
    body = src[src.index("__global__"):]
    assert body.count("tl::select(") == 1
    assert "tl::select((v < 1.0f), (v * v), (expf(v) - expf((-v))))" in body
    assert "((v < 1.0f) ? (v * v) : (-v))" in body
    assert "((v < 1.0f) ? expf(v) : 0.0f)" in body
