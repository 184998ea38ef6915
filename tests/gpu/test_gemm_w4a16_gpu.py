"""std.gemm's weight-only int4 GEMM on the GPU against PyTorch: the weight quantized by
std.quant.quantize_uint4 (the plain layout), repacked by repack_int4, then matmul_w4a16 (decode),
its split-K, matmul_w4a16_gemv (M <= 17) and matmul_w4a16_prefill against the weight dequantized in PyTorch and F.linear in
f32 (dequantize_w4a16 against that weight, exactly), at the bench's shapes (N = K = 8192, M = 1,
16, 64; prefill M = 512) and a ragged one;
then the kit's ragged shapes against NumPy, and the sm_80 path; the int8 / f8 weight-only kernels
(w8a16) against F.linear of the weight times its per-channel scales."""
import pathlib
import sys

import numpy as np
import pytest

import tlc

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "stdlib"))  # the shared kits
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "bench"))  # the bench's dequantization
from stdlib_kit import GEMM_PATH  # noqa: E402
from test_gemm_precisions_gpu import on_arch  # noqa: E402
from w4a16_kit import GEMV_SHAPES, SHAPES, case, check, check_shape, repack  # noqa: E402

pytestmark = pytest.mark.gpu
QUANT_PATH = GEMM_PATH.replace("gemm.tl", "quant.tl")


@pytest.fixture(scope="module")
def mod():
    return tlc.load(GEMM_PATH, target="cuda")


@pytest.mark.parametrize("M,N,K,dtype", [(1, 8192, 8192, "float16"), (16, 8192, 8192, "float16"),
                                         (64, 8192, 8192, "bfloat16"), (512, 4096, 8192, "float16"),
                                         (17, 1000, 1000, "bfloat16")])
def test_quantized_by_std_quant_against_torch(mod, M, N, K, dtype):
    import torch
    import torch.nn.functional as F
    from lowbit import w4a16_weight

    G = 128
    dt = getattr(torch, dtype)
    from lowbit import dequantize_uint4_torch

    W4, scales, zeros, q, _ = w4a16_weight(torch, tlc.load(QUANT_PATH, target="cuda"), mod, N, K, G, dt, M + K)
    deq = dequantize_uint4_torch(torch, q, scales.to(dt).float(), zeros, K, G)  # scales in A's dtype, as the kernels
    assert np.array_equal(W4.view(torch.int32).cpu().numpy().view(np.uint32), repack(q.cpu().numpy(), K))
    g = torch.Generator(device="cuda").manual_seed(M)
    A = torch.randn(M, K, device="cuda", generator=g).to(dt)
    want = F.linear(A.float(), deq.to(dt).float())  # each weight rounded once to A's dtype, as the kernels
    Wd = torch.full((N, K), float("nan"), dtype=dt, device="cuda")
    mod.dequantize_w4a16(W4, scales, zeros, Wd)
    assert torch.equal(Wd, deq.to(dt))  # exactly the weight the kernels compute with
    for name in ("matmul_w4a16", "matmul_w4a16_prefill", "matmul_w4a16_splitk") + (("matmul_w4a16_gemv",) if M <= 17 else ()):
        C = torch.full((M, N), float("nan"), dtype=dt, device="cuda")
        if name == "matmul_w4a16_splitk":
            P = torch.full((3, M, N), float("nan"), device="cuda")
            mod.matmul_w4a16_splitk(A, W4, scales, zeros, P)
            mod.splitk_reduce(P, C)
        else:
            getattr(mod, name)(A, W4, scales, zeros, C)
        torch.cuda.synchronize()
        err = float((C.float() - want).norm() / want.norm())
        assert err < (2e-3 if dt == torch.float16 else 1.5e-2), (name, M, N, K, dtype, err)


@pytest.mark.parametrize("M,N,K,G,decode,prefill", SHAPES)
def test_ragged_shapes_against_numpy(mod, M, N, K, G, decode, prefill):
    check_shape(mod, M, N, K, G, decode, prefill)


@pytest.mark.parametrize("M,N,K,G,consts", GEMV_SHAPES)
def test_gemv_ragged_shapes_against_numpy(mod, M, N, K, G, consts):
    A, W4, scales, zeros, C, ref, tol, _ = case(np.random.default_rng(M * N + K), M, N, K, G)
    mod.matmul_w4a16_gemv(A, W4, scales, zeros, C, G=G, **consts)
    check("matmul_w4a16_gemv", C, ref, tol)
    C[:] = np.nan
    on_arch(mod, "matmul_w4a16_gemv", "sm_80", [A, W4, scales, zeros, C], {"G": G, **consts})
    check("matmul_w4a16_gemv sm_80", C, ref, tol)


@pytest.mark.parametrize("M,N,K,G,decode,prefill", SHAPES[:3])
def test_the_sm80_path(mod, M, N, K, G, decode, prefill):
    rng = np.random.default_rng(M + N * K)
    for name, consts in (("matmul_w4a16", decode), ("matmul_w4a16_prefill", prefill)):
        A, W4, scales, zeros, C, ref, tol, _ = case(rng, M, N, K, G)
        on_arch(mod, name, "sm_80", [A, W4, scales, zeros, C], {"G": G, **consts})
        check(f"{name} sm_80", C, ref, tol)


@pytest.mark.parametrize("M,q,dtype", [(1, "int8", "float16"), (16, "float8_e4m3fn", "bfloat16"),
                                       (64, "int8", "bfloat16"), (300, "float8_e4m3fn", "float16")])
def test_w8a16_against_torch(mod, M, q, dtype):
    """matmul_w8a16 (M <= 64) or matmul_w8a16_prefill against F.linear in f32 of W * scales."""
    import torch
    import torch.nn.functional as F

    N, K = 3000, 4104
    dt, qt = getattr(torch, dtype), getattr(torch, q)
    g = torch.Generator(device="cuda").manual_seed(M)
    W = (torch.randint(-128, 128, (N, K), device="cuda", generator=g, dtype=torch.int32).to(qt) if q == "int8"
         else torch.randn(N, K, device="cuda", generator=g).to(qt))
    scales = torch.rand(N, device="cuda", generator=g) * 0.01 + 0.001
    A = torch.randn(M, K, device="cuda", generator=g).to(dt)
    want = F.linear(A.float(), W.float()) * scales
    C = torch.full((M, N), float("nan"), dtype=dt, device="cuda")
    getattr(mod, "matmul_w8a16" if M <= 64 else "matmul_w8a16_prefill")(A, W, scales, C)
    torch.cuda.synchronize()
    err = float((C.float() - want).norm() / want.norm())
    assert err < (2e-3 if dt == torch.float16 else 1.5e-2), (M, q, dtype, err)
