"""tileops/rows.py: a column kernel's loop as two, the steps whose tiles lie inside the tensor
with their elements unmasked, then the rest (at most one step) masked, both adding into one
partial (column_blocks.defer_column_combine); on the interpreter against NumPy for row counts
that leave either loop empty."""
from __future__ import annotations

import numpy as np
import pytest

import tlc
from tlc import ir
from tlc.ir.printer import expr
from tlc.ir.walk import statement_exprs, statements, subexprs


@pytest.fixture(scope="module")
def mod():
    return tlc.load("std.reduce", target="cpu")


def selects(loop: ir.For) -> int:
    return sum(isinstance(e, ir.Select) for s in statements(loop.body) for x in statement_exprs(s) for e in subexprs(x))


@pytest.mark.parametrize("name", ["sum_axis0", "norm_inf_axis0", "all_axis0", "var_axis0"])
def test_the_whole_steps_are_unmasked_and_the_rest_masked(mod, name):
    p = getattr(mod, name).program(dict(T="f16"), "sm_90a", sizes=dict(M=16384, N=8192))
    (k,) = p.kernels
    loops = [s for s in k.body if isinstance(s, ir.For)]
    assert len(loops) == 2 and loops[0].stop == loops[1].start and loops[1].stop == ir.Var("tiles", loops[1].stop.dtype)
    # 4 tiles of 128 rows a step; var_axis0 8 of 64 (three running values an element, one_pass.py)
    assert expr(loops[0].stop) == ("M // 512 * 8" if name == "var_axis0" else "M // 512 * 4")
    assert selects(loops[1]) > 0
    first = selects(loops[0])
    assert first == (8 if name == "var_axis0" else 0)  # var's shift from the first tile (t == 0), a tile each
    assert len([b for b in k.buffers if b.name.endswith("_part")]) == (0 if name == "var_axis0" else 1)


def test_rows_past_the_whole_steps_and_short_tensors_as_numpy(mod):
    rng = np.random.default_rng(3)
    for m in (1, 130, 512, 1024, 1100):  # the second loop alone, ..., the first alone, both
        x = rng.standard_normal((m, 24)).astype(np.float32)
        x[:, 3] = 0
        np.testing.assert_allclose(mod.sum_axis0(x), x.astype(np.float64).sum(axis=0), rtol=1e-5, atol=1e-4)
        np.testing.assert_array_equal(mod.norm_inf_axis0(x), np.abs(x).max(axis=0))
        np.testing.assert_array_equal(mod.all_axis0(x), (x != 0).all(axis=0))
        np.testing.assert_allclose(mod.var_axis0(x), x.astype(np.float64).var(axis=0), rtol=1e-4, atol=1e-5)
