"""Attention written as whole tensors (tileops/attention.py): `softmax(g(q @ k.T), axis=1) @ v`
becomes one flash kernel with no S x SK temporary, g any element-wise expression of the scores
and scalars; on the interpreter against NumPy at ragged sizes (S, SK not multiples of the
tiles, a head dim padded to a power of two); what is not the form keeps the fusion plan."""
from __future__ import annotations

import numpy as np
import pytest

from tileops_kit import BF16, assert_close, error_text, module, rand

SRC = """
CAP: const = 20.0

def softcap(x: f32, c: f32) -> f32:
    return c * tanh(x / c)

@tile_op
def attention(q: f16[S, D], k: f16[SK, D], v: f16[SK, D], scale: f32) -> f16[S, D]:
    s = q @ k.T * scale
    p = f16(softmax(s, axis=1))
    return f16(p @ v)

@fuse
@tile_op
def capped(q: T[S, D], k: T[SK, D], v: T[SK, D], scale: f32, T: dtype = bf16, SHIFT: const = 0.5) -> f32[S, D]:
    return T(softmax(softcap((q @ k.T) * scale, CAP) - SHIFT, axis=-1)) @ v

@tile_op
def causal(q: f16[S, D], k: f16[SK, D], v: f16[SK, D], scale: f32) -> f16[S, D]:
    s = where(tri(S, SK, SK - S), q @ k.T * scale, -inf(f32))
    return f16(f16(softmax(s, axis=1)) @ v)

@tile_op
def heads(q: f16[B, H, S, D], k: f16[B, H, SK, D], v: f16[B, H, SK, D], scale: f32) -> f16[B, H, S, D]:
    s = where(tri(S, SK, SK - S), q @ k.mT * scale, -inf(f32))
    return f16(f16(softmax(s, axis=-1)) @ v)

@tile_op
def mqa(q: f16[H, S, D], k: f16[1, SK, D], v: f16[1, SK, D]) -> f32[H, S, D]:
    return f16(softmax(q @ k.mT * 0.125, axis=-1)) @ v

@tile_op
def stacked_scores(q: f16[H, S, D], k: f16[H, SK, D]) -> f32[H, S, SK]:
    return q @ k.mT

@tile_op
def lower(x: f32[M, N], k: i32) -> f32[M, N]:
    return where(tri(M, N, k), x, 0.0)

@tile_op
def columns(q: f16[S, D], k: f16[SK, D], v: f16[S, D]) -> f32[SK, D]:
    return f16(softmax(q @ k.T, axis=0)).T @ v

@tile_op
def biased(q: f16[S, D], k: f16[SK, D], v: f16[SK, D], bias: f32[SK]) -> f32[S, D]:
    return f16(softmax(q @ k.T + bias, axis=1)) @ v

@tile_op
def scaled_left(q: f16[S, D], k: f16[SK, D], v: f16[SK, D], c: f32) -> f32[S, D]:
    return f16(softmax(c * (q @ k.T), axis=1)) @ v

@tile_op
def divided(q: f16[S, D], k: f16[SK, D], v: f16[SK, D], c: f32) -> f32[S, D]:
    return f16(softmax(q @ k.T / (c + 1.0), axis=1)) @ v

@tile_op
def named(q: f16[S, D], k: f16[SK, D], v: f16[SK, D]) -> f16[S, D]:
    kt = k.T
    s = where(tri(S, SK), q @ kt, -inf(f32))
    return f16(f16(softmax(s, axis=1)) @ v)
"""


def reference(q, k, v, g):
    """softmax(g(q @ k.T)) @ v in f64; a row whose scores are all -inf gives 0, as the kernel does."""
    s = g(q.astype(np.float64) @ k.astype(np.float64).T)
    top = s.max(axis=1, keepdims=True)
    p = np.exp(s - np.where(np.isfinite(top), top, 0.0))
    total = p.sum(axis=1, keepdims=True)
    return np.where(total > 0, p @ v.astype(np.float64) / np.where(total > 0, total, 1.0), 0.0)


def test_attention_is_one_flash_kernel():
    prog = module(SRC).attention.program(sizes={"D": 128})
    assert len(prog.launches) == 1 and not prog.temps and not prog.boundaries
    assert prog.describe().splitlines()[:4] == [
        "# tile op attention: 1 kernel",
        "#   attention_flash (attention): f16(p @ v) -> out",
        "#     fused: q @ k.T, softmax(s, axis=1), p @ v",
        "#     tiles: DP_=128, BM_=128, BN_=64, STAGES_=3, THREADS_=256 (std.attention's flash_fwd, online "
        "softmax: no S x SK temporary)"]
    kernel = prog.launches[0].kernel
    assert [p.name for p in kernel.params] == ["q", "k", "v", "out", "scale"]
    assert max(b.shape for b in kernel.buffers) == (128, 128)  # tiles only: nothing S x SK


@pytest.mark.parametrize("S, SK, D", [(70, 133, 40), (1, 5, 16), (129, 64, 64)])
def test_attention_matches_numpy(S, SK, D):
    rng = np.random.default_rng(S)
    q, k, v = (rand(rng, (n, D), np.float16) for n in (S, SK, SK))
    scale = np.float32(D ** -0.5)
    got = module(SRC).attention(q, k, v, scale)
    assert got.dtype == np.float16
    assert_close(got, reference(q, k, v, lambda s: s * scale), np.float16)


def test_scores_through_device_functions_constants_and_dtype_parameters():
    """softcap from the module, CAP a module constant, SHIFT a const parameter, T the dtype
    parameter: each resolves in the generated kernel as in the tile op; @fuse holds."""
    mod = module(SRC)
    rng = np.random.default_rng(1)
    q, k, v = (rand(rng, (n, 24), BF16) for n in (37, 90, 90))
    got = mod.capped(q, k, v, np.float32(0.3))
    assert len(mod.capped.program(sizes={"D": 24}).launches) == 1
    want = reference(q, k, v, lambda s: 20.0 * np.tanh(s * 0.3 / 20.0) - 0.5)
    assert got.dtype == np.float32
    assert_close(got, want, BF16)


@pytest.mark.parametrize("S, SK", [(70, 133), (133, 70), (128, 128), (1, 300)])
def test_causal_mask_from_tri(S, SK):
    """The mask aligned to the bottom right (tri's k = SK - S, FlashAttention 2's): query rows
    that see no key (S > SK) give 0; the loop reads only the key blocks a query block sees."""
    mod = module(SRC)
    rng = np.random.default_rng(S * SK)
    q, k, v = (rand(rng, (n, 64), np.float16) for n in (S, SK, SK))
    want = reference(q, k, v, lambda s: np.where(np.tri(S, SK, SK - S, dtype=bool), s * 0.125, -np.inf))
    assert_close(mod.causal(q, k, v, np.float32(0.125)), want, np.float16)
    kernel = mod.causal.program(sizes={"D": 64}).launches[0].kernel
    from tlc import ir

    assert "n_blocks_ = min((SK_ - 1) // 64 + 1, ((bx_ + 1) * 128 + (SK_ - S_) - 1) // 64 + 1)" in ir.print_kernel(kernel)


@pytest.mark.parametrize("c", [0.125, -0.2, 0.0, -0.0])
def test_a_scale_of_any_sign_is_folded_into_the_exponent(c):
    """s * c exponentiated as exp2(s * |c| log2(e) - max), the max taken of the raw scores
    (flash_fwd's one FFMA an element, no pass of its own); a negative c negates the raw
    scores first, c = 0 weighs every key alike, as NumPy does."""
    mod = module(SRC)
    rng = np.random.default_rng(5)
    q, k, v = (rand(rng, (n, 32), np.float16) for n in (70, 133, 133))
    assert_close(mod.scaled_left(q, k, v, np.float32(c)), reference(q, k, v, lambda s: c * s), np.float16)
    assert_close(mod.divided(q, k, v, np.float32(c)), reference(q, k, v, lambda s: s / (c + 1.0)), np.float16)
    from tlc import ir

    text = ir.print_kernel(mod.divided.program(sizes={"D": 32}).launches[0].kernel)
    assert "c_ = 1.0 / (c + 1.0)" in text and "scale_log2_ = where(c_ != 0.0, abs(c_), 1e-30) * 1.4426950408889634" in text
    assert "scores_[i_, j_] = fast_exp2(scores_[i_, j_] * scale_log2_ - max_log2_[i_])" in text


def test_the_causal_mask_is_applied_to_the_blocks_across_the_diagonal_only():
    from tlc import ir

    text = ir.print_kernel(module(SRC).causal.program(sizes={"D": 64}).launches[0].kernel)
    assert "if kb_ * 64 + 64 > SK_ or kb_ * 64 + 64 - 1 > bx_ * 128 + (SK_ - S_):" in text
    assert text.count("-inf)") == 1  # the one where(), inside that branch


def stacked_reference(q, k, v, g):
    lead = np.broadcast_shapes(q.shape[:-2], k.shape[:-2])
    q, k, v = (np.broadcast_to(x, lead + x.shape[-2:]).reshape((-1,) + x.shape[-2:]) for x in (q, k, v))
    return np.stack([reference(a, b, c, g) for a, b, c in zip(q, k, v)]).reshape(lead + (q.shape[-2], v.shape[-1]))


def test_stacks_of_heads_are_the_grids_y_and_z():
    """(B, H, S, D) as SDPA lays it out, causal: one launch, blocks over (query block, head,
    batch), as flash_fwd's grid."""
    mod = module(SRC)
    rng = np.random.default_rng(4)
    q, k, v = (rand(rng, (2, 3, n, 40), np.float16) for n in (70, 100, 100))
    want = stacked_reference(q, k, v, lambda s: np.where(np.tri(70, 100, 30, dtype=bool), s * 0.15, -np.inf))
    assert_close(mod.heads(q, k, v, np.float32(0.15)), want, np.float16)
    from tlc import ir

    kernel = mod.heads.program(sizes={"D": 64}).launches[0].kernel
    assert "grid (bx_, h_, b_) in ((S_ - 1) // 128 + 1, H_, B_)" in ir.print_kernel(kernel)


def test_one_key_head_shared_by_every_query_head():
    mod = module(SRC)
    rng = np.random.default_rng(5)
    q, k, v = rand(rng, (4, 33, 64), np.float16), rand(rng, (1, 90, 64), np.float16), rand(rng, (1, 90, 64), np.float16)
    got = mod.mqa(q, k, v)
    assert got.dtype == np.float32 and got.shape == (4, 33, 64)
    assert_close(got, stacked_reference(q, k, v, lambda s: s * 0.125), np.float16)


def test_stacks_that_are_not_attention_are_refused():
    assert error_text(SRC, "stacked_scores").splitlines()[0] == (
        "ops.tl:33:20: error[E073]: tile op tensors have one or two dimensions; 'q' has 3")


@pytest.mark.parametrize("k", [0, 2, -3, 40])
def test_tri_is_numpys(k):
    x = rand(np.random.default_rng(k + 5), (9, 30))
    np.testing.assert_array_equal(module(SRC).lower(x, np.int32(k)), np.where(np.tri(9, 30, k, dtype=bool), x, 0.0))


def test_intermediates_name_the_operands():
    """k.T named before the product, the mask's k left at 0 (top-left aligned)."""
    mod = module(SRC)
    rng = np.random.default_rng(6)
    q, k, v = (rand(rng, (n, 32), np.float16) for n in (50, 80, 80))
    assert [x.kind for x in mod.named.program(sizes={"D": 32}).launches] == ["attention"]
    want = reference(q, k, v, lambda s: np.where(np.tri(50, 80, dtype=bool), s, -np.inf))
    assert_close(mod.named(q, k, v), want, np.float16)


def test_what_is_not_the_form_keeps_the_fusion_plan():
    mod = module(SRC)
    # the softmax down the columns, and scores that read another tensor: three kernels, still right
    assert "attention" not in [x.kind for x in mod.columns.program().launches]
    assert [x.kind for x in mod.biased.program().launches] == ["matmul", "rows", "matmul"]
    rng = np.random.default_rng(2)
    q, k, v, bias = rand(rng, (20, 16), np.float16), rand(rng, (33, 16), np.float16), rand(rng, (33, 16), np.float16), \
        rand(rng, 33)
    assert_close(mod.biased(q, k, v, bias), reference(q, k, v, lambda s: s + bias), np.float16)


def test_the_head_dim_must_be_known_to_build_it():
    """E240, as a kernel's compiled-in size: `tlc check` passes the program, `tlc build` asks."""
    assert error_text(SRC, "attention") == (
        "ops.tl:8:15: error[E240]: the head dim 'D' of 'q' must be known to schedule this attention (it is "
        "compiled in)\n"
        "  |\n"
        "8 | def attention(q: f16[S, D], k: f16[SK, D], v: f16[SK, D], scale: f32) -> f16[S, D]:\n"
        "  |               ^^^^^^^^^^^^\n"
        "  = hint: give it: --shape D=SIZE (a call binds it from its arrays)")


def test_sm90a_runs_the_warp_specialized_ring_with_the_deferred_product():
    """The same schedule as std.attention's flash_fwd: a TMA producer, two consumer warpgroups,
    P @ V issued one iteration late behind the next Q @ K.T."""
    kernel = module(SRC).attention.program(arch="sm_90a", sizes={"D": 128}).launches[0].kernel
    from tlc import ir

    notes = ir.print_kernel(kernel)
    assert kernel.warp_spec is not None
    assert "consumers: threads 0..255 (2 warpgroups)" in notes
    assert "deferred: the loop's last gemm" in notes


@pytest.mark.nvcc
def test_sass_has_hgmma_for_both_products_and_no_local_memory(tmp_path):
    import pathlib
    import re
    import sys

    from tlc.codegen import generate_file

    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "codegen"))
    from nvcc import cubin_sass

    mod = module(SRC)
    kernels = mod.attention.program(arch="sm_90a", sizes={"D": 128}).kernels
    sass, log = cubin_sass(generate_file(list(kernels), "sm_90a", sources=mod.program.sources), "sm_90a", tmp_path,
                           "attention")
    assert re.search(r"HGMMA\.64x128x16\.F32 R\d+, gdesc", sass)  # q @ k.T from shared memory
    assert re.search(r"HGMMA\.64x128x16\.F32 R\d+, R\d+, gdesc", sass)  # p @ v, p from registers
    assert not re.search(r"\b(LDL|STL)\b", sass) and " 0 bytes spill stores" in log
