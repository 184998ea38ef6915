"""f16 and bf16 +, -, * in their own type on the GPU (tests/codegen/test_native_half_ops.py:
__hadd, __hsub, __hmul) give each operation rounded once from f32, bit for bit: every 16-bit x
against random z and s, subnormals, infinities and NaNs included."""
import sys
from pathlib import Path

import numpy as np
import pytest

import tlc

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "codegen"))
from test_native_half_ops import DTYPES, SRC, cases, expected, same  # noqa: E402

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("t", DTYPES)
def test_every_x_against_numpy(tmp_path, t):
    path = tmp_path / "affine.tl"
    path.write_text(SRC)
    x, z, s = cases(t)
    y = np.zeros_like(x)
    tlc.load(str(path), target="cuda").affine(x, z, s, y, T=t)
    assert same(y, expected(x, z, s))
