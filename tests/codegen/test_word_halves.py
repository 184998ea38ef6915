"""reinterpret(u16(w), T) and reinterpret(u16(w >> 16), T) of a u32 w, T f16 or bf16 (the two
16-bit floats of one word, as Marlin-style int4 dequantization makes them): the C reads the
word's halves through tl::u32_half_lo / _hi (one mov.b32 {lo, hi} in PTX), so that ptxas pairs
the two halves' operations on the word itself, without the shift and PRMT that repacked them
(bench/w4a16_gemv_half2.tl: 591 SASS instructions a K step's compute, 467 so).  Values: the
interpreter's and the cpu target's, which keep their own reinterpret."""
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
def halves(w: u32[N], z: T[N], y: T[N, 2], T: dtype = f16, THREADS: const = 128):
    with grid(cdiv(N, 128), threads=THREADS) as b:
        for i in parallel(128):
            n = b * 128 + i
            h = w[n] | u32(0x64006400)
            y[n, 0] = reinterpret(u16(h), T) - z[n]
            y[n, 1] = reinterpret(u16(h >> u32(16)), T) - z[n]
"""
# a run of words, their halves' differences and products summed in two f16 accumulators
RUN = """
@kernel
def halves(w: u32[N, 4], a: T[N, 8], z: T[N], y: T[N, 2], T: dtype = f16, THREADS: const = 128):
    with grid(cdiv(N, 128), threads=THREADS) as b:
        for i in parallel(128):
            n = b * 128 + i
            r0 = T(0.0)
            r1 = T(0.0)
            for t in unroll(4):
                h = w[n, t] | u32(0x64006400)
                r0 += (reinterpret(u16(h), T) - z[n]) * a[n, 2 * t]
                r1 += (reinterpret(u16(h >> u32(16)), T) - z[n]) * a[n, 2 * t + 1]
            y[n, 0] = r0
            y[n, 1] = r1
"""
OTHER_SHIFT = SRC.replace("h >> u32(16)", "h >> u32(8)")
DTYPES = {"f16": np.float16, "bf16": ml_dtypes.bfloat16}


def _src(tmp_path, text, t):
    p = tmp_path / "halves.tl"
    p.write_text(text)
    return build(str(p), arch="sm_90a", kernels=("halves",), defines=(f"T={t}",))[0]


@pytest.mark.parametrize("t", DTYPES)
def test_the_c_reads_the_words_halves(tmp_path, t):
    src = _src(tmp_path, SRC, t)
    kind = "half" if t == "f16" else "bf16"
    assert re.search(rf"tl::u32_{kind}_lo\(h\)", src) and re.search(rf"tl::u32_{kind}_hi\(h\)", src), src[-2000:]


def test_another_shift_is_a_plain_reinterpret(tmp_path):
    src = _src(tmp_path, OTHER_SHIFT, "f16")
    assert "tl::u32_half_lo(h)" in src and "tl::u32_half_hi" not in src, src[-2000:]  # y[n, 0]
    assert "tl::u32_half_lo((h >> 8u))" in src, src[-2000:]  # u16 of it: the low half of h >> 8


@pytest.mark.nvcc
def test_no_shift_for_the_high_half(tmp_path):
    sys.path.insert(0, str(Path(__file__).parent))
    from nvcc import cubin_sass

    text, _ = cubin_sass(_src(tmp_path, RUN, "f16"), "sm_90a", tmp_path)
    # as h >> 16 and a conversion: a SHF.R.U32.HI by 16 a word (4 here), the halves paired again
    assert re.search(r"\bHMUL2\b", text) and not re.search(r"SHF\.R\.U32\.HI R\d+, RZ, 0x10,", text), text


@pytest.mark.parametrize("target", ["interp", "cpu"])
def test_values(target):
    mod = tlc.compile_source(SRC, target=target)
    rng = np.random.default_rng(3)
    N = 300
    w = rng.integers(0, 1 << 32, N, dtype=np.uint64).astype(np.uint32) & np.uint32(0x03FF03FF)
    z = rng.integers(0, 16, N).astype(np.float16)
    y = np.full((N, 2), np.nan, np.float16)
    mod.halves(w, z, y)
    h = w | np.uint32(0x64006400)
    want = np.stack([(h & 0xFFFF).astype(np.uint16).view(np.float16), (h >> 16).astype(np.uint16).view(np.float16)], 1)
    assert np.array_equal(y, (want.astype(np.float32) - z[:, None].astype(np.float32)).astype(np.float16))
