"""A parallel loop over a 16-bit mma fragment computed two registers at a time (codegen/half_pairs.py):
the magic-number dequantization of a word holding both columns of a pair in its halves (std.gemm's
matmul_w4a16, Marlin's) is one LOP3, one HSUB2 and one HMUL2 a pair in f16x2 / bf16x2, where the
element-by-element loop took two 16-bit extractions and a PRMT to pair them again.  Only a body
whose every value is the same for both columns, or a pair of them built from such a word, takes
it; anything else stays the scalar loop.  A loop whose last statement casts an f32 value into its
own element of such a fragment runs its body for both registers and rounds them as a pair."""
import sys
from pathlib import Path

import numpy as np
import pytest

import tlc
from tlc.runner import build

sys.path.insert(0, str(Path(__file__).parent))

# A K step of matmul_w4a16 (BN x BK = 64 x 32, one 32-element block a row), its dequantization
# line by line from BODY; the gemm makes Wd the tensor cores' A operand (an mma layout).
SRC = """
@kernel
def dq(A: T[16, 32], W4: u32[64, 4], C: f32[64, 16], z0: f32, s: f32, T: dtype = f16):
    with grid(1, threads=128) as b:
        Wq = shared(u32[64, 4])
        As = shared(T[16, 32])
        Wd = fragment(T[64, 32])
        acc = fragment(f32[64, 16])
        copy(W4[0, 0], Wq)
        copy(A[0, 0], As)
        one = T(1.0)
        V = one / (reinterpret(reinterpret(one, u16) + u16(1), T) - one)
        VB = u32(reinterpret(V, u16))
        VB2 = VB | VB << u32(16)
        clear(acc)
        for i, j in parallel(64, 32):
{body}
        gemm(Wd, As, acc, trans_b=True)
        copy(acc, C[0, 0])
"""
PAIRS = """\
            w = Wq[i, j % 8 // 2]
            h = ((w >> u32(4 * (j // 8))) & u32(0x000F000F)) | VB2
            q = reinterpret(u16(h >> u32(16 * (j % 2))), T)
            Wd[i, j] = (q - (V + T(z0))) * T(s)"""


def source(tmp_path, body, t="f16", arch="sm_90a", text=SRC, name="dq"):
    p = tmp_path / f"{name}.tl"
    p.write_text(text.format(body=body))
    return build(str(p), arch=arch, kernels=(name,), defines=(f"T={t}",))[0], p


@pytest.mark.parametrize("t,pair", [("f16", "__half2"), ("bf16", "__nv_bfloat162")])
@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_the_dequantization_is_computed_in_pairs(tmp_path, t, pair, arch):
    src, _ = source(tmp_path, PAIRS, t, arch)
    assert f"// two registers at a time: {pair} (codegen/half_pairs.py)" in src
    assert "tl_r += 2" in src
    # the word itself read as the pair, the operations the _rn forms (each rounded once)
    assert f"const {pair} tl_x2_q = *reinterpret_cast<const {pair}*>(&tl_w0);" in src, src[-3000:]
    assert "__hmul2_rn(__hsub2_rn(tl_x2_q, " in src, src[-3000:]


@pytest.mark.parametrize("body", [
    # the word of each column (j itself): not the same word for both
    PAIRS.replace("w = Wq[i, j % 8 // 2]", "w = Wq[i, j % 4]"),
    # j // 3: columns 2q, 2q + 1 may fall either side of a multiple of 3
    PAIRS.replace("u32(4 * (j // 8))", "u32(4 * (j // 3 % 8))"),
    # a shift by 8 * (j % 2) is not the word's halves
    PAIRS.replace("u32(16 * (j % 2))", "u32(8 * (j % 2))"),
    # a value assigned twice
    PAIRS.replace("            Wd[i, j]", "            q = q + q\n            Wd[i, j]"),
    # a store that reads no word's halves (the same value in both columns)
    "            Wd[i, j] = V + T(z0)",
])
def test_other_bodies_stay_scalar(tmp_path, body):
    src, _ = source(tmp_path, body)
    assert "two registers at a time" not in src
    assert "tl_r += 2" not in src


def _run(path, t):
    """The kernel on the interpreter: (A, W4, z0, s, C)."""
    import ml_dtypes

    dt = {"f16": np.float16, "bf16": ml_dtypes.bfloat16}[t]
    rng = np.random.default_rng(3)
    A = rng.standard_normal((16, 32)).astype(dt)
    W4 = rng.integers(0, 1 << 32, (64, 4), dtype=np.uint64).astype(np.uint32)
    C = np.zeros((64, 16), np.float32)
    z0, s = np.float32(5.0), np.float32(0.03125)
    tlc.load(str(path), target="cpu").dq(A, W4, C, z0, s)
    return A, W4, z0, s, C


@pytest.mark.parametrize("t", ["f16", "bf16"])
def test_the_body_means_the_words_nibbles(tmp_path, t):
    # what the pairs compute, on the interpreter: column 2u + 8p + c of a 32-block from bits
    # 4p + 16c of word u (std.gemm's repack_int4 layout), (nibble - 5) / 32, times A
    _, path = source(tmp_path, PAIRS, t)
    A, W4, z0, s, C = _run(path, t)
    j = np.arange(32)
    nib = (W4[:, j % 8 // 2] >> (4 * (j // 8) + 16 * (j % 2)).astype(np.uint32)) & 15
    W = (nib.astype(np.float64) - 5.0) * 0.03125
    np.testing.assert_allclose(C, W @ A.astype(np.float64).T, rtol=1e-6, atol=1e-6)


# A cast of f32 values into a 16-bit fragment that a gemm then reads as its register A (flash
# attention's P and dS): the body runs for both registers of a pair and one conversion rounds them
# (the SASS it saves, an F2FP's halves swapped back by a PRMT, shows in std.attention's flash_bwd:
# tests/stdlib/test_attention_bwd_ring.py).
CAST = """
@kernel
def pc(X: f32[64, 32], d: f32[64], B: T[16, 32], C: f32[64, 16], T: dtype = f16):
    with grid(1, threads=128) as b:
        xs = fragment(f32[64, 32])
        p = fragment(T[64, 32])
        dd = fragment(f32[64])
        Bs = shared(T[16, 32])
        acc = fragment(f32[64, 16])
        copy(X[0, 0], xs)
        copy(d[0], dd)
        copy(B[0, 0], Bs)
        clear(acc)
        for i, j in parallel(64, 32):
{body}
        gemm(p, Bs, acc, trans_b=True)
        copy(acc, C[0, 0])
"""
CAST_BODY = "            p[i, j] = cast(xs[i, j] * (xs[i, j] - dd[i]), T)"


def cast_source(tmp_path, body, t="f16", arch="sm_90a"):
    return source(tmp_path, body, t, arch, CAST, "pc")


@pytest.fixture
def cast_pairs(monkeypatch):
    """codegen/half_pairs.py's CAST_PAIRS on (the default since session 28; kept for the tests
    that say so against a switch set by another)."""
    from tlc.codegen import half_pairs

    monkeypatch.setattr(half_pairs, "CAST_PAIRS", True)


@pytest.mark.parametrize("t,fn", [("f16", "__floats2half2_rn"), ("bf16", "__floats2bfloat162_rn")])
@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_a_cast_into_a_fragment_rounds_pairs(tmp_path, t, fn, arch, cast_pairs):
    src, _ = cast_source(tmp_path, CAST_BODY, t, arch)
    assert f"// two registers at a time: the cast rounds a pair, {fn} (codegen/half_pairs.py)" in src
    assert f"const {'__half2' if t == 'f16' else '__nv_bfloat162'} tl_v2 = {fn}(tl_f[0], tl_f[1]);" in src, src[-3000:]
    assert "tl_f[tl_h] = " in src and "tl_p += 2" in src


@pytest.mark.parametrize("body", [
    # a 16-bit value, not a cast of an f32 one
    "            p[i, j] = T(1.0)",
    # another store before the cast's
    "            xs[i, j] = xs[i, j] * 2.0\n" + CAST_BODY,
    # 16-bit arithmetic after the cast
    "            p[i, j] = cast(dd[i], T) + T(1.0)",
])
def test_other_casts_stay_scalar(tmp_path, body, cast_pairs):
    src, _ = cast_source(tmp_path, body)
    assert "the cast rounds a pair" not in src


def test_cast_pairs_are_on_by_default(tmp_path):
    src, _ = cast_source(tmp_path, CAST_BODY)
    assert "the cast rounds a pair" in src and "__floats2half2_rn(tl_f[0], tl_f[1])" in src


def test_off_a_cast_rounds_one_value_at_a_time(tmp_path, monkeypatch):
    from tlc.codegen import half_pairs

    monkeypatch.setattr(half_pairs, "CAST_PAIRS", False)
    src, _ = cast_source(tmp_path, CAST_BODY)
    assert "the cast rounds a pair" not in src and "tl::cvt<half>(" in src


@pytest.mark.parametrize("t", ["f16", "bf16"])
def test_the_cast_kernel_on_the_interpreter(tmp_path, t):
    # what the kernel means (tests/gpu/test_cast_pairs_gpu.py compares its pairs' bits on the GPU)
    import ml_dtypes

    dt = {"f16": np.float16, "bf16": ml_dtypes.bfloat16}[t]
    _, path = cast_source(tmp_path, CAST_BODY, t)
    rng = np.random.default_rng(4)
    X = rng.standard_normal((64, 32)).astype(np.float32)
    d = rng.standard_normal(64).astype(np.float32)
    B = rng.standard_normal((16, 32)).astype(dt)
    C = np.zeros((64, 16), np.float32)
    tlc.load(str(path), target="cpu").pc(X, d, B, C)
    P = (X * (X - d[:, None])).astype(dt).astype(np.float64)
    np.testing.assert_allclose(C, P @ B.astype(np.float64).T, rtol=1e-6, atol=1e-5)
