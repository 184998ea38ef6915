"""schedule/unswitch.py: a serial loop whose body is one test it cannot change is, in the tile
IR, that test around two loops (tests/codegen/test_unswitch.py checks the C it becomes and that
both branches compute as written)."""
from __future__ import annotations

from dataclasses import replace

import tlc
from tlc import ir
from tlc.schedule import PASSES
from tlc.schedule.unswitch import unswitch_loops

NESTED = """
@kernel
def k(x: f32[M], y: f32[P, Q], n: i32):
    # y[p, q] += x[q] for every p, q where n is positive (no else: one loop nest)
    with grid(1, threads=32) as bx:
        y[0, 0] = 0.0
        for p in range(P):
            for q in range(Q):
                if n > 0:
                    y[p, q] = y[p, q] + x[q]
"""

def _scheduled(src: str) -> ir.Kernel:
    return tlc.compile_source(src, target="cpu").kernels["k"].scheduled({}, "sm_80")


def _shape(s):
    """A statement as nested tuples of its kind and its bodies' statements."""
    if isinstance(s, ir.If):
        return ("if", tuple(map(_shape, s.then)), tuple(map(_shape, s.orelse)))
    if isinstance(s, ir.For):
        return ("for", s.var, tuple(map(_shape, s.body)))
    return type(s).__name__


def test_the_scheduled_ir_holds_the_test_around_two_loop_nests():
    top = _scheduled(NESTED).body[-1]
    assert _shape(top) == ("if", (("for", "p", (("for", "q", ("Store",)),)),), ())


def test_it_runs_before_the_warp_specialization_and_keeps_what_it_does_not_rewrite():
    assert PASSES.index("unswitch_loops") + 1 == PASSES.index("specialize_warps")
    k = _scheduled(NESTED)
    assert unswitch_loops(k) is k  # nothing left to unswitch: the same kernel, not a copy
    test = k.body[-1]
    outer = replace(test.then[0], var="i", body=(test,))  # for i: (the test around the p loops)
    again = unswitch_loops(replace(k, body=(k.body[0], outer)))
    assert again.body[0] is k.body[0]  # not on the way to a rewritten loop: kept as it was
    assert _shape(again.body[1]) == ("if", (("for", "i", (_shape(test.then[0]),)),), ())
