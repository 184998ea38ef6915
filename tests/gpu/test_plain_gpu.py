"""The plain kernels of bench/plain/ on the GPU against NumPy (default constants, ragged and
large shapes), and the exchanges layout inference keeps where two fixed layouts meet (a loop
reading a fragment transposed; a copy between wgmma's and mma.sync's accumulators), so that
the vectorized exchange primitives run on hardware.  Run with `pytest -m gpu` on a GPU."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import tlc

TESTS = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(TESTS / "plain"))  # the plain kernels' inputs and references
from plain_kit import CASES, inputs, reference, rel_err  # noqa: E402

pytestmark = pytest.mark.gpu

SIZES = {  # a large case per kernel, and a ragged one
    "softmax": [{"M": 64, "N": 8192}, {"M": 7, "N": 5000}],
    "rms_norm": [{"M": 64, "N": 8192}, {"M": 7, "N": 1000}],
    # (its rows pipelined, schedule/pipeline_rows.py: 5000 rows are more than the blocks an
    # H200 holds at once, so each block walks several, through both stages of its ring)
    "layer_norm": [{"M": 5000, "N": 8192}, {"M": 7, "N": 3001}],
    "column_sums": [{"M": 4096, "N": 4096}, {"M": 1001, "N": 333}],
    "transpose": [{"M": 4096, "N": 2048}, {"M": 1001, "N": 333}],
    "saxpy": [{"N": 1 << 22}, {"N": 3001}],
    "gemm": [{"M": 1024, "N": 1024, "K": 512}, {"M": 300, "N": 200, "K": 100}],
    "bias_relu": [{"M": 4096, "N": 4096}, {"M": 1001, "N": 333}],
}


@pytest.mark.parametrize("which", [0, 1], ids=["large", "ragged"])
@pytest.mark.parametrize("case", CASES, ids=[c.file for c in CASES])
def test_plain_kernel_against_numpy(case, which):
    sizes = SIZES[case.file][which]
    args, outs, scalars = inputs(case, sizes, seed=which)
    getattr(tlc.load(case.path, target="cuda"), case.kernel)(*args, **scalars)
    tol = case.tol if case.file != "column_sums" else 1e-4  # (4096 f32 terms summed in another order)
    assert rel_err(outs[0], reference(case, args, scalars)) <= tol


def test_scalar_reads_of_a_row_narrower_than_the_blocks_runs():
    """rms_norm with BN = 512 over 256 threads: 64 runs of 8, so the reduction finishes into
    every thread (layout 'in every thread') before the scalar read."""
    case = next(c for c in CASES if c.file == "rms_norm")
    args, outs, scalars = inputs(case, {"M": 9, "N": 500})
    tlc.load(case.path, target="cuda").rms_norm(*args, **scalars, BN=512)
    assert rel_err(outs[0], reference(case, args, scalars)) <= case.tol


def _load(tmp_path, source: str):
    path = tmp_path / "k.tl"
    path.write_text(source)
    return tlc.load(str(path), target="cuda")


def test_exchange_of_a_fragment_read_transposed():
    m = tlc.load(str(TESTS / "programs" / "transpose_fragments.tl"), target="cuda")
    a = np.random.default_rng(3).standard_normal((100, 100)).astype(np.float32)
    b = np.full((100, 100), np.nan, np.float32)
    m.transpose(a, b)
    np.testing.assert_array_equal(b, 2 * a.T)


def test_exchange_copy_between_accumulators_of_different_layouts(tmp_path):
    sys.path.insert(0, str(TESTS / "schedule"))
    from test_layout_infer import TWO_ACCUMULATORS

    r = np.random.default_rng(4)
    a, b = (r.standard_normal((64, 64)).astype(np.float16) for _ in range(2))
    at, bt = r.standard_normal((64, 32)).astype(np.float16), r.standard_normal((32, 64)).astype(np.float16)
    c, d = np.full((64, 64), np.nan, np.float32), np.full((64, 64), np.nan, np.float32)
    _load(tmp_path, TWO_ACCUMULATORS).k(a, at, b, bt, c, d)
    ref = 2 * at.astype(np.float64) @ bt.astype(np.float64)
    np.testing.assert_allclose(c, ref, rtol=1e-3, atol=1e-3)
    np.testing.assert_array_equal(d, c)


def test_a_statistic_copied_out_and_read_as_a_scalar(tmp_path):
    """A one-element reduction laid out in every thread: copied out once, read as a scalar."""
    sys.path.insert(0, str(TESTS / "schedule"))
    from test_layout_infer import COPIED_STATISTIC

    x = np.random.default_rng(6).standard_normal((300, 50)).astype(np.float32) + 2
    s, y = np.full(300, np.nan, np.float32), np.full((300, 50), np.nan, np.float32)
    _load(tmp_path, COPIED_STATISTIC).k(x, s, y)
    np.testing.assert_allclose(s, x.sum(axis=1), rtol=1e-5)
    np.testing.assert_allclose(y, x / x.sum(axis=1, keepdims=True), rtol=1e-5)
