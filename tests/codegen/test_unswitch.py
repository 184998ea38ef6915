"""A serial loop whose body is one `if` on a test the loop cannot change is generated as that
`if` around two loops, one a branch (the schedule pass schedule/unswitch.py), nested loops from
the inside out: std.data.repeat, written with its whole-tile test at each copy, no longer keeps the element
path's registers live across its loops (tests/stdlib/test_data.py pins its SASS).  A test that
reads the loop's variable, a scalar its body assigns or an element stays inside the loop."""
from __future__ import annotations

import numpy as np
import pytest

import tlc
from kit_codegen import generated_source
from nvcc import compile_device

NESTED = """
@kernel
def k(x: f32[M], y: f32[P, Q], lo: i32):
    # y[p, q] = x[q] where lo is at most 0, else p + q (each loop's whole body one test)
    with grid(1, threads=32) as bx:
        for p in range(P):
            for q in range(Q):
                if lo <= 0:
                    y[p, q] = x[q]
                else:
                    y[p, q] = f32(p + q)
"""


def kept(test: str, before: str = "") -> str:
    return f"""
@kernel
def k(x: f32[M], y: f32[M]):
    # y[i] written where the test holds, element by element
    with grid(1, threads=32) as bx:
        s = 0
        for i in range(M):
            {before}
            if {test}:
                y[i] = x[i]
"""


def test_nested_loops_are_one_test_around_two_loop_nests():
    cu = generated_source(NESTED).source
    body = cu[cu.index("__global__"):]
    assert body.count("if ((lo <= 0)) {") == 1 and body.count("for (int p = 0;") == 2
    assert body.index("if ((lo <= 0)) {") < body.index("for (int p = 0;")


@pytest.mark.parametrize("src", [kept("i < 3"), kept("s < 3", "s = s + 1"), kept("x[0] > 0.0")],
                         ids=["the loop's variable", "an assigned scalar", "an element"])
def test_a_test_the_loop_can_change_stays_inside_it(src):
    cu = generated_source(src).source
    body = cu[cu.index("__global__"):]
    assert body.index("for (int i = 0;") < body.index("if ((")


@pytest.mark.nvcc
def test_the_unswitched_loops_compile_without_warnings(tmp_path):
    compile_device(generated_source(NESTED, arch="sm_90a").source, "sm_90a", tmp_path)


@pytest.mark.parametrize("target", ["interp", "cpu", pytest.param("cuda", marks=pytest.mark.gpu)])
@pytest.mark.parametrize("lo", [0, 1])
def test_both_branches_compute_as_written(target, lo):
    x = np.arange(5, dtype=np.float32)
    y = np.zeros((3, 5), np.float32)
    tlc.compile_source(NESTED, target=target).kernels["k"](x, y, lo)
    want = np.tile(x, (3, 1)) if lo <= 0 else np.add.outer(np.arange(3), np.arange(5)).astype(np.float32)
    np.testing.assert_array_equal(y, want)
