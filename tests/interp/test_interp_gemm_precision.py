"""The interpreter's gemm numerics per precision: tf32 truncates f32 operands to 10 mantissa
bits (toward zero, as the tensor cores read them), "ieee" multiplies them exactly, and mixed
f8 formats multiply exactly in f32."""
import ml_dtypes
import numpy as np
import pytest

import tlc
from tlc.interp.tiles import tf32

SRC = """
@kernel
def mm(A: TA[M, K], B: TB[N, K], C: f32[M, N], TA: dtype = f32, TB: dtype = f32):
    with grid(1, threads=128) as bx:
        As = shared(TA[16, 16])
        Bs = shared(TB[16, 16])
        acc = fragment(f32[16, 16])
        clear(acc)
        copy(A[0, 0], As)
        copy(B[0, 0], Bs)
        gemm(As, Bs, acc, trans_b=True{precision})
        copy(acc, C[0, 0])
"""


def load(tmp_path, precision: str):
    p = tmp_path / "mm.tl"
    p.write_text(SRC.replace("{precision}", f', precision="{precision}"' if precision else ""))
    return tlc.load(str(p), target="cpu")


def test_tf32_truncates_toward_zero():
    x = np.array([1 + 2.0 ** -11, 1 + 2.0 ** -10, -(1 + 2.0 ** -11 + 2.0 ** -12), 2.0 ** -130 + 2.0 ** -145, np.inf], np.float32)
    assert tf32(x).tolist() == [1.0, 1 + 2.0 ** -10, -1.0, 2.0 ** -130, np.inf]


@pytest.mark.parametrize("precision,exact", [("tf32", False), ("ieee", True), ("", True)])
def test_precision_modes(tmp_path, precision, exact):
    A = np.full((3, 5), 1 + 2.0 ** -12, np.float32)
    B = np.full((2, 5), 1 + 2.0 ** -12, np.float32)
    C = np.zeros((3, 2), np.float32)
    load(tmp_path, precision).mm(A, B, C)
    want = A.astype(np.float64) @ B.astype(np.float64).T if exact else np.full((3, 2), 5.0)
    assert np.allclose(C, want, rtol=0, atol=1e-6) and (exact or (C == 5.0).all())


def test_mixed_f8_formats(tmp_path):
    r = np.random.default_rng(0)
    A = r.standard_normal((7, 16)).astype(ml_dtypes.float8_e4m3fn)
    B = (r.standard_normal((9, 16)) * 100).astype(ml_dtypes.float8_e5m2)
    C = np.zeros((7, 9), np.float32)
    load(tmp_path, "").mm(A, B, C)
    assert np.array_equal(C, (A.astype(np.float64) @ B.astype(np.float64).T).astype(np.float32))
