"""std.math on the GPU against NumPy (the tile-op example runs in tests/gpu/test_tile_ops_gpu.py)."""
import pathlib
import sys

import numpy as np
import pytest

import tlc

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "stdlib"))  # the shared kit
from stdlib_kit import MATH_PATH, math_reference  # noqa: E402

pytestmark = pytest.mark.gpu


def test_every_function():
    x = np.random.default_rng(4).standard_normal(1000).astype(np.float32) * 4
    x[:3] = [25.0, -30.0, 0.0]
    out = np.full((7, 1000), np.nan, np.float32)
    tlc.load(MATH_PATH, target="cuda").activations(x, out)
    np.testing.assert_allclose(out, math_reference(x), rtol=1e-4, atol=1e-5)

