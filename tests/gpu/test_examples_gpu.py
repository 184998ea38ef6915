"""Every example on the GPU against NumPy, on random inputs with ragged shapes, with NumPy,
CuPy and PyTorch arrays, and against the interpreter.  Run with `pytest -m gpu` on a GPU."""
import sys
from pathlib import Path

import numpy as np
import pytest

import tlc
from tlc.dtypes import BF16, F16

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
pytestmark = pytest.mark.gpu


def load(name):
    return tlc.load(str(EXAMPLES / f"{name}.tl"), target="cuda")


def rel_err(got, want) -> float:
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    assert np.isfinite(got).all(), "non-finite output"
    return float(np.linalg.norm(got - want) / max(np.linalg.norm(want), 1e-30))


def rng(seed=0):
    return np.random.default_rng(seed)


def test_vector_add_numpy_ragged():
    r = rng(1)
    n = 3001
    x, y = r.standard_normal(n, np.float32), r.standard_normal(n, np.float32)
    out = np.full(n, np.nan, np.float32)
    load("vector_add").vector_add(x, y, out, 2.5)
    assert rel_err(out, 2.5 * x + y) < 1e-6


@pytest.mark.parametrize("M,N,K", [(256, 256, 256), (300, 200, 100), (129, 257, 65)])
@pytest.mark.parametrize("dtype", [F16, BF16])
def test_gemm_against_numpy(M, N, K, dtype):
    r = rng(M + N + K)
    np_dt = dtype.numpy()
    A = r.standard_normal((M, K)).astype(np_dt)
    B = r.standard_normal((K, N)).astype(np_dt)
    C = np.full((M, N), np.nan, np_dt)
    load("gemm").matmul(A, B, C)
    want = A.astype(np.float32) @ B.astype(np.float32)
    assert rel_err(C.astype(np.float32), want) < 1e-2


@pytest.mark.parametrize("consts", [dict(BM=64, BN=64, BK=64, stages=2, THREADS=128),
                                    dict(BM=128, BN=256, BK=32, stages=4, THREADS=128),
                                    dict(BM=64, BN=128, BK=16, stages=1, THREADS=128)])
def test_gemm_other_constants(consts):
    r = rng(7)
    A = r.standard_normal((333, 160)).astype(np.float16)
    B = r.standard_normal((160, 250)).astype(np.float16)
    C = np.zeros((333, 250), np.float16)
    load("gemm").matmul(A, B, C, **consts)
    assert rel_err(C, A.astype(np.float32) @ B.astype(np.float32)) < 1e-2


def test_gemm_cupy_and_torch_arrays_match_numpy():
    import cupy as cp
    import torch

    r = rng(3)
    A = r.standard_normal((200, 96)).astype(np.float16)
    B = r.standard_normal((96, 130)).astype(np.float16)
    want = A.astype(np.float32) @ B.astype(np.float32)
    mod = load("gemm")
    Cc = cp.zeros((200, 130), cp.float16)
    mod.matmul(cp.asarray(A), cp.asarray(B), Cc)
    assert rel_err(cp.asnumpy(Cc), want) < 1e-2
    At, Bt = torch.from_numpy(A).cuda(), torch.from_numpy(B).cuda()
    Ct = torch.zeros((200, 130), dtype=torch.float16, device="cuda")
    mod.matmul(At, Bt, Ct)
    torch.cuda.synchronize()
    assert rel_err(Ct.cpu().numpy(), want) < 1e-2
    Cb = torch.zeros((200, 130), dtype=torch.bfloat16, device="cuda")
    mod.matmul(At.bfloat16(), Bt.bfloat16(), Cb)
    torch.cuda.synchronize()
    assert rel_err(Cb.float().cpu().numpy(), want) < 2e-2


def softmax_ref(x):
    x = x.astype(np.float64)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


@pytest.mark.parametrize("M,N", [(37, 1000), (64, 1024), (5, 3), (9, 2500)])
def test_softmax(M, N):
    x = rng(M * N).standard_normal((M, N)).astype(np.float16) * 3
    y = np.full((M, N), np.nan, np.float16)
    load("softmax").softmax(x, y)
    assert rel_err(y, softmax_ref(x)) < 2e-3


@pytest.mark.parametrize("M,N", [(37, 1000), (8, 1024), (9, 2500)])
def test_layernorm(M, N):
    r = rng(M + N)
    x = r.standard_normal((M, N)).astype(np.float16)
    g, b = r.standard_normal(N).astype(np.float32), r.standard_normal(N).astype(np.float32)
    y = np.full((M, N), np.nan, np.float16)
    load("layernorm").layernorm(x, g, b, y)
    xf = x.astype(np.float64)
    mu, var = xf.mean(1, keepdims=True), xf.var(1, keepdims=True)
    assert rel_err(y, (xf - mu) / np.sqrt(var + 1e-5) * g + b) < 2e-3


@pytest.mark.parametrize("example,kernel,shapes", [
    ("gemm", "matmul", {"A": (190, 70), "B": (70, 150), "C": (190, 150)}),
    ("softmax", "softmax", {"x": (19, 700), "y": (19, 700)}),
])
def test_gpu_matches_the_interpreter(example, kernel, shapes):
    cpu = tlc.load(str(EXAMPLES / f"{example}.tl"), target="cpu")
    gpu = load(example)
    r = rng(11)
    args_cpu, args_gpu = [], []
    for name, shape in shapes.items():
        a = r.standard_normal(shape).astype(np.float16)
        args_cpu.append(a.copy())
        args_gpu.append(a.copy())
    getattr(cpu, kernel)(*args_cpu)
    getattr(gpu, kernel)(*args_gpu)
    assert rel_err(args_gpu[-1], args_cpu[-1]) < 2e-3


def test_fragment_exchange_transposes():
    path = Path(__file__).resolve().parents[1] / "programs" / "transpose_fragments.tl"
    mod = tlc.load(str(path), target="cuda")
    A = rng(5).standard_normal((100, 100)).astype(np.float32)
    B = np.full_like(A, np.nan)
    mod.transpose(A, B)
    np.testing.assert_allclose(B, 2 * A.T, rtol=0, atol=0)


WGMMA_CONFIGS = [dict(BM=64, BN=128, BK=64, stages=3, THREADS=128), dict(BM=64, BN=256, BK=64, stages=3, THREADS=128),
                 dict(BM=128, BN=256, BK=64, stages=3, THREADS=256), dict(BM=128, BN=128, BK=128, stages=2, THREADS=256)]


@pytest.mark.parametrize("consts", WGMMA_CONFIGS)
@pytest.mark.parametrize("dtype", [F16, BF16])
def test_gemm_wgmma_configs(consts, dtype):
    """Configurations whose accumulator the sm_90a target computes with wgmma (on an H200)."""
    r = rng(17)
    np_dt = dtype.numpy()
    A = r.standard_normal((333, 320)).astype(np_dt)
    B = r.standard_normal((320, 270)).astype(np_dt)
    C = np.full((333, 270), np.nan, np_dt)
    mod = load("gemm")
    mod.matmul(A, B, C, **consts)
    assert rel_err(C.astype(np.float32), A.astype(np.float32) @ B.astype(np.float32)) < 1e-2
    import cupy

    if cupy.cuda.Device().compute_capability == "90":
        assert "tl::gemm_wgmma<" in mod.matmul.cuda_source(arch="sm_90a", **consts)


@pytest.mark.parametrize("consts", [dict(), dict(BM=128, BN=256, THREADS=256), dict(BM=64, BN=64, BK=32, stages=2)])
def test_gemm_trans_b(consts):
    path = Path(__file__).resolve().parents[1] / "programs" / "gemm_nt.tl"
    mod = tlc.load(str(path), target="cuda")
    r = rng(19)
    A = r.standard_normal((200, 192)).astype(np.float16)
    B = r.standard_normal((150, 192)).astype(np.float16)
    C = np.full((200, 150), np.nan, np.float16)
    mod.matmul_nt(A, B, C, **consts)
    assert rel_err(C.astype(np.float32), A.astype(np.float32) @ B.astype(np.float32).T) < 1e-2


def test_local_buffer_copies():
    path = Path(__file__).resolve().parents[1] / "programs" / "local_tile.tl"
    A = rng(6).standard_normal(29).astype(np.float32)
    B = np.full_like(A, np.nan)
    tlc.load(str(path), target="cuda").k(A, B)
    np.testing.assert_array_equal(B, 2 * A)


@pytest.mark.parametrize("B,H,S,SK,D", [(2, 4, 300, 513, 128), (1, 2, 1000, 1000, 64), (1, 3, 777, 100, 128)])
def test_attention(B, H, S, SK, D):
    """The attention tile op (one flash kernel) with NumPy and torch inputs, causal at S != SK."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from test_examples_cpu import attention_ref

    r = rng(S + SK)
    q, k, v = (r.standard_normal((B, H, n, D)).astype(np.float16) for n in (S, SK, SK))
    want = attention_ref(q, k, v, D ** -0.5)
    assert rel_err(load("attention").attention(q, k, v, np.float32(D ** -0.5)), want) < 2e-3
    import torch

    got = load("attention").attention(*(torch.from_numpy(x).cuda() for x in (q, k, v)), D ** -0.5)
    assert got.is_cuda and rel_err(got.cpu().numpy(), want) < 2e-3
