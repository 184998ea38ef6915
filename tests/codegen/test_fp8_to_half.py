"""An 8-bit float converted to f16 (tl::cvt, templates/tl/types.cuh) by CUDA's own fp8 -> half
conversion, exact, one instruction on sm_90a (F2FP.F16.E4M3.UNPACK_B), not through float
(unpack, HADD2.F32 to widen, F2FP.PACK to round back: three); bf16 keeps the float path.  The
values: every byte on the interpreter here, on the GPU in tests/gpu/test_fp8_to_half_gpu.py.
std.gemm's matmul_w8a16 with f8 weights converts each weight so."""
import re

import ml_dtypes
import numpy as np
import pytest

import tlc
from tlc.runner import build

SRC = """
@kernel
def widen(x: Q[N], y: T[N], Q: dtype = f8e4m3, T: dtype = f16, THREADS: const = 256):
    with grid(cdiv(N, 256), threads=THREADS) as b:
        for i in parallel(256):
            y[b * 256 + i] = T(x[b * 256 + i])
"""
FORMATS = {"f8e4m3": ml_dtypes.float8_e4m3fn, "f8e5m2": ml_dtypes.float8_e5m2}


@pytest.fixture
def path(tmp_path):
    p = tmp_path / "widen.tl"
    p.write_text(SRC)
    return p


@pytest.mark.parametrize("q,t,unpack", [("f8e4m3", "f16", 1), ("f8e5m2", "f16", 1), ("f8e4m3", "bf16", 0)])
def test_one_conversion_an_element_on_sm90(path, tmp_path, q, t, unpack):
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).parent))
    from nvcc import cubin_sass

    src, _ = build(str(path), arch="sm_90a", kernels=("widen",), defines=(f"Q={q}", f"T={t}"))
    text, _ = cubin_sass(src, "sm_90a", tmp_path)
    unpacks = len(re.findall(r"F2FP\.F16\.E[45]M[23]\.UNPACK_B", text))
    if unpack:
        assert unpacks >= 1 and "HADD2.F32" not in text and "F2FP.F16.F32.PACK_AB" not in text, text
    else:  # bf16: through float, as before
        assert "F2FP.BF16.F32.PACK_AB" in text


@pytest.mark.parametrize("q", FORMATS)
def test_every_byte_on_the_interpreter(path, q):
    x = np.arange(256, dtype=np.uint8).view(FORMATS[q])
    y = np.zeros(256, np.float16)
    tlc.load(str(path), target="cpu").widen(x, y, Q=q)
    want = x.astype(np.float16)
    assert np.array_equal(y.view(np.uint16)[~np.isnan(want)], want.view(np.uint16)[~np.isnan(want)])
    assert np.isnan(y[np.isnan(want)]).all()
