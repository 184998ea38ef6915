"""The whole-tensor attention tile op (one flash kernel, tlc/schedule/tileops/attention.py) on the
GPU: torch tensors against PyTorch's SDPA in f32 (math backend) at ragged sizes and head dims
64, 100 (padded to 128) and 128 in f16 and bf16, and a soft-capped score against the same
formula in f32."""
import numpy as np
import pytest

import tlc

pytestmark = pytest.mark.gpu

SRC = """
@tile_op
def attention(q: T[S, D], k: T[SK, D], v: T[SK, D], scale: f32, T: dtype = f16) -> T[S, D]:
    return T(T(softmax(q @ k.T * scale, axis=1)) @ v)

@tile_op
def causal(q: T[S, D], k: T[SK, D], v: T[SK, D], scale: f32, T: dtype = f16) -> T[S, D]:
    s = where(tri(S, SK, SK - S), q @ k.T * scale, -inf(f32))
    return T(T(softmax(s, axis=1)) @ v)

@tile_op
def heads(q: T[B, H, S, D], k: T[B, H, SK, D], v: T[B, H, SK, D], scale: f32, T: dtype = f16) -> T[B, H, S, D]:
    s = where(tri(S, SK, SK - S), q @ k.mT * scale, -inf(f32))
    return T(T(softmax(s, axis=-1)) @ v)

@tile_op
def capped(q: T[S, D], k: T[SK, D], v: T[SK, D], scale: f32, cap: f32, T: dtype = f16) -> f32[S, D]:
    return T(softmax(cap * tanh(q @ k.T * scale / cap), axis=1)) @ v
"""
TOL = {"f16": 4e-3, "bf16": 3e-2}


@pytest.fixture(scope="module")
def mod():
    return tlc.compile_source(SRC, target="cuda", path="attention_tile_op.tl")


def inputs(torch, dtype, S, SK, D, seed):
    gen = torch.Generator(device="cuda").manual_seed(seed)
    dt = {"f16": torch.float16, "bf16": torch.bfloat16}[dtype]
    return tuple(torch.randn(n, D, device="cuda", generator=gen).to(dt) for n in (S, SK, SK))


def rel_err(got, want) -> float:
    return float((got.float() - want).norm() / want.norm())


@pytest.mark.parametrize("dtype", ["f16", "bf16"])
@pytest.mark.parametrize("S, SK, D", [(1, 1, 64), (70, 300, 64), (1000, 777, 128), (129, 4097, 100), (4096, 4096, 128)])
def test_attention_against_sdpa(mod, dtype, S, SK, D):
    import torch
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel

    q, k, v = inputs(torch, dtype, S, SK, D, S + SK)
    scale = D ** -0.5
    with sdpa_kernel(SDPBackend.MATH):
        want = F.scaled_dot_product_attention(q.float()[None], k.float()[None], v.float()[None], scale=scale)[0]
    got = mod.attention(q, k, v, scale, T=dtype)
    assert got.dtype == q.dtype and got.shape == (S, D) and got.is_cuda
    assert not torch.isnan(got).any() and rel_err(got, want) < TOL[dtype]


@pytest.mark.parametrize("scale", [-0.09, 0.0])
def test_a_negative_or_zero_scale_against_sdpa(mod, scale):
    """The scale folded into the exponent (a negative one negates the raw scores first)."""
    import torch
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel

    q, k, v = inputs(torch, "f16", 300, 777, 128, 11)
    with sdpa_kernel(SDPBackend.MATH):
        want = F.scaled_dot_product_attention(q.float()[None], k.float()[None], v.float()[None], scale=scale)[0]
    got = mod.attention(q, k, v, scale)
    assert not torch.isnan(got).any() and rel_err(got, want) < TOL["f16"]


@pytest.mark.parametrize("S, SK", [(1000, 1000), (300, 2049), (4096, 4096)])
def test_causal_against_sdpa(mod, S, SK):
    """tri(S, SK, SK - S): the mask aligned to the bottom right, SDPA's attn_mask the same."""
    import torch
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel

    q, k, v = inputs(torch, "f16", S, SK, 128, S)
    mask = torch.ones(S, SK, dtype=torch.bool, device="cuda").tril(SK - S)
    with sdpa_kernel(SDPBackend.MATH):
        want = F.scaled_dot_product_attention(q.float()[None], k.float()[None], v.float()[None], attn_mask=mask,
                                              scale=0.088)[0]
    got = mod.causal(q, k, v, 0.088)
    assert not torch.isnan(got).any() and rel_err(got, want) < TOL["f16"]


@pytest.mark.parametrize("dtype", ["f16", "bf16"])
def test_batches_of_heads_against_sdpa(mod, dtype):
    """(B, H, S, D) as SDPA lays it out, causal at S == SK (SDPA's is_causal, the same mask)."""
    import torch
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel

    dt = {"f16": torch.float16, "bf16": torch.bfloat16}[dtype]
    gen = torch.Generator(device="cuda").manual_seed(3)
    q, k, v = (torch.randn(2, 5, 777, 128, device="cuda", generator=gen).to(dt) for _ in range(3))
    with sdpa_kernel(SDPBackend.MATH):
        want = F.scaled_dot_product_attention(q.float(), k.float(), v.float(), is_causal=True, scale=0.09)
    got = mod.heads(q, k, v, 0.09, T=dtype)
    assert got.shape == q.shape and not torch.isnan(got).any() and rel_err(got, want) < TOL[dtype]


def test_soft_capped_scores(mod):
    import torch

    q, k, v = inputs(torch, "f16", 333, 1025, 128, 7)
    s = (q.float() @ k.float().T) * 0.25
    want = torch.softmax(30.0 * torch.tanh(s / 30.0), dim=1) @ v.float()
    got = mod.capped(q, k, v, 0.25, 30.0)
    assert got.dtype == torch.float32 and rel_err(got, want) < TOL["f16"]
    assert np.isfinite(got.cpu().numpy()).all()
