"""Every e4m3 and e5m2 byte converted to f16 on the GPU (templates/tl/types.cuh's direct fp8 ->
half conversion, tests/codegen/test_fp8_to_half.py) equals ml_dtypes' conversion, NaN where NaN;
and to bf16 (through float) likewise."""
import sys
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

import tlc

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "codegen"))
from test_fp8_to_half import FORMATS, SRC  # noqa: E402

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("q", FORMATS)
@pytest.mark.parametrize("t", ["f16", "bf16"])
def test_every_byte(tmp_path, q, t):
    path = tmp_path / "widen.tl"
    path.write_text(SRC)
    x = np.arange(256, dtype=np.uint8).view(FORMATS[q])
    dt = np.float16 if t == "f16" else ml_dtypes.bfloat16
    y = np.zeros(256, dt)
    tlc.load(str(path), target="cuda").widen(x, y, Q=q, T=t)
    want = x.astype(np.float32).astype(dt)
    nan = np.isnan(want.astype(np.float32))
    assert np.array_equal(y.view(np.uint16)[~nan], want.view(np.uint16)[~nan])
    assert np.isnan(y.astype(np.float32)[nan]).all()
