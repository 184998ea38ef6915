"""std.math: every function against NumPy on the interpreter."""
import numpy as np

import tlc
from stdlib_kit import MATH_PATH, math_reference


def test_every_function():
    x = np.random.default_rng(4).standard_normal(1000).astype(np.float32) * 4
    x[:3] = [25.0, -30.0, 0.0]  # softplus's large-x branch, and zero
    out = np.full((8, 1000), np.nan, np.float32)
    tlc.load(MATH_PATH, target="cpu").activations(x, out)
    np.testing.assert_allclose(out, math_reference(x), rtol=1e-4, atol=1e-5)
