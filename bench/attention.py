"""std.attention against PyTorch's scaled_dot_product_attention on the GPU, one process.

Each row times tlc's kernel and the vendors in the same run (tlc.timing.compare: median of
alternating runs, L2 flushed before each), after checking every contender's output against
an f32 reference (PyTorch's math backend in f32, one batch at a time): a wrong contender is
reported and never timed.  Vendors: cuDNN (SDPBackend.CUDNN_ATTENTION) and FlashAttention 2
(SDPBackend.FLASH_ATTENTION) as PyTorch ships them.  TFLOP/s count 4 * B * H * S * SK * D
multiply-adds-as-two for the two products, halved for a causal mask (S == SK), as
FlashAttention's benchmarks count them.

MLA decoding rows (mla_*) time tlc alone (no MLA kernel ships with PyTorch): GB/s of the
latent cache and TFLOP/s, against the device copy and the dense bf16 peak.

    python bench/attention.py [--quick] [--only fwd_f16_d128] [--json out.json]
"""
from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import tlc  # noqa: E402
from tlc.timing import Checked, compare, compare_checked, tolerance, verify  # noqa: E402

# name: (dtype, B, H, HK, S, SK, D, causal, tlc constants)
ROWS = {
    "fwd_f16_d128": ("float16", 4, 32, 32, 4096, 4096, 128, False, {}),
    "fwd_f16_d128_causal": ("float16", 4, 32, 32, 4096, 4096, 128, True, {}),
    "fwd_bf16_d128": ("bfloat16", 4, 32, 32, 4096, 4096, 128, False, {}),
    "fwd_bf16_d128_causal": ("bfloat16", 4, 32, 32, 4096, 4096, 128, True, {}),
    "fwd_f16_d128_s8192": ("float16", 2, 32, 32, 8192, 8192, 128, False, {}),
    "fwd_f16_d128_s8192_causal": ("float16", 2, 32, 32, 8192, 8192, 128, True, {}),
    "fwd_f16_gqa": ("float16", 4, 32, 8, 4096, 4096, 128, False, {}),
    "fwd_f16_gqa_causal": ("float16", 4, 32, 8, 4096, 4096, 128, True, {}),
    "fwd_f16_d64": ("float16", 4, 32, 32, 4096, 4096, 64, False, {}),
    "fwd_f16_d256": ("float16", 4, 16, 16, 4096, 4096, 256, False, {"BN": 80, "STAGES": 2}),
    # variants: three stages of 48 keys at D = 256 (the deferred P @ V and ping-pong need three),
    # 192 keys a step at D = 64 (FlashAttention 3 takes wider key blocks at small head dims)
    "fwd_f16_d256_bn48": ("float16", 4, 16, 16, 4096, 4096, 256, False, {"BN": 48, "STAGES": 3}),
    "fwd_f16_d64_bn192": ("float16", 4, 32, 32, 4096, 4096, 64, False, {"BN": 192}),
    # backward (dQ, dK, dV from dO): the vendors through autograd, 2.5x the forward's flops
    "bwd_f16_d128": ("float16", 4, 32, 32, 4096, 4096, 128, False, {}),
    "bwd_f16_d128_causal": ("float16", 4, 32, 32, 4096, 4096, 128, True, {}),
    # the dQ grid at 64 query rows and one consumer warpgroup (the default before session 14)
    "bwd_f16_d128_bm64": ("float16", 4, 32, 32, 4096, 4096, 128, False, {"BM": 64, "THREADS": 128}),
    # session 14's tiles on sm_90a (config.json gives 128 keys a dQ step and 64 queries a dK/dV step)
    "bwd_f16_d128_s14": ("float16", 4, 32, 32, 4096, 4096, 128, False, {"BN": 64, "BQ": 32}),
    # session 16's dK/dV step, 48 queries in a 2-deep ring (64 needed registers that its LSE and
    # delta columns held until they came through the TMA)
    "bwd_f16_d128_bq48": ("float16", 4, 32, 32, 4096, 4096, 128, False, {"BQ": 48, "KV_STAGES": 2}),
    # block-sparse: 10% of the (query block, key block) pairs, against the same kernel over all
    "sparse_f16_10pct": ("float16", 1, 32, 32, 8192, 8192, 128, False, {"DENSITY": 0.1}),
    # the whole-tensor @tile_op softmax(q @ k.mT * scale) @ v, against flash_fwd on the same tensors
    "tileop_f16_d128": ("float16", 4, 32, 32, 4096, 4096, 128, False, {}),
    "tileop_f16_d128_causal": ("float16", 4, 32, 32, 4096, 4096, 128, True, {}),
    # decoding: one new token against an 8192-token cache; GB/s of K and V read
    "decode_f16": ("float16", 64, 32, 32, 1, 8192, 128, False, {}),
    "decode_f16_gqa": ("float16", 64, 32, 8, 1, 8192, 128, False, {}),
    # the same cache in pages of 64 tokens at shuffled places (the vendors read it contiguous)
    "decode_f16_paged": ("float16", 64, 32, 32, 1, 8192, 128, False, {"PAGE": 64}),
    "decode_f16_gqa_paged": ("float16", 64, 32, 8, 1, 8192, 128, False, {"PAGE": 64}),
    # the split count against the default 4: GQA's 2048 blocks are 5.2 waves of three an SM
    "decode_f16_splits8": ("float16", 64, 32, 32, 1, 8192, 128, False, {"SPLITS": 8}),
    "decode_f16_gqa_splits8": ("float16", 64, 32, 8, 1, 8192, 128, False, {"SPLITS": 8}),
    "decode_f16_gqa_splits16": ("float16", 64, 32, 8, 1, 8192, 128, False, {"SPLITS": 16}),
    "decode_f16_paged_splits8": ("float16", 64, 32, 32, 1, 8192, 128, False, {"PAGE": 64, "SPLITS": 8}),
}
# MLA decoding (mla_decode, FlashMLA's problem): (dtype, B, H, SQ, cache length, DK, DV, tlc
# constants); 128 query heads on one latent head of 512 + 64, pages of 64 tokens at shuffled places.
# SPLITS=1: B * SQ * 2 blocks of 64 heads already fill the H200's 132 SMs (one block each)
MLA_ROWS = {f"mla_b{B}_kv{SK}_sq{SQ}": ("bfloat16", B, 128, SQ, SK, 576, 512, {})
            for B in (64, 132) for SK in (4096, 16384) for SQ in (1, 2)}
DENSE_BF16_PEAK = 989.0  # TFLOP/s, the H100/H200 SXM's dense bf16 tensor-core rate (spec sheet)
QUICK = ("fwd_f16_d128", "fwd_f16_d128_causal", "fwd_f16_gqa", "fwd_f16_d64", "decode_f16", "decode_f16_gqa",
         "decode_f16_paged", "bwd_f16_d128", "sparse_f16_10pct", "tileop_f16_d128")
ULPS = 16  # f16 output against the f32 reference: rtol and atol (of the RMS) of 16 units
# The backward rounds P and dS to f16 before its products, twice the forward's roundings: at 16
# units the causal row's check failed one element in 2e8 for FlashAttention 2 and tlc alike
# (same element, same error, 0.00257 against an atol of 0.00099; H200 batch of session 14)
BWD_ULPS = 32


def reference(torch, F, q, k, v, scale, causal):
    """O in f32, PyTorch's math backend a batch at a time (the S x SK scores of one batch fit)."""
    from torch.nn.attention import SDPBackend, sdpa_kernel

    group = q.shape[1] // k.shape[1]
    out = torch.empty(q.shape, dtype=torch.float32, device=q.device)
    with sdpa_kernel(SDPBackend.MATH):
        for b in range(q.shape[0]):
            kb = k[b:b + 1].float().repeat_interleave(group, dim=1)
            vb = v[b:b + 1].float().repeat_interleave(group, dim=1)
            out[b:b + 1] = F.scaled_dot_product_attention(q[b:b + 1].float(), kb, vb, scale=scale, is_causal=causal)
    return out


def paged(torch, k, v, page):
    """K and V (B, HK, SK, D) as a paged cache (NP, PAGE, HK, D), the pages in a random order,
    with the page table (B, SK / PAGE) and the lengths (all SK)."""
    B, HK, SK, D = k.shape
    mp = SK // page
    perm = torch.randperm(B * mp, device=k.device, generator=torch.Generator(device="cuda").manual_seed(1))
    out = []
    for x in (k, v):
        pages = x.reshape(B, HK, mp, page, D).permute(0, 2, 3, 1, 4).reshape(B * mp, page, HK, D)
        shuffled = torch.empty_like(pages)
        shuffled[perm] = pages
        out.append(shuffled)
    table = perm.reshape(B, mp).to(torch.int32)
    return out[0], out[1], table, torch.full((B,), SK, dtype=torch.int32, device=k.device)


def vendor(torch, F, backend, q, k, v, scale, causal):
    from torch.nn.attention import sdpa_kernel

    gqa = q.shape[1] != k.shape[1]

    def run():
        with sdpa_kernel(backend):
            return F.scaled_dot_product_attention(q, k, v, scale=scale, is_causal=causal, enable_gqa=gqa)
    return run


def sparse_row(torch, F, mod, name, spec, min_ms):
    """flash_fwd_sparse over a random DENSITY of the block pairs against the same kernel over
    all of them (the ratio is the speedup the sparsity gives; the goal at 10%: 6x), each output
    checked against PyTorch's math backend in f32 under its mask."""
    from torch.nn.attention import SDPBackend, sdpa_kernel

    dtype, B, H, HK, S, SK, D, causal, consts = spec
    BM = BN = 128
    dt = getattr(torch, dtype)
    gen = torch.Generator(device="cuda").manual_seed(0)
    q, k, v = (torch.randn(B, h, s, D, device="cuda", dtype=dt, generator=gen) for h, s in ((H, S), (HK, SK), (HK, SK)))
    scale = 1.0 / math.sqrt(D)
    nqb, nkb = -(-S // BM), -(-SK // BN)
    masks = {"tlc": (torch.rand(B, H, nqb, nkb, device="cuda", generator=gen) < consts["DENSITY"]).to(torch.uint8),
             "dense": torch.ones(B, H, nqb, nkb, device="cuda", dtype=torch.uint8)}
    timed, checks = {}, {}
    for label, mask in masks.items():
        index = torch.zeros(B, H, nqb, nkb, device="cuda", dtype=torch.int32)
        count = torch.zeros(B, H, nqb, device="cuda", dtype=torch.int32)
        mod.block_mask_to_index(mask, index, count)
        o = torch.empty_like(q)
        lse = torch.empty(B, H, S, device="cuda", dtype=torch.float32)
        tokens = mask.bool().repeat_interleave(BM, 2).repeat_interleave(BN, 3)[:, :, :S, :SK]
        ref = torch.empty(q.shape, dtype=torch.float32, device="cuda")
        with sdpa_kernel(SDPBackend.MATH):
            for b in range(B):
                ref[b:b + 1] = F.scaled_dot_product_attention(q[b:b + 1].float(), k[b:b + 1].float(), v[b:b + 1].float(),
                                                              attn_mask=tokens[b:b + 1], scale=scale)
        ref = torch.nan_to_num(ref)  # rows that see no key: 0, as flash_fwd_sparse gives
        timed[label] = (lambda o=o, lse=lse, index=index, count=count:
                        mod.flash_fwd_sparse(q, k, v, o, lse, index, count, scale))
        checks[label] = Checked(timed[label], ref, out=o, **tolerance(dtype, ref, ULPS))
        del tokens
    verdicts = {label: verify(c) for label, c in checks.items()}
    ms = compare({label: fn for label, fn in timed.items() if verdicts[label].ok}, min_ms=min_ms)
    flops = 4.0 * B * H * S * SK * D
    result = {"row": name, "unit": "TFLOP/s", "shape": dict(B=B, H=H, HK=HK, S=S, SK=SK, D=D, causal=causal, dtype=dtype)}
    for label, verdict in verdicts.items():
        frac = float(masks[label].float().mean())
        result[label] = {"ms": ms[label], "rate": flops * frac / ms[label] / 1e9, "density": frac} if verdict.ok \
            else {"error": verdict.why}
    if "ms" in result["tlc"] and "ms" in result["dense"]:
        result["speedup"] = result["dense"]["ms"] / result["tlc"]["ms"]
    torch.cuda.empty_cache()
    return result


TILE_OP = """
@tile_op
def attention(q: T[B, H, S, D], k: T[B, H, SK, D], v: T[B, H, SK, D], scale: f32, T: dtype = f16) -> T[B, H, S, D]:
    return T(T(softmax(q @ k.mT * scale, axis=-1)) @ v)

@tile_op
def causal(q: T[B, H, S, D], k: T[B, H, SK, D], v: T[B, H, SK, D], scale: f32, T: dtype = f16) -> T[B, H, S, D]:
    s = where(tri(S, SK, SK - S), q @ k.mT * scale, -inf(f32))
    return T(T(softmax(s, axis=-1)) @ v)
"""


def forward_inputs(torch, F, spec):
    """Q, K, V of a forward row's shape (seeded), its scale, the f32 reference and its tolerance."""
    dtype, B, H, HK, S, SK, D, causal, consts = spec
    dt = getattr(torch, dtype)
    gen = torch.Generator(device="cuda").manual_seed(0)
    q, k, v = (torch.randn(B, h, s, D, device="cuda", dtype=dt, generator=gen) for h, s in ((H, S), (HK, SK), (HK, SK)))
    scale = 1.0 / math.sqrt(D)
    ref = reference(torch, F, q, k, v, scale, causal)
    return q, k, v, scale, ref, tolerance(dtype, ref, ULPS)


def tile_op_row(torch, F, mod, name, spec, min_ms):
    """The whole-tensor attention tile op (scheduled as one flash kernel, tileops/attention.py)
    against std.attention's flash_fwd on the same head (goal: within 1.1x), both checked first."""
    dtype, B, H, HK, S, SK, D, causal, consts = spec
    q, k, v, scale, ref, tol = forward_inputs(torch, F, spec)
    ops = tlc.compile_source(TILE_OP, target="cuda", path="attention_tile_op.tl")
    op = ops.causal if causal else ops.attention
    launch, out = op.prepare(q, k, v, scale, T=dtype.replace("float", "f").replace("bfloat", "bf"))
    o, lse = torch.empty_like(q), torch.empty(B, H, S, device="cuda", dtype=torch.float32)
    contenders = {"tlc": Checked(launch, ref, out=out, **tol),
                  "flash_fwd": Checked(lambda: mod.flash_fwd(q, k, v, o, lse, scale, CAUSAL=causal), ref, out=o, **tol)}
    ms, verdicts = compare_checked(contenders, min_ms=min_ms)
    flops = 4.0 * B * H * S * SK * D * (0.5 if causal else 1.0)
    result = {"row": name, "unit": "TFLOP/s", "shape": dict(B=B, H=H, HK=HK, S=S, SK=SK, D=D, causal=causal, dtype=dtype)}
    for label, verdict in verdicts.items():
        result[label] = {"ms": ms[label], "rate": flops / ms[label] / 1e9} if verdict.ok else {"error": verdict.why}
    torch.cuda.empty_cache()
    return result


def backward_row(torch, F, mod, name, spec, min_ms):
    """dQ, dK, dV of the f16 inputs for a random dO: tlc's flash_bwd (after its flash_fwd gave O
    and LSE, untimed) against each vendor's backward through autograd (its forward untimed);
    every gradient checked against the f32 math backend's, a batch at a time."""
    from torch.nn.attention import SDPBackend, sdpa_kernel

    dtype, B, H, HK, S, SK, D, causal, consts = spec
    dt = getattr(torch, dtype)
    gen = torch.Generator(device="cuda").manual_seed(0)
    q, k, v, do = (torch.randn(B, h, s, D, device="cuda", dtype=dt, generator=gen)
                   for h, s in ((H, S), (HK, SK), (HK, SK), (H, S)))
    scale = 1.0 / math.sqrt(D)
    refs = [torch.empty(x.shape, dtype=torch.float32, device="cuda") for x in (q, k, v)]
    with sdpa_kernel(SDPBackend.MATH):
        for b in range(B):
            xs = [x[b:b + 1].float().requires_grad_() for x in (q, k, v)]
            out = F.scaled_dot_product_attention(*xs, scale=scale, is_causal=causal)
            grads = torch.autograd.grad(out, xs, do[b:b + 1].float())
            for r, g in zip(refs, grads):
                r[b:b + 1] = g
    o, lse = torch.empty_like(q), torch.empty(B, H, S, device="cuda", dtype=torch.float32)
    mod.flash_fwd(q, k, v, o, lse, scale, CAUSAL=causal)
    dq, dk, dv = torch.empty_like(q), torch.empty_like(k), torch.empty_like(v)
    ref = torch.cat([r.flatten() for r in refs])
    tol = tolerance(dtype, ref, BWD_ULPS)
    flat = lambda grads: torch.cat([g.flatten() for g in grads])  # noqa: E731  (checked once, untimed)

    def tlc_run():
        mod.flash_bwd(q, k, v, o, do, lse, dq, dk, dv, scale, CAUSAL=causal, **consts)
        return dq, dk, dv
    timed = {"tlc": tlc_run}
    for label, backend in (("cudnn", SDPBackend.CUDNN_ATTENTION), ("flash2", SDPBackend.FLASH_ATTENTION)):
        xs = [x.detach().clone().requires_grad_() for x in (q, k, v)]
        try:
            with sdpa_kernel(backend):
                out = F.scaled_dot_product_attention(*xs, scale=scale, is_causal=causal)
        except RuntimeError as e:
            timed[label] = lambda e=e: (_ for _ in ()).throw(e)
            continue
        timed[label] = lambda out=out, xs=xs: torch.autograd.grad(out, xs, do, retain_graph=True)
    for x in (dq, dk, dv):  # an element flash_bwd never writes shows as NaN
        x.fill_(float("nan"))
    verdicts = {label: verify(Checked(lambda fn=fn: flat(fn()), ref, **tol)) for label, fn in timed.items()}
    ms = compare({label: fn for label, fn in timed.items() if verdicts[label].ok}, min_ms=min_ms)
    flops = 2.5 * 4.0 * B * H * S * SK * D * (0.5 if causal else 1.0)
    result = {"row": name, "unit": "TFLOP/s", "shape": dict(B=B, H=H, HK=HK, S=S, SK=SK, D=D, causal=causal, dtype=dtype)}
    for label, verdict in verdicts.items():
        result[label] = {"ms": ms[label], "rate": flops / ms[label] / 1e9} if verdict.ok else {"error": verdict.why}
    del refs, ref
    torch.cuda.empty_cache()
    return result


def row(torch, F, mod, name, spec, min_ms):
    from torch.nn.attention import SDPBackend

    dtype, B, H, HK, S, SK, D, causal, consts = spec
    q, k, v, scale, ref, tol = forward_inputs(torch, F, spec)
    o = torch.empty_like(q)
    lse = torch.empty(B, H, S, device="cuda", dtype=torch.float32)
    decode = name.startswith("decode")
    kern = mod.flash_decode if decode else mod.flash_fwd
    consts = dict(consts)
    page = consts.pop("PAGE", None)

    def tlc_run():
        kern(q, k, v, o, lse, scale, CAUSAL=causal, **consts)
    if page:
        kp, vp, table, lengths = paged(torch, k, v, page)

        def tlc_run():  # noqa: F811  (the paged kernel)
            mod.flash_decode_paged(q, kp, vp, table, lengths, o, lse, scale, CAUSAL=causal, **consts)
    contenders = {"tlc": Checked(tlc_run, ref, out=o, **tol)}
    for label, backend in (("cudnn", SDPBackend.CUDNN_ATTENTION), ("flash2", SDPBackend.FLASH_ATTENTION)):
        contenders[label] = Checked(vendor(torch, F, backend, q, k, v, scale, causal), ref, **tol)
    ms, verdicts = compare_checked(contenders, min_ms=min_ms)
    flops = 4.0 * B * H * S * SK * D * (0.5 if causal else 1.0)
    kv_bytes = 2.0 * B * HK * SK * D * q.element_size()
    result = {"row": name, "unit": "GB/s" if decode else "TFLOP/s",
              "shape": dict(B=B, H=H, HK=HK, S=S, SK=SK, D=D, causal=causal, dtype=dtype)}
    for label, verdict in verdicts.items():
        # decoding reads K and V once: its rate is bytes a second, the rest flops
        rate = kv_bytes / ms[label] / 1e6 if decode and verdict.ok else flops / ms[label] / 1e9 if verdict.ok else 0
        result[label] = {"ms": ms[label], "rate": rate} if verdict.ok else {"error": verdict.why}
    del ref, q, k, v, o, lse
    torch.cuda.empty_cache()
    return result


def mla_inputs(torch, dt, B, SQ, H, SK, DK, page=64):
    """(q, keys, cache, table, lengths): B sequences of SK tokens in pages of `page` (sequence
    b's page p is keys[b * SK // page + p]) at shuffled places of the cache, its page table."""
    gen = torch.Generator(device="cuda").manual_seed(0)
    mp = SK // page
    q = torch.randn(B, SQ, H, DK, device="cuda", dtype=dt, generator=gen)
    keys = torch.randn(B * mp, page, DK, device="cuda", dtype=dt, generator=gen)
    perm = torch.randperm(B * mp, device="cuda", generator=gen)
    cache = torch.empty_like(keys)
    cache[perm] = keys
    table = perm.reshape(B, mp).to(torch.int32)
    lengths = torch.full((B,), SK, dtype=torch.int32, device="cuda")
    return q, keys, cache, table, lengths


def mla_row(torch, F, mod, name, spec, min_ms):
    """mla_decode over a paged latent cache (FlashMLA's layout: Q (B, SQ, H, DK), the cache
    (pages, 64, DK), a shuffled page table, every sequence SK tokens, the SQ new tokens causal
    among themselves), checked against an f32 reference (a batch at a time: softmax(q @ K.T *
    scale) @ K[:, :DV], K the sequence's rows) before timing, O to 16 bf16 units and the LSE
    to 1e-3.  Rates: GB/s of the cache read once (B * SK * DK elements) and TFLOP/s of
    2 * B * SQ * H * SK * (DK + DV), as FlashMLA counts them."""
    dtype, B, H, SQ, SK, DK, DV, consts = spec
    dt = getattr(torch, dtype)
    mp = SK // 64
    q, keys, cache, table, lengths = mla_inputs(torch, dt, B, SQ, H, SK, DK)
    scale = 1.0 / math.sqrt(DK)
    ref = torch.empty(B, SQ, H, DV, device="cuda", dtype=torch.float32)
    ref_lse = torch.empty(B, H, SQ, device="cuda", dtype=torch.float32)
    seen = torch.arange(SK, device="cuda")[None, :] <= torch.arange(SQ, device="cuda")[:, None] + SK - SQ
    for b in range(B):
        k = keys[b * mp:(b + 1) * mp].reshape(SK, DK).float()
        s = torch.einsum("shd,kd->shk", q[b].float(), k) * scale
        s = s.masked_fill(~seen[:, None, :], float("-inf"))
        ref[b] = torch.softmax(s, dim=-1) @ k[:, :DV]
        ref_lse[b] = torch.logsumexp(s, dim=-1).transpose(0, 1)
        del s
    o = torch.empty(B, SQ, H, DV, device="cuda", dtype=dt)
    lse = torch.empty(B, H, SQ, device="cuda", dtype=torch.float32)

    def tlc_run():
        mod.mla_decode(q, cache, table, lengths, o, lse, scale, **consts)
    ms, verdicts = compare_checked({"tlc": Checked(tlc_run, ref, out=o, **tolerance(dtype, ref, ULPS))}, min_ms=min_ms)
    lse_err = (lse - ref_lse).abs().max().item()
    result = {"row": name, "unit": "TFLOP/s", "shape": dict(B=B, H=H, SQ=SQ, SK=SK, DK=DK, DV=DV, dtype=dtype),
              "constants": consts}
    if not verdicts["tlc"].ok or lse_err > 1e-3:
        result["tlc"] = {"error": verdicts["tlc"].why or f"WRONG: LSE off by {lse_err:.3g}"}
    else:
        t = ms["tlc"]
        result["tlc"] = {"ms": t, "rate": 2.0 * B * SQ * H * SK * (DK + DV) / t / 1e9,
                         "gbs": B * SK * DK * q.element_size() / t / 1e6, "lse_err": lse_err}
    del q, keys, cache, ref, o
    torch.cuda.empty_cache()
    return result


def cell(r, label):
    x = r[label]
    return f"{x['rate']:7.1f}" if "rate" in x else "  wrong"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="four rows, 100 ms each")
    ap.add_argument("--only", help="comma-separated row names")
    ap.add_argument("--json", help="also write the results here")
    args = ap.parse_args(argv)
    names = args.only.split(",") if args.only else list(QUICK if args.quick else {**ROWS, **MLA_ROWS})
    unknown = [n for n in names if n not in ROWS and n not in MLA_ROWS]
    if unknown:
        raise SystemExit(f"bench/attention.py: no row {', '.join(unknown)} (rows: {', '.join([*ROWS, *MLA_ROWS])})")
    import torch
    import torch.nn.functional as F

    mod = tlc.load("std.attention", target="cuda")
    results = []
    from tlc.benchmarks.ceilings import copy_bandwidth

    copy = copy_bandwidth(torch, 100.0)  # GB/s of a 1 GiB device copy, the decode rows' ceiling
    print(f"device copy: {copy:.0f} GB/s")
    print(f"{torch.cuda.get_device_name()}; TFLOP/s (decode rows: GB/s of K and V); ratio = tlc / vendor, same run")
    print(f"{'row':28} {'tlc':>7} {'cudnn':>7} {'flash2':>7} {'/cudnn':>7} {'/flash2':>7}")
    for name in names:
        t = time.time()
        measure = (backward_row if name.startswith("bwd") else sparse_row if name.startswith("sparse")
                   else tile_op_row if name.startswith("tileop") else mla_row if name.startswith("mla")
                   else row)
        r = measure(torch, F, mod, name, {**ROWS, **MLA_ROWS}[name], 100.0 if args.quick else 300.0)
        if name.startswith("mla"):
            x = r["tlc"]
            print(f"{name:28} " + (f"{x['rate']:7.1f} TFLOP/s = {x['rate'] / DENSE_BF16_PEAK:.2f} of peak, {x['gbs']:6.0f} GB/s "
                                  f"of cache = {x['gbs'] / copy:.2f} of copy (goal 0.85 of copy where memory-bound, "
                                  f"0.6 of peak where compute-bound)   ({time.time() - t:.0f} s)" if "rate" in x else f"wrong: {x['error']}"),
                  flush=True)
            results.append(r)
            continue
        if "speedup" in r or name.startswith("sparse"):
            print(f"{name:28} density {r['tlc'].get('density', 0):.3f}: {r['tlc'].get('ms', 0) * 1e3:.0f} us, dense "
                  f"{r['dense'].get('ms', 0) * 1e3:.0f} us: {r.get('speedup', 0):.2f}x faster (goal 6x at 10%)"
                  + "".join(f"\n    {x}: {r[x]['error']}" for x in ("tlc", "dense") if "error" in r[x]), flush=True)
            results.append(r)
            continue
        if name.startswith("tileop"):
            t, f = r["tlc"], r["flash_fwd"]
            print(f"{name:28} tile op {cell(r, 'tlc')} TFLOP/s, flash_fwd {cell(r, 'flash_fwd')}: "
                  + (f"{t['rate'] / f['rate']:.2f} of flash_fwd (goal: within 1.1x, 0.91)" if "rate" in t and "rate" in f
                     else "")
                  + "".join(f"\n    {x}: {r[x]['error']}" for x in ("tlc", "flash_fwd") if "error" in r[x]), flush=True)
            results.append(r)
            continue
        results.append(r)
        ratios = [f"{r['tlc']['rate'] / r[v]['rate']:7.2f}" if "rate" in r["tlc"] and "rate" in r[v]
                  else "      -" for v in ("cudnn", "flash2")]
        of_copy = f"  {r['tlc']['rate'] / copy:.2f} of copy" if r["unit"] == "GB/s" and "rate" in r["tlc"] else ""
        print(f"{name:28} {cell(r, 'tlc')} {cell(r, 'cudnn')} {cell(r, 'flash2')} {' '.join(ratios)}{of_copy}"
              f"   ({time.time() - t:.0f} s)", flush=True)
        r["copy_gbs"] = copy
        for label in ("tlc", "cudnn", "flash2"):
            if "error" in r[label]:
                print(f"    {label}: {r[label]['error']}")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))
    return results


if __name__ == "__main__":
    main()
