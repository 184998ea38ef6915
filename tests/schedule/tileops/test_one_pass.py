"""A column kernel's pairs of reductions that would read the tensor twice, in one pass
(tlc/schedule/tileops/one_pass.py): a mean and the squares centred on it, a maximum and the sum
of exponentials about it.  The plan (one loop, the note), and the values on the interpreter
against float64 NumPy where one pass could go wrong: columns far from 0 with an outlier where a
thread takes its shift, -inf, inf and nan columns, values far apart (a reference raised), rows
that end inside a tile."""
from __future__ import annotations

import numpy as np
import pytest

from tileops_kit import module
from tlc import ir

SRC = """
@tile_op
def var0(x: f32[M, N]) -> f32[N]:
    c = x - mean(x, axis=0, keepdims=True)
    return mean(c * c, axis=0)

@tile_op
def sq0(x: f32[M, N]) -> f32[N]:
    c = x - mean(x, axis=0, keepdims=True)
    return sum(c * c, axis=0)

@tile_op
def lse0(x: f32[M, N]) -> f32[N]:
    m = max(x, axis=0, keepdims=True)
    return log(sum(exp(x - m), axis=0)) + max(x, axis=0)

@tile_op
def var1(x: f32[M, N]) -> f32[M]:
    c = x - mean(x, axis=1, keepdims=True)
    return mean(c * c, axis=1)

@tile_op
def other0(x: f32[M, N]) -> f32[N]:
    c = x - mean(x, axis=0, keepdims=True)
    return mean(c * x, axis=0)
"""

SHAPES = [(1, 5), (3, 40), (129, 33), (700, 3), (2100, 2)]


def plan(name: str):
    (launch,) = getattr(module(SRC), name).program({}, "sm_90a", sizes={"M": 4096, "N": 4096}).launches
    return launch.kernel


@pytest.mark.parametrize("name", ["var0", "sq0", "lse0"])
def test_column_pairs_take_one_loop_and_say_so(name):
    """one loop over the rows, as two: its whole steps, then the rest (test_column_loop_split.py)"""
    k = plan(name)
    loops = [s for s in k.body if isinstance(s, ir.For)]
    assert len(loops) == 2 and loops[0].stop == loops[1].start
    assert [n for n in k.notes if " in one pass: " in n]


def test_exponentials_rescale_once_a_step_without_selects():
    """Rescaled once a step: the loop over whole steps has no select (the lazy form selects the
    exponent, the sum and the reference of every element) and one exponential a tile and one a
    step; the note says which form."""
    from tlc.ir.walk import statement_exprs, statements, subexprs

    def plan_with(**rules):
        (launch,) = module(SRC).lse0.with_rules(**rules).program({}, "sm_90a", sizes={"M": 4096, "N": 4096}).launches
        k = launch.kernel
        loop = next(s for s in k.body if isinstance(s, ir.For))
        exprs = [e for s in statements(loop.body) for x in statement_exprs(s) for e in subexprs(x)]
        copies = sum(isinstance(s, ir.Copy) for s in statements(loop.body))
        return k, copies, sum(isinstance(e, ir.Select) for e in exprs), \
            sum(isinstance(e, ir.Call) and e.fn in ("exp", "fast_exp2") for e in exprs)

    k, tiles, selects, exps = plan_with()
    assert (selects, exps) == (0, tiles + 1)
    assert [n for n in k.notes if "rescaled once a step (one exponential an element)" in n]
    k, tiles, selects, exps = plan_with(col_step_max=False)
    assert selects == 3 * tiles and exps == tiles
    assert [n for n in k.notes if "raised when an element exceeds it by more than 32" in n]


@pytest.mark.parametrize("name", ["var1", "other0"])
def test_rows_and_other_products_keep_their_passes(name):
    """Rows (axis 1) are not paired (a row that fits a tile reads registers in its second pass);
    nor is a product that is not the centred value squared."""
    k = plan(name)
    assert not [n for n in k.notes if " in one pass: " in n]


def lse_ref(x):
    x = x.astype(np.float64)
    m = x.max(axis=0)
    with np.errstate(all="ignore"):
        return np.log(np.exp(x - m).sum(axis=0)) + m


@pytest.mark.parametrize("M,N", SHAPES)
def test_centred_squares_against_float64(M, N):
    """Columns at 1e4 with unit spread and an outlier in the first row (where the threads take
    their shifts): the one pass keeps f32's precision of the centred sum."""
    rng = np.random.default_rng(M * 7 + N)
    x = (1e4 + rng.standard_normal((M, N))).astype(np.float32)
    x[0, 0] = 1e4 + 1e3
    mod = module(SRC)
    want = x.astype(np.float64).var(axis=0)
    np.testing.assert_allclose(mod.var0(x), want, rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(mod.sq0(x), want * M, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("M,N", SHAPES)
def test_sum_of_exponentials_against_float64(M, N):
    rng = np.random.default_rng(M * 11 + N)
    x = (30 * rng.standard_normal((M, N))).astype(np.float32)
    got = module(SRC).lse0(x)
    np.testing.assert_allclose(got, lse_ref(x), rtol=1e-6, atol=1e-5)


@pytest.mark.parametrize("step_max", [True, False])
def test_sum_of_exponentials_edge_values(step_max):
    """A column of -inf gives nan (as max + log(sum(exp(x - max))) does), +inf or nan in a column
    gives nan, -inf among numbers adds nothing, values 80 apart raise a place's reference; rescaled
    once a step (the default) or lazily."""
    rng = np.random.default_rng(5)
    x = rng.standard_normal((300, 6)).astype(np.float32)
    x[:, 0] = -np.inf
    x[5, 1] = np.inf
    x[7, 2] = np.nan
    x[:150, 3] = -np.inf
    x[299, 4] = 80.0
    x[::2, 5] -= 200.0
    got, want = module(SRC).lse0.with_rules(col_step_max=step_max)(x), lse_ref(x)
    assert np.isnan(got[:3]).all() and np.isnan(want[:3]).all()
    np.testing.assert_allclose(got[3:], want[3:], rtol=1e-6)
