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
    out = np.full((8, 1000), np.nan, np.float32)
    tlc.load(MATH_PATH, target="cuda").activations(x, out)
    np.testing.assert_allclose(out, math_reference(x), rtol=1e-4, atol=1e-5)
    # gelu_precise (row 7) to a few f32 ulp; gelu (row 0, the hardware tanh) within 1e-4 above
    np.testing.assert_allclose(out[7], math_reference(x)[7], rtol=4e-6, atol=1e-6)


TANHS = """
@kernel
def tanhs(x: f32[N], y: f32[N], h: f16[N], yh: f16[N]):
    with grid(cdiv(N, 256), threads=128) as bx:
        for i in parallel(256):
            y[bx * 256 + i] = fast_tanh(x[bx * 256 + i])
            yh[bx * 256 + i] = tanh(h[bx * 256 + i])
"""


def test_fast_tanh_is_within_2_to_the_minus_15():
    """The hardware tanh over [-12, 12], at +-1000 (where it is +-1) and near 0, against
    float64: its relative error measured 2^-16.5 on the H200; the test allows 2^-15.  `tanh`
    of f16 (the hardware tanh too) is within one f16 ulp of the correctly rounded value."""
    mod = tlc.compile_source(TANHS, target="cuda", path="tanhs.tl")
    ends = np.array([-1e3, 1e3, 1e-10, -1e-10, 0.0], np.float32)
    x = np.concatenate([np.linspace(-12, 12, 1 << 20, dtype=np.float32), ends])
    y = np.full_like(x, np.nan)
    h = x.astype(np.float16)
    yh = np.full_like(h, np.nan)
    mod.tanhs(x, y, h, yh)
    want = np.tanh(x.astype(np.float64))
    rel = np.abs(y - want) / np.maximum(np.abs(want), 1e-30)
    assert rel.max() < 2.0 ** -15, (x[rel.argmax()], y[rel.argmax()], want[rel.argmax()])
    rounded = np.tanh(h.astype(np.float64)).astype(np.float16)
    ulps = np.abs(f16_order(yh) - f16_order(rounded))
    assert np.isfinite(yh).all() and ulps.max() <= 1, h[ulps.argmax()]


def f16_order(a):
    """f16 values as integers in the order of the values, one apart per ulp (+0 and -0 alike)."""
    bits = a.view(np.int16).astype(np.int32)
    return np.where(bits < 0, -(bits & 0x7FFF), bits)

