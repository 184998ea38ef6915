"""Tile ops on the GPU against NumPy: every construct of the interpreter suite
(tests/schedule/tileops/test_tile_ops_interp.py, its test functions run here with a CUDA
module), the @fuse programs, larger shapes that fill whole tiles, and the kind of array a tile
op returns (NumPy, CuPy or PyTorch, as its inputs)."""
from __future__ import annotations

import pathlib
import sys

import numpy as np
import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "schedule" / "tileops"))
from tileops_kit import assert_close, f32, gelu, module, rand, softmax  # noqa: E402
import test_tile_ops_interp as cpu  # noqa: E402
from test_tile_op_fusion import FULL, FUSED, OPERANDS  # noqa: E402

pytestmark = pytest.mark.gpu
RNG = np.random.default_rng(11)


@pytest.fixture(scope="module")
def mod():
    return module(cpu.SRC, target="cuda")


@pytest.fixture(scope="module")
def fused():
    return module(FUSED, target="cuda")


# the interpreter suite, on the GPU (pytest collects these names from this module, with `mod` above)
for _name in dir(cpu):
    if _name.startswith("test_"):
        globals()[_name] = getattr(cpu, _name)


@pytest.mark.parametrize("m, n, k", [(4096, 4096, 1024), (1000, 3000, 200)])
def test_linear_gelu_large(fused, m, n, k):
    x, w, b = rand(RNG, (m, k), np.float16), rand(RNG, (n, k), np.float16) * 0.05, rand(RNG, n)
    assert_close(fused.linear_bias_gelu(x, w, b), gelu(f32(x) @ f32(w).T + b))


@pytest.mark.parametrize("rows, cols", [(1024, 8192), (300, 16384), (77, 1000)])
def test_softmax_and_layernorm_large(fused, rows, cols):
    x = rand(RNG, (rows, cols), np.float16)
    assert_close(fused.smax(x), softmax(f32(x), 1))
    g, b = rand(RNG, cols), rand(RNG, cols)
    xr = f32(x)
    mu = xr.mean(1, keepdims=True)
    var = ((xr - mu) ** 2).mean(1, keepdims=True)
    assert_close(fused.layernorm(x, g, b), (xr - mu) / np.sqrt(var + 1e-5) * g + b)


def test_chain_flat_and_logsumexp(fused):
    # x * y of two standard normals reaches 25 among 4M pairs, and exp(25) overflows f16: halve
    # x so that exp(x * y) stays far below f16's 65504 and the comparison measures rounding
    x, y = rand(RNG, 1 << 22, np.float16) * np.float16(0.5), rand(RNG, 1 << 22, np.float16)
    xr, yr = f32(x), f32(y)
    assert np.abs(xr * yr).max() < 10
    ref = f32(np.exp(x * y)) - np.sqrt(np.abs(yr)) + xr  # x * y and its exp in f16, as the tile op
    assert_close(fused.chain(x, y), ref)
    z = rand(RNG, (300, 5000))
    m = z.max(1, keepdims=True)
    assert_close(fused.logsumexp(z), m + np.log(np.exp(z - m).sum(1, keepdims=True)))


def test_residual_epilogue(fused):
    x, w, r = rand(RNG, (513, 256), np.float16), rand(RNG, (256, 700), np.float16), rand(RNG, (513, 700), np.float16)
    assert_close(fused.residual(x, w, r, 0.25), 0.25 * (f32(x) @ f32(w)) + f32(r))


def test_returns_the_inputs_kind(fused):
    import cupy
    import torch

    x, y = rand(RNG, 5000, np.float16), rand(RNG, 5000, np.float16)
    want = fused.chain(x, y)
    assert isinstance(want, np.ndarray)
    got = fused.chain(cupy.asarray(x), cupy.asarray(y))
    assert isinstance(got, cupy.ndarray)
    np.testing.assert_array_equal(got.get(), want)
    tx, ty = torch.from_numpy(x).cuda(), torch.from_numpy(y).cuda()
    got = fused.chain(tx, ty)
    assert isinstance(got, torch.Tensor) and got.device == tx.device and got.dtype == torch.float16
    np.testing.assert_array_equal(got.cpu().numpy(), want)


def test_several_kernels_with_torch_tensors(mod):
    import torch

    q, k = rand(RNG, (300, 64), np.float16), rand(RNG, (700, 64), np.float16)
    got = mod.attention_row(torch.from_numpy(q).cuda(), torch.from_numpy(k).cuda())
    assert_close(got.cpu().numpy(), softmax(f32(q) @ f32(k).T * 0.125, 1))


def test_linear_gelu_example():
    path = pathlib.Path(__file__).resolve().parents[2] / "examples" / "linear_gelu.tl"
    import tlc

    ex = tlc.load(str(path), target="cuda")
    x, w, b = rand(RNG, (333, 128), np.float16), rand(RNG, (200, 128), np.float16), rand(RNG, 200)
    assert_close(ex.linear_gelu(x, w, b), gelu(f32(x) @ f32(w).T + b))


def test_repeat_calls_take_the_cached_launch_and_stay_correct(fused):
    # the second and later calls skip planning and binding (tlc/tileop_call.py): new data,
    # new scalars, a PyTorch side stream, several kernels — each must still agree with NumPy
    import cupy
    import torch

    for i in range(3):
        x, y = rand(RNG, 3000, np.float16), rand(RNG, 3000, np.float16) * np.float16(0.5)
        want = fused.chain(x, y)
        np.testing.assert_array_equal(fused.chain(cupy.asarray(x), cupy.asarray(y)).get(), want)
        stream = torch.cuda.Stream()
        with torch.cuda.stream(stream):
            got = fused.chain(torch.from_numpy(x).cuda(), torch.from_numpy(y).cuda())
        stream.synchronize()
        np.testing.assert_array_equal(got.cpu().numpy(), want)
        xr, w, r = rand(RNG, (130, 64), np.float16), rand(RNG, (64, 90), np.float16), rand(RNG, (130, 90), np.float16)
        scale = 0.25 * (i + 1)
        got = fused.residual(torch.from_numpy(xr).cuda(), torch.from_numpy(w).cuda(), torch.from_numpy(r).cuda(), scale)
        assert_close(got.cpu().numpy(), scale * (f32(xr) @ f32(w)) + f32(r))
        q = rand(RNG, (77, 1000), np.float16)
        assert_close(fused.smax(torch.from_numpy(q).cuda()).cpu().numpy(), softmax(f32(q), 1))


def test_operands_computed_in_the_matmul_kernel():
    ops = module(OPERANDS, target="cuda")
    for m, n, k in [(1000, 520, 700), (4096, 1024, 2048)]:
        x, s, w, b = rand(RNG, (m, k), np.float16), rand(RNG, k), rand(RNG, (n, k), np.float16) * 0.05, rand(RNG, n)
        want = f32((f32(x) * s).astype(np.float16)) @ f32(w).T + b
        assert_close(ops.scaled_linear(x, s, w, b), want, np.float16)
    x, w = rand(RNG, (333, 257)) * 0.5, rand(RNG, (257, 129))
    want = f32(np.exp(x * 0.5).astype(np.float16)) @ f32((w * 2.0).astype(np.float16))
    assert_close(ops.both_computed(x, w), want, np.float16)


def test_reductions_over_every_axis():
    ops = module(FULL, target="cuda")
    for m, n in [(4096, 4096), (3, 70000), (70000, 3)]:
        x = rand(RNG, (m, n))
        assert_close(ops.total(x), x.astype(np.float64).sum(keepdims=True).astype(np.float32))
        assert_close(ops.centred(x), x - x.astype(np.float64).mean(keepdims=True).astype(np.float32))
    h = rand(RNG, (1000, 999), np.float16)
    np.testing.assert_array_equal(ops.extremes(h), (h.max(keepdims=True) - h.min(keepdims=True)).astype(np.float16))
