"""tests/programs/dims.tl on the GPU against NumPy (tests/interp/test_interp_dims.py has the
cases): packed int4 weights i8[N, K // 2] with f32[N, cdiv(K, 128)] scales, a convolution's
output size, a GEMM over operands of K // 2 columns (through the TMA on Hopper), and the launch's refusal of an array whose size differs from its expression, on
the fast path's first call and on the general path's."""
from __future__ import annotations

import functools
import pathlib
import sys

import numpy as np
import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "interp"))
from test_interp_dims import SOURCE, conv_case, dequant_case, gemm_case  # noqa: E402

from tlc.api import compile_source  # noqa: E402
from tlc.diagnostics import TlcError  # noqa: E402

pytestmark = pytest.mark.gpu


@functools.cache
def on_gpu():
    return compile_source(SOURCE, target="cuda", path="dims.tl")


@pytest.mark.parametrize("N, K", [(16, 128), (37, 300), (5, 2), (200, 1000)])
def test_packed_int4_weights_dequantize(N, K):
    Wq, Sc, W, want = dequant_case(N, K)
    on_gpu().dequant_int4(Wq, Sc, W)
    np.testing.assert_array_equal(W, want)


@pytest.mark.parametrize("H, KH", [(100, 3), (64, 5), (7, 7), (1000, 9)])
def test_a_convolution_output_sized_by_an_expression(H, KH):
    X, Wt, O, want = conv_case(H, KH)
    on_gpu().conv1d(X, Wt, O)
    np.testing.assert_allclose(O, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("M, K, N", [(100, 141, 90), (512, 1024, 384), (256, 257, 256)])
def test_a_gemm_over_operands_of_k_half_columns(M, K, N):
    # on sm_90a the operands go through the TMA, whose tensor maps take the size K // 2
    A, B, C, Kfull, want = gemm_case(M, K, N)
    on_gpu().gemm_packed_k(A, B, C, Kfull)
    np.testing.assert_allclose(C, want, rtol=1e-3, atol=1e-3)


def test_a_size_that_differs_from_its_expression_is_refused():
    import cupy

    Wq, Sc, W, _ = dequant_case(16, 256)
    args = [cupy.asarray(a) for a in (Wq, Sc, W)]
    on_gpu().dequant_int4(*args)  # the fast path is built and accepts matching sizes
    for bad in ((cupy.asarray(Wq[:, :100]), args[1], args[2]), (Wq[:, :100].copy(), Sc, W)):
        with pytest.raises(TlcError) as e:
            on_gpu().dequant_int4(*bad)
        assert "'Wq' axis 1 has size 100 but the kernel expects K // 2 = 128 (K = 256 from 'W' (axis 1))" in str(e.value)
