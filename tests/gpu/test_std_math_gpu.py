"""std.math on the GPU against NumPy, and the tile-op example's current contract."""
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


def test_linear_gelu_tile_op_reports_not_yet_supported():
    mod = tlc.load(str(pathlib.Path(__file__).resolve().parents[2] / "examples" / "linear_gelu.tl"), target="cuda")
    with pytest.raises(tlc.DiagnosticError) as e:
        mod.linear_gelu(np.zeros((4, 8), np.float16), np.zeros((3, 8), np.float16), np.zeros(3, np.float32))
    assert e.value.diagnostics[0].code == "E067"
