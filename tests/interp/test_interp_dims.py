"""Tensor dimensions that are expressions of shape symbols (tests/programs/dims.tl) on the
interpreter against NumPy: packed int4 weights i8[N, K // 2] with f32[N, cdiv(K, 128)] scales,
a strided, padded convolution whose output has (H + 2 * P - KH) // S + 1 elements, a GEMM
whose operands have K // 2 columns; and the
launch's check of each such dimension against its array, naming the parameter, the axis,
the expression and both values."""
from __future__ import annotations

import functools
import pathlib

import numpy as np
import pytest

from tlc.api import compile_source
from tlc.interp.args import ArgumentError

SOURCE = (pathlib.Path(__file__).resolve().parents[1] / "programs" / "dims.tl").read_text()


@functools.cache
def interpreted():
    return compile_source(SOURCE, target="cpu", path="dims.tl")


def dequant_case(N, K, seed=0):
    rng = np.random.default_rng(seed)
    Wq = rng.integers(-128, 128, (N, K // 2)).astype(np.int8)
    Sc = rng.uniform(0.5, 2, (N, -(-K // 128))).astype(np.float32)
    low, high = (Wq << 4) >> 4, Wq >> 4  # NumPy's i8 shifts wrap and sign-extend as tlc's do
    nibbles = np.stack([low, high], axis=-1).reshape(N, K)
    want = nibbles.astype(np.float32) * np.repeat(Sc, 128, axis=1)[:, :K]
    return Wq, Sc, np.full((N, K), 7, np.float32), want


def conv_case(H, KH, P=1, S=2, seed=1):
    rng = np.random.default_rng(seed)
    X, Wt = rng.standard_normal(H).astype(np.float32), rng.standard_normal(KH).astype(np.float32)
    padded = np.concatenate([np.zeros(P, np.float32), X, np.zeros(P, np.float32)])
    n = (H + 2 * P - KH) // S + 1
    want = np.array([np.dot(padded[o * S:o * S + KH].astype(np.float64), Wt) for o in range(n)], np.float32)
    return X, Wt, np.zeros(n, np.float32), want


def gemm_case(M, K, N, seed=2):
    rng = np.random.default_rng(seed)
    A = rng.uniform(-1, 1, (M, K // 2)).astype(np.float16)
    B = rng.uniform(-1, 1, (K // 2, N)).astype(np.float16)
    return A, B, np.zeros((M, N), np.float32), np.zeros(K, np.float32), A.astype(np.float32) @ B.astype(np.float32)


@pytest.mark.parametrize("N, K", [(16, 128), (37, 300), (5, 2)])
def test_packed_int4_weights_dequantize(N, K):
    Wq, Sc, W, want = dequant_case(N, K)
    interpreted().dequant_int4(Wq, Sc, W)
    np.testing.assert_array_equal(W, want)


@pytest.mark.parametrize("H, KH", [(100, 3), (64, 5), (7, 7)])
def test_a_convolution_output_sized_by_an_expression(H, KH):
    X, Wt, O, want = conv_case(H, KH)
    interpreted().conv1d(X, Wt, O)
    np.testing.assert_allclose(O, want, rtol=1e-5, atol=1e-5)


def test_a_gemm_over_operands_of_k_half_columns():
    A, B, C, Kfull, want = gemm_case(100, 141, 90)  # K // 2 = 70, not a multiple of the tile
    interpreted().gemm_packed_k(A, B, C, Kfull)
    np.testing.assert_allclose(C, want, rtol=1e-4, atol=1e-4)


def test_a_size_that_differs_from_its_expression_is_refused():
    Wq, Sc, W, _ = dequant_case(16, 256)
    with pytest.raises(ArgumentError) as e:
        interpreted().dequant_int4(Wq[:, :100].copy(), Sc, W)
    assert str(e.value) == "'Wq' axis 1 has size 100 but the kernel expects K // 2 = 128 (K = 256 from 'W' (axis 1))"
    X, Wt, O, _ = conv_case(100, 3)
    with pytest.raises(ArgumentError) as e:
        interpreted().conv1d(X, Wt, np.zeros(51, np.float32))
    assert str(e.value) == ("'O' axis 0 has size 51 but the kernel expects (H + 2 * P - KH) // S + 1 = 50 "
                            "(H = 100 from 'X' (axis 0), KH = 3 from 'Wt' (axis 0))")


def test_the_refusal_names_where_a_symbol_was_first_bound():
    """C is bound by X, the first array that has it (as the CUDA launcher's binder says), not by
    the last one, Y."""
    src = ("@kernel\ndef k(X: f32[C], U: f32[2 * (C // 2)], Y: f32[C]):\n"
           "    with grid(1, threads=32) as bx:\n        pass\n")
    X = np.zeros(5, np.float32)
    with pytest.raises(ArgumentError) as e:
        compile_source(src, target="cpu", path="t.tl").k(X, np.zeros(5, np.float32), X.copy())
    assert str(e.value) == "'U' axis 0 has size 5 but the kernel expects 2 * (C // 2) = 4 (C = 5 from 'X' (axis 0))"


def test_an_expression_that_divides_by_zero_is_refused_naming_the_sizes():
    """G = 0 in G * (C // G), G bound by an empty array (std.attention's HK * (H // HK) of
    HK = 0): the CUDA binder's text, where the interpreter said only "an extent divides by zero"."""
    src = ("@kernel\ndef k(X: f32[C], heads: f32[G], U: f32[G * (C // G)]):\n"
           "    with grid(1, threads=32) as bx:\n        pass\n")
    X = np.zeros(5, np.float32)
    with pytest.raises(ArgumentError) as e:
        compile_source(src, target="cpu", path="t.tl").k(X, np.zeros(0, np.float32), X.copy())
    assert str(e.value) == ("'U' axis 0 has size 5 but the kernel expects G * (C // G), which divides by zero "
                            "(G = 0 from 'heads' (axis 0), C = 5 from 'X' (axis 0))")


def test_lanes_reading_an_empty_tensor_read_zeros():
    """A tensor with an axis of size 0 (std.conv's conv2d_bwd_data reads dy, whose width is
    conv2d's output width: 0 for an image narrower than the kernel) is outside every index:
    each lane of a parallel loop reads 0, where the interpreter indexed its element 0 and
    raised IndexError out of the call (found by scripts/fuzz --mode tuning)."""
    mod = compile_source(
        "@kernel\ndef widen(x: f32[M, N], y: f32[M, 8]):\n"
        "    with grid(M, threads=32) as bx:\n"
        "        for j in parallel(8):\n"
        "            y[bx, j] = where(j < N, x[bx, j], 1.0) + x[bx, j]\n", target="cpu", path="empty.tl")
    y = np.full((3, 8), np.nan, np.float32)
    mod.widen(np.zeros((3, 0), np.float32), y)
    assert (y == 1.0).all()
