"""schedule/lower.py cast: a narrow float's |x| widened is computed as |x widened| (exact), not in
the narrow type and rounded to it first; other casts stay casts."""
import numpy as np

import tlc
from tlc import ir
from tlc.dtypes import BF16, F16, F32, F64, I32
from tlc.schedule.lower import cast

X = ir.Var("x", F16)


def test_the_abs_of_a_narrow_float_widens_its_operand():
    assert cast(ir.Call("abs", (X,), F16), F32) == ir.Call("abs", (ir.Cast(X, F32),), F32)
    y = ir.Var("y", BF16)
    assert cast(ir.Call("abs", (y,), BF16), F64) == ir.Call("abs", (ir.Cast(y, F64),), F64)


def test_other_casts_stay_casts():
    narrowing = ir.Call("abs", (ir.Var("z", F32),), F32)
    assert cast(narrowing, F16) == ir.Cast(narrowing, F16)
    i = ir.Call("abs", (ir.Var("n", I32),), I32)
    assert cast(i, F32) == ir.Cast(i, F32)
    assert cast(ir.Call("sqrt", (X,), F16), F32) == ir.Cast(ir.Call("sqrt", (X,), F16), F32)


def test_the_column_l1_norm_reads_abs_of_the_widened_tile_and_agrees_with_numpy():
    m = tlc.load("std.reduce", target="cpu")
    assert "tile_f32[j, i] = abs(f32(x_tile[j, i]))" in m.norm_l1_axis0.ir(T="f16")
    x = np.random.default_rng(1).standard_normal((300, 40)).astype(np.float16)
    x[0, 0] = -np.inf
    want = np.abs(x.astype(np.float64)).sum(axis=0)
    got = m.norm_l1_axis0(x).astype(np.float64)
    np.testing.assert_allclose(got[1:], want[1:], rtol=2e-3)
    assert got[0] == np.inf
