"""f16 and bf16 +, -, * on the GPU in their own type (CUDA's __hadd_rn, __hsub_rn, __hmul_rn), not
through float: the same values (each operation rounded once to nearest even; f32's 24-bit significand
holds a 16-bit float's product exactly and rounding a sum twice never differs from once), and
nvcc pairs the operations of a fragment's two registers of a pair into HADD2 / HMUL2 where the
float path took a widening, an f32 operation and a rounding per element.  std.gemm's w4a16
dequantization, (1024 + nibble - (1024 + zero point)) * scale in f16, is written so."""
import re
import sys
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

import tlc
from tlc.runner import build

SRC = """
@kernel
def affine(x: T[N], z: T[N], s: T[N], y: T[N], T: dtype = f16, THREADS: const = 128):
    with grid(cdiv(N, 256), threads=THREADS) as b:
        for i in parallel(256):
            n = b * 256 + i
            y[n] = (x[n] - z[n]) * s[n] + x[n]
"""
DTYPES = {"f16": np.float16, "bf16": ml_dtypes.bfloat16}


@pytest.fixture
def path(tmp_path):
    p = tmp_path / "affine.tl"
    p.write_text(SRC)
    return p


@pytest.mark.parametrize("t", DTYPES)
def test_the_c_is_the_types_own_operations(path, t):
    src, _ = build(str(path), arch="sm_80", kernels=("affine",), defines=(f"T={t}",))
    # the _rn forms: __hmul then __hadd would be contracted into one fma, rounded once
    assert re.search(r"__hadd_rn\(__hmul_rn\(__hsub_rn\(", src), src[-2000:]


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
@pytest.mark.parametrize("t", DTYPES)
def test_paired_on_the_gpu(path, tmp_path, arch, t):
    sys.path.insert(0, str(Path(__file__).parent))
    from nvcc import cubin_sass

    src, _ = build(str(path), arch=arch, kernels=("affine",), defines=(f"T={t}",))
    text, _ = cubin_sass(src, arch, tmp_path)
    if t == "f16" or arch == "sm_90a":  # sm_80's bf16 add and multiply are each an HFMA2.BF16
        assert re.search(r"\bHMUL2\b", text) and re.search(r"\bHADD2(?!\.F32)\b", text), text
        assert "HFMA2" not in text, text  # the product and the sum rounded each, not fused
    assert "F2FP" not in text and "HADD2.F32" not in text, text  # no f32 round trip


def cases(t):
    """(x, z, s): x every 16-bit pattern (NaNs, infinities, subnormals, both zeros), z and s
    random bit patterns (any exponent: sums and products that overflow, underflow, cancel)."""
    dt = DTYPES[t]
    rng = np.random.default_rng(1)
    x = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16).view(dt)
    z, s = (rng.integers(0, 1 << 16, 1 << 16).astype(np.uint16).view(dt) for _ in range(2))
    return x, z, s


def expected(x, z, s):
    """Each operation in f32, rounded once to the type."""
    dt = x.dtype
    with np.errstate(all="ignore"):
        d = (x.astype(np.float32) - z.astype(np.float32)).astype(dt)
        p = (d.astype(np.float32) * s.astype(np.float32)).astype(dt)
        return (p.astype(np.float32) + x.astype(np.float32)).astype(dt)


def same(y, want):
    """Bit for bit, where the result is a number; NaN where NaN (payloads may differ)."""
    nan = np.isnan(want.astype(np.float32))
    return np.array_equal(y.view(np.uint16)[~nan], want.view(np.uint16)[~nan]) and np.isnan(y.astype(np.float32)[nan]).all()


@pytest.mark.parametrize("t", DTYPES)
def test_values_on_the_interpreter(path, t):
    x, z, s = cases(t)
    y = np.zeros_like(x)
    tlc.load(str(path), target="cpu").affine(x, z, s, y, T=t)
    assert same(y, expected(x, z, s))
