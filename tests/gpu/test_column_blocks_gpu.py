"""schedule/column_blocks.py's kernels on the GPU against NumPy (tests/schedule/test_column_blocks.py's
sources: a sum narrowed with its rows grown, a max narrowed only, a loop short of the tensor),
bench/plain's column_sums and the tile op sum(x, axis=0) at ragged and large shapes.  Run
with `pytest -m gpu` on a GPU."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import tlc

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "schedule"))
from test_column_blocks import SOURCES  # noqa: E402

pytestmark = pytest.mark.gpu


def _module(tmp_path, name):
    path = tmp_path / f"{name}.tl"
    path.write_text(SOURCES[name])
    return getattr(tlc.load(str(path), target="cuda"), name)


@pytest.mark.parametrize("m, n", [(1, 1), (1001, 333), (4096, 4100)])
def test_a_column_sum_against_numpy(tmp_path, m, n):
    x = np.random.default_rng(m).standard_normal((m, n)).astype(np.float32)
    out = np.full(n, np.nan, np.float32)
    _module(tmp_path, "colsum")(x, out)
    np.testing.assert_allclose(out, x.sum(axis=0, dtype=np.float64), rtol=1e-4, atol=1e-3)


def test_a_column_max_and_a_short_loop_against_numpy(tmp_path):
    x = np.random.default_rng(1).standard_normal((1000, 777)).astype(np.float16)  # 125 whole tiles of 8
    out = np.full(777, np.nan, np.float32)
    _module(tmp_path, "colmax")(x, out)
    np.testing.assert_array_equal(out, x.astype(np.float32).max(axis=0))
    y = np.random.default_rng(2).standard_normal((50, 140)).astype(np.float32)
    out = np.full(140, np.nan, np.float32)
    _module(tmp_path, "short")(y, out)
    np.testing.assert_allclose(out, y[:48].sum(axis=0), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("m, n", [(3001, 999), (4096, 8192)])
def test_plain_column_sums_and_the_tile_op_against_numpy(m, n):
    import cupy as cp

    x = cp.random.default_rng(n).random((m, n), dtype=cp.float32)
    ref = cp.asnumpy(x.astype(cp.float64).sum(axis=0))
    out = cp.full(n, cp.nan, cp.float32)
    tlc.load(str(ROOT / "bench" / "plain" / "column_sums.tl"), target="cuda").column_sums(x, out)
    np.testing.assert_allclose(cp.asnumpy(out), ref, rtol=1e-5)
    got = tlc.load(str(ROOT / "bench" / "plain_ops.tl"), target="cuda").column_sums_op(x)
    np.testing.assert_allclose(cp.asnumpy(got), ref, rtol=1e-5)
