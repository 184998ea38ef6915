"""narrow_fragments.py and fast_math.py on the GPU: rows held in f16 (an rms norm, a layer
norm's recomputed centring), the fast exponential and hoisted reciprocal (a softmax with an f16
output) and the precise forms (with an f32 one), each against NumPy.  Run with `pytest -m gpu`."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import tlc

TESTS = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(TESTS / "schedule"))
from test_fast_math import ROWS  # noqa: E402
from test_narrow_fragments import RMS  # noqa: E402

pytestmark = pytest.mark.gpu


def _load(tmp_path, source: str):
    path = tmp_path / "k.tl"
    path.write_text(source)
    return tlc.load(str(path), target="cuda")


@pytest.mark.parametrize("out", ["float16", "float32"])
def test_softmax_fast_and_precise(out, tmp_path):
    x = (np.random.default_rng(0).standard_normal((37, 8192)) * 4).astype(np.float16)
    y = np.full(x.shape, np.nan, out)
    _load(tmp_path, ROWS).softmax(x, y, U=out.replace("float", "f"))
    e = np.exp(x.astype(np.float64) - x.max(axis=1, keepdims=True))
    ref = e / e.sum(axis=1, keepdims=True)
    tol = 2e-3 if out == "float16" else 1e-6  # (f32: the precise exp and division)
    assert np.abs(y - ref).max() <= tol * ref.max()


@pytest.mark.parametrize("bn, n", [(2048, 2048), (4096, 3001)])
def test_rows_held_in_f16(bn, n, tmp_path):
    r = np.random.default_rng(1)
    x, w = r.standard_normal((21, n)).astype(np.float16), r.standard_normal(n).astype(np.float16)
    y = np.full(x.shape, np.nan, np.float16)
    _load(tmp_path, RMS).rms(x, w, y, BN=bn)
    xf = x.astype(np.float64)
    ref = xf / np.sqrt((xf * xf).mean(axis=1, keepdims=True) + 1e-6) * w
    assert np.abs(y - ref).max() <= 4e-3 * np.abs(ref).max()


def test_layer_norm_recomputed_centring(tmp_path):
    r = np.random.default_rng(2)
    x = (r.standard_normal((9, 3001)) + 3).astype(np.float16)
    w, b = r.standard_normal(3001).astype(np.float16), r.standard_normal(3001).astype(np.float16)
    y = np.full(x.shape, np.nan, np.float16)
    tlc.load(str(TESTS.parent / "bench" / "plain" / "layer_norm.tl"), target="cuda").layer_norm(x, w, b, y, BN=4096)
    c = x.astype(np.float64) - x.astype(np.float64).mean(axis=1, keepdims=True)
    ref = c / np.sqrt((c * c).mean(axis=1, keepdims=True) + 1e-5) * w + b
    assert np.abs(y - ref).max() <= 4e-3 * np.abs(ref).max()
