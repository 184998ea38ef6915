"""TileLang's examples ported statement for statement (README.md beside this file), each run
three ways from one table: on the NumPy reference interpreter against NumPy (the CPU suite),
generated for sm_80 and sm_90a and compiled with nvcc (marked `nvcc`), and on the GPU
against NumPy (marked `gpu`).

A row whose port does not work yet is in BLOCKED, naming the feature it waits for and today's
exact diagnostic, which test_a_blocked_port_is_refused_with_its_diagnostic checks: the day the
feature lands that test fails until the row leaves BLOCKED, so a landed feature is noticed and
the table in README.md stays true.

Inputs are seeded random normals; outputs that the kernel fully writes start as NaN, so an
element it misses shows; outputs it accumulates into (atomics) start at zero.  Errors are
relative, ||out - ref|| / ||ref||."""
from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np
import pytest

import tlc
from refs import (BF16, F8E4M3, attention, attention_backward, bshd, causal_mask, conv2d_nhwc, f64,
                  linear_attention, per_token_cast_to_fp8, retention, softmax, unpack_int4)

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "codegen"))
from nvcc import compile_device  # noqa: E402  (tests/codegen/nvcc.py: nvcc -Werror, cached)

F8E5M2 = np.dtype(__import__("ml_dtypes").float8_e5m2)


@dataclass(frozen=True)
class Port:
    id: str
    file: str  # in this folder
    kernel: str
    make: Callable  # rng -> the call's arrays and scalars by name, in the kernel's order
    ref: Callable  # those arguments -> the expected outputs by name
    tol: float  # on each output's relative error
    consts: dict = field(default_factory=dict)  # keyword constants of the call
    blocked: str | dict | None = None  # why it fails today: every stage, or {stage: reason}
    slow: bool = False

    def reason(self, stage: str) -> str | None:
        if isinstance(self.blocked, dict):
            return self.blocked.get(stage)
        return self.blocked


# --- inputs ------------------------------------------------------------------------------------

def randn(rng, shape, dtype=np.float16, scale=1.0):
    return (rng.standard_normal(shape) * scale).astype(np.float32).astype(dtype)


def nan(shape, dtype):
    return np.full(shape, np.nan, np.float32).astype(dtype)


def zeros(shape, dtype):
    return np.zeros(shape, dtype)


def outputs(args: dict, names) -> dict:
    return {k: args[k] for k in names}


# --- the table -----------------------------------------------------------------------------------
# One row per kernel and configuration.  Shapes are small (the interpreter is NumPy) and ragged
# wherever the original handles a ragged edge; where the original asserts a multiple, so do the
# rows.

def gemm_args(M, N, K, dtype=np.float16, b_nk=False, out=np.float16, c=nan):
    def make(rng):
        a = randn(rng, (M, K), dtype)
        b = randn(rng, (N, K) if b_nk else (K, N), dtype)
        return {"A": a, "B": b, "C": c((M, N), out)}
    return make


def mm(a, b):
    return f64(a) @ f64(b)


ATTENTION_BHSD = dict(batch=1, heads=2, seq_q=70, seq_kv=100, dim=64)


def mha_bhsd(causal, batch, heads, seq_q, seq_kv, dim):
    def make(rng):
        q = randn(rng, (batch, heads, seq_q, dim))
        k = randn(rng, (batch, heads, seq_kv, dim))
        v = randn(rng, (batch, heads, seq_kv, dim))
        return {"Q": q, "K": k, "V": v, "Output": nan(q.shape, np.float16)}

    def ref(a):
        mask = causal_mask(seq_q, seq_kv) if causal else None
        return {"Output": attention(a["Q"], a["K"], a["V"], mask)}
    return make, ref


def mha_bshd(causal, batch, seq, heads, dim, groups=1):
    def make(rng):
        q = randn(rng, (batch, seq, heads, dim))
        k = randn(rng, (batch, seq, heads // groups, dim))
        v = randn(rng, (batch, seq, heads // groups, dim))
        return {"Q": q, "K": k, "V": v, "Output": nan(q.shape, np.float16)}

    def ref(a):
        k, v = (np.repeat(bshd(a[x]), groups, axis=1) for x in ("K", "V"))
        return {"Output": bshd(attention(bshd(a["Q"]), k, v, causal_mask(seq, seq) if causal else None))}
    return make, ref


def bwd_inputs(causal, batch=1, heads=2, seq=128, dim=64):
    """The forward's outputs (from NumPy) feed the backward kernels, as in the original's autograd."""
    def inputs(rng):
        q, k, v, do = (randn(rng, (batch, heads, seq, dim)) for _ in range(4))
        dq, dk, dv, o, lse2 = attention_backward(q, k, v, do, causal)
        return q, k, v, do, dq, dk, dv, o, lse2
    return inputs


def flash_fwd(causal):
    inputs = bwd_inputs(causal)

    def make(rng):
        q, k, v, *_ = inputs(rng)
        return {"Q": q, "K": k, "V": v, "Output": nan(q.shape, np.float16), "lse": nan(q.shape[:3], np.float32)}

    def ref(a):
        *_, o, lse2 = attention_backward(a["Q"], a["K"], a["V"], a["Q"], causal)
        return {"Output": o, "lse": lse2}
    return make, ref


def flash_bwd(causal):
    inputs = bwd_inputs(causal)

    def make(rng):
        q, k, v, do, dq, dk, dv, o, lse2 = inputs(rng)
        delta = (f64(o.astype(np.float16)) * f64(do)).sum(-1).astype(np.float32)
        return {"Q": q, "K": k, "V": v, "dO": do, "lse": lse2.astype(np.float32), "Delta": delta,
                "dQ": zeros(q.shape, np.float32), "dK": nan(q.shape, np.float16), "dV": nan(q.shape, np.float16)}

    def ref(a):
        dq, dk, dv, *_ = attention_backward(a["Q"], a["K"], a["V"], a["dO"], causal)
        return {"dQ": dq, "dK": dk, "dV": dv}
    return make, ref


def bwd_preprocess(rng):
    o, do = randn(rng, (1, 2, 100, 64)), randn(rng, (1, 2, 100, 64))
    return {"O": o, "dO": do, "Delta": nan((1, 2, 100), np.float32)}


def bwd_postprocess(rng):
    return {"dQ": randn(rng, (1, 2, 100, 64), np.float32), "dQ_out": nan((1, 2, 100, 64), np.float16)}


def mha_inference(rng, batch=1, seq_q=70, seq_kv=512, heads=2, dim=64):
    q = randn(rng, (batch, seq_q, heads, dim))
    k, v = randn(rng, (batch, seq_kv, heads, dim)), randn(rng, (batch, seq_kv, heads, dim))
    return {"Q": q, "K": k, "V": v, "Output": nan(q.shape, np.float16)}


def gqa_decode(batch=1, heads=8, groups=2, seqlen_kv=128, dim=64):
    def make(rng):
        mask = (rng.random((batch, seqlen_kv, groups)) < 0.7).astype(np.uint8)
        mask[:, ::16] = 1  # every block of keys keeps one
        return {"Q": randn(rng, (batch, heads, dim)), "K": randn(rng, (batch, seqlen_kv, groups, dim)),
                "V": randn(rng, (batch, seqlen_kv, groups, dim)), "mask": mask,
                "Output": nan((batch, heads, dim), np.float16)}

    def ref(a):
        g = heads // groups
        k = np.repeat(np.moveaxis(a["K"], 2, 1), g, axis=1)  # (batch, heads, seq, dim)
        v = np.repeat(np.moveaxis(a["V"], 2, 1), g, axis=1)
        keep = np.repeat(np.moveaxis(a["mask"], 2, 1), g, axis=1)[:, :, None, :] != 0
        return {"Output": attention(a["Q"][:, :, None, :], k, v, keep)[:, :, 0, :]}
    return make, ref


def mla(batch=1, heads=16, seqlen_kv=128, dim=64, pe_dim=32):
    def make(rng):
        return {"Q": randn(rng, (batch, heads, dim)), "Q_pe": randn(rng, (batch, heads, pe_dim)),
                "KV": randn(rng, (batch, seqlen_kv, 1, dim)), "K_pe": randn(rng, (batch, seqlen_kv, 1, pe_dim)),
                "Output": nan((batch, heads, dim), np.float16)}

    def ref(a):
        q = np.concatenate([f64(a["Q"]), f64(a["Q_pe"])], -1)  # (b, h, d + pe)
        key = np.concatenate([f64(a["KV"]), f64(a["K_pe"])], -1)[:, :, 0, :]  # (b, s, d + pe)
        s = q @ np.swapaxes(key, -1, -2) * (dim + pe_dim) ** -0.5
        return {"Output": softmax(s) @ f64(a["KV"][:, :, 0, :])}
    return make, ref


MLA_SCALE = (64 + 32) ** -0.5


def topk(rng, M=48, N=64, k=4):
    return {"logits": randn(rng, (M, N), np.float32), "topk_gates": nan((M, k), np.float32),
            "topk_indices": np.full((M, k), -7, np.int32)}


def topk_ref(a):
    k = a["topk_gates"].shape[1]
    order = np.argsort(-a["logits"], axis=1, kind="stable")[:, :k]
    return {"topk_gates": np.take_along_axis(a["logits"], order, 1), "topk_indices": order}


def cumsum(rng, B=2, S=150, H=3):
    return {"G": randn(rng, (B, S, H)), "G_new": nan((B, S, H), np.float32)}


def cumsum_ref(reverse, chunk=64):
    def ref(a):
        g = f64(a["G"])
        out = np.empty_like(g)
        for s0 in range(0, g.shape[1], chunk):
            part = g[:, s0:s0 + chunk]
            out[:, s0:s0 + chunk] = np.flip(np.cumsum(np.flip(part, 1), 1), 1) if reverse else np.cumsum(part, 1)
        return {"G_new": out}
    return ref


def packed_int4(rng, n, k):
    return rng.integers(0, 256, (n, k // 2), dtype=np.uint8)


def w4a8(rng, M=40, N=50, K=256):
    return {"A": rng.integers(-128, 128, (M, K), dtype=np.int8), "B": packed_int4(rng, N, K),
            "Ct": np.full((N, M), -7, np.int32)}


def gemv(rng, N=256, K=256):
    return {"A": randn(rng, K), "B": randn(rng, (N, K)), "C": nan(N, np.float16)}


def blocksparse(rng, M=256, N=256, K=96, bm=128, bn=128, bk=32):
    mask = rng.random((M // bm, N // bn, K // bk)) < 0.6
    mask[0, 0, :] = False  # a tile with no block: all zero
    return {"A": randn(rng, (M, K)), "B": randn(rng, (K, N)), "BlockMask": mask, "C": nan((M, N), np.float16)}


def blocksparse_ref(bm=128, bn=128, bk=32):
    def ref(a):
        c = np.zeros(a["C"].shape)
        m, _, k = a["BlockMask"].shape
        for i, j, kk in zip(*np.nonzero(a["BlockMask"])):
            c[i * bm:(i + 1) * bm, j * bn:(j + 1) * bn] += mm(a["A"][i * bm:(i + 1) * bm, kk * bk:(kk + 1) * bk],
                                                              a["B"][kk * bk:(kk + 1) * bk, j * bn:(j + 1) * bn])
        return {"C": c}
    return ref


def grouped(rng, sizes=(30, 70), K=64, N=100, block_M=64):
    offsets = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int32)
    padded = np.concatenate([[0], np.cumsum([-(-s // block_M) * block_M for s in sizes])[:-1]]).astype(np.int32)
    return {"A": randn(rng, (sum(sizes), K)), "B": randn(rng, (len(sizes), K, N)), "C": nan((sum(sizes), N), np.float16),
            "batch_sizes": np.array(sizes, np.int32), "batch_offsets": offsets, "batch_padded_offsets": padded}


def grouped_ref(a):
    c, start = [], 0
    for g, s in enumerate(a["batch_sizes"]):
        c.append(mm(a["A"][start:start + s], a["B"][g]))
        start += s
    return {"C": np.concatenate(c)}


def chunked(kind, B=1, S=128, H=2, D=64):
    def make(rng):
        q, k, v = (randn(rng, (B, S, H, D), scale=0.5) for _ in range(3))
        if kind == "retention":
            return {"Q": q, "K": k, "V": v, "O": nan((1, B, S, H, D), np.float16)}
        return {"Q": q, "K": k, "V": v, "O": zeros((B, S, H, D), np.float32),
                "final_state": nan((B, H, D, D), np.float32)}

    def ref(a):
        if kind == "retention":
            return {"O": retention(a["Q"], a["K"], a["V"], D ** -0.5)[None]}
        o, h = linear_attention(a["Q"], a["K"], a["V"], D ** -0.5)
        return {"O": o, "final_state": h}
    return make, ref


def deepgemm(rng, M=64, N=128, K=256):
    a, b = randn(rng, (M, K), np.float32), randn(rng, (N, K), np.float32)
    qa, sa = per_token_cast_to_fp8(a)
    sb = np.abs(b).reshape(N // 128, 128, K // 128, 128).max(axis=(1, 3)) / 448.0
    qb = (b / np.repeat(np.repeat(sb, 128, 0), 128, 1)).astype(F8E4M3)
    return {"A": qa, "B": qb, "scales_a": sa, "scales_b": sb.astype(np.float32), "C": nan((M, N), BF16)}


def deepgemm_ref(a):
    M, K = a["A"].shape
    N = a["B"].shape[0]
    c = np.zeros((M, N))
    for k in range(K // 128):
        part = mm(a["A"][:, k * 128:(k + 1) * 128], a["B"][:, k * 128:(k + 1) * 128].T)
        c += part * f64(a["scales_a"][:, k])[:, None] * np.repeat(f64(a["scales_b"][:, k]), 128)[None, :N]
    return {"C": c}


def block_sparse_attn(rng, batch=1, heads=2, seq=128, dim=64, down=2):
    mask = rng.random((batch, heads, down, down)) < 0.5
    mask |= np.eye(down, dtype=bool)
    mask = np.tril(mask)
    q, k, v = (randn(rng, (batch, heads, seq, dim)) for _ in range(3))
    return {"Q": q, "K": k, "V": v, "BlockSparseMask": mask, "Output": nan(q.shape, np.float16)}


def block_sparse_attn_ref(a, block=64):
    mask = np.repeat(np.repeat(a["BlockSparseMask"], block, 2), block, 3)
    seq = a["Q"].shape[2]
    return {"Output": attention(a["Q"], a["K"], a["V"], mask[:, :, :seq, :seq] & causal_mask(seq, seq))}


def conv(rng, N=2, H=9, W=7, C=16, F=40, K=3):
    return {"data": randn(rng, (N, H, W, C)), "kernel": randn(rng, (K, K, C, F)), "out": nan((N, H, W, F), np.float16)}


def streamk(rng, M=256, N=1024, K=512):
    a = (rng.random((M, K)) * 2 - 1).astype(np.float16)
    b = (rng.random((N, K)) * 2 - 1).astype(np.float16)
    return {"A": a, "B": b, "C": zeros((M, N), np.float32)}


def group_cast(rng, sizes=(10, 21), N=300, M_max=24):
    x = randn(rng, (sum(sizes), N), BF16)
    groups = -(-N // 128)
    return {"X": x, "batch_sizes": np.array(sizes, np.int32),
            "X_fp8": np.full((len(sizes), M_max, N), 1.0, F8E4M3),
            "X_amax": nan((len(sizes), M_max, groups), np.float32)}


def group_cast_ref(a):
    sizes, (_, m_max, n) = a["batch_sizes"], a["X_fp8"].shape
    q = np.zeros(a["X_fp8"].shape, np.float32)
    s = np.zeros(a["X_amax"].shape, np.float32)
    start = 0
    for g, size in enumerate(sizes):
        qg, sg = per_token_cast_to_fp8(a["X"][start:start + size].astype(np.float32))
        q[g, :size], s[g, :size] = qg.astype(np.float32), sg
        start += size
    return {"X_fp8": q, "X_amax": s}


def layernorm_bwd(rng, N=64, D=200):
    x, dy, g = randn(rng, (N, D), BF16), randn(rng, (N, D), BF16), randn(rng, D, BF16)
    xf = f64(x)
    mean = xf.mean(1)
    rstd = 1 / np.sqrt(xf.var(1) + 1e-5)
    return {"DY": dy, "X": x, "gamma": g, "Mean": mean.astype(np.float32), "Rstd": rstd.astype(np.float32),
            "DX": nan((N, D), BF16), "DGamma": zeros(D, np.float32), "DBeta": zeros(D, np.float32)}


def layernorm_bwd_ref(a):
    x_hat = (f64(a["X"]) - f64(a["Mean"])[:, None]) * f64(a["Rstd"])[:, None]
    dy = f64(a["DY"])
    dx_hat = dy * f64(a["gamma"])
    dx = f64(a["Rstd"])[:, None] * (dx_hat - dx_hat.mean(1, keepdims=True) - x_hat * (dx_hat * x_hat).mean(1, keepdims=True))
    return {"DX": dx, "DGamma": (dy * x_hat).sum(0), "DBeta": dy.sum(0)}


def layernorm_fwd(rng, N=7, D=200):
    return {"X": randn(rng, (N, D), BF16), "gamma": randn(rng, D, BF16), "beta": randn(rng, D, BF16),
            "Y": nan((N, D), BF16), "Mean": nan(N, np.float32), "Rstd": nan(N, np.float32)}


def layernorm_fwd_ref(a):
    x = f64(a["X"])
    mean, rstd = x.mean(1), 1 / np.sqrt(x.var(1) + 1e-5)
    return {"Y": (x - mean[:, None]) * rstd[:, None] * f64(a["gamma"]) + f64(a["beta"]), "Mean": mean, "Rstd": rstd}


def rms_ref(a):
    x = f64(a["A"])
    return {"B": x / np.sqrt((x * x).mean(1, keepdims=True) + 1e-12)}


def per_token_cast(rng, M=20, N=300):
    return {"X": randn(rng, (M, N), np.float32), "X_fp8": np.full((M, N), 1.0, F8E4M3),
            "X_amax": nan((M, -(-N // 128)), np.float32)}


def per_token_cast_ref(a):
    q, s = per_token_cast_to_fp8(a["X"])
    return {"X_fp8": q.astype(np.float32), "X_amax": s}


def fp8_gemm(dtype, out, K=150):
    def make(rng):  # K = 150: three iterations of 64, so 2xAcc has a tail
        a, b = randn(rng, (130, K), np.float32), randn(rng, (70, K), np.float32)
        return {"A": a.astype(dtype), "B": b.astype(dtype), "C": nan((130, 70), out)}
    return make


def mamba_state(rng, batch=1, seqlen=128, chunk=64, ngroups=1, nheads=2, headdim=64, dstate=64):
    nchunks = -(-seqlen // chunk)
    da = np.cumsum(-np.abs(rng.standard_normal((batch, nheads, nchunks, chunk))) * 0.05, axis=-1)
    return {"B": randn(rng, (batch, seqlen, ngroups, dstate)), "x": randn(rng, (batch, seqlen, nheads, headdim)),
            "dt": (rng.random((batch, nheads, nchunks, chunk)) * 0.5).astype(np.float16), "dA_cumsum": da.astype(np.float16),
            "Output": nan((batch, nchunks, nheads, headdim, dstate), np.float16)}


def mamba_state_ref(a):
    batch, nheads, nchunks, chunk = a["dt"].shape
    seqlen, ngroups = a["x"].shape[1], a["B"].shape[2]
    pad = nchunks * chunk - seqlen
    x = np.pad(f64(a["x"]), ((0, 0), (0, pad), (0, 0), (0, 0))).reshape(batch, nchunks, chunk, nheads, -1)
    b = np.repeat(f64(a["B"]), nheads // ngroups, axis=2)
    b = np.pad(b, ((0, 0), (0, pad), (0, 0), (0, 0))).reshape(batch, nchunks, chunk, nheads, -1)
    da = f64(a["dA_cumsum"])
    decay = np.exp(da[..., -1:] - da)  # (b, h, c, l)
    return {"Output": np.einsum("bclhn,bhcl,bhcl,bclhp->bchpn", b, decay, f64(a["dt"]), x)}


def sink_attention(window, batch=1, heads=2, seq_q=100, seq_kv=130, dim=64):
    def make(rng):
        q = randn(rng, (batch, heads, seq_q, dim))
        return {"Q": q, "K": randn(rng, (batch, heads, seq_kv, dim)), "V": randn(rng, (batch, heads, seq_kv, dim)),
                "Output": nan(q.shape, np.float16), "Sinks": randn(rng, heads)}

    def ref(a):
        s = f64(a["Q"]) @ np.swapaxes(f64(a["K"]), -1, -2) / np.sqrt(dim)
        q_idx = np.arange(seq_q)[:, None] + seq_kv - seq_q
        k_idx = np.arange(seq_kv)[None, :]
        keep = (q_idx >= k_idx) & ((q_idx < k_idx + window) if window else True)
        s = np.where(keep, s, -np.inf)
        sink = f64(a["Sinks"])[None, :, None, None] * np.ones((batch, heads, seq_q, 1))
        p = softmax(np.concatenate([s, sink], -1))[..., :seq_kv]
        return {"Output": p @ f64(a["V"])}
    return make, ref


def nsa(rng, B=2, seq=64, H=1, HQ=16, D=32, S=1, block=32):
    """main()'s problem: each query picks S of the key blocks before it (block 0 at the start)."""
    idx = np.full((B, seq, H, S), seq, np.int32)
    for b in range(B):
        for t in range(seq):
            for h in range(H):
                pick = rng.permutation(max(1, t // block))[:S]
                idx[b, t, h, :len(pick)] = pick
    idx.sort(-1)
    return {"Q": randn(rng, (B, seq, HQ, D)), "K": randn(rng, (B, seq, H, D)), "V": randn(rng, (B, seq, H, D)),
            "BlockIndices": idx, "Output": nan((B, seq, HQ, D), np.float16)}


def nsa_ref(a, scale=0.1, block=32):
    q, k, v, idx = f64(a["Q"]), f64(a["K"]), f64(a["V"]), a["BlockIndices"]
    B, seq, HQ, _ = q.shape
    G = HQ // k.shape[2]
    out = np.zeros(q.shape)
    for b in range(B):
        for t in range(seq):
            for h in range(HQ):
                keys = sorted({s * block + j for s in idx[b, t, h // G] if s * block <= t for j in range(block)
                               if s * block + j <= t})
                w = softmax(q[b, t, h] @ k[b, keys, h // G].T * scale)
                out[b, t, h] = w @ v[b, keys, h // G]
    return {"Output": out}


MHA_FWD_CAUSAL, MHA_FWD_CAUSAL_REF = mha_bhsd(True, **ATTENTION_BHSD)
MHA_FWD, MHA_FWD_REF = mha_bhsd(False, **ATTENTION_BHSD)
BSHD, BSHD_REF = mha_bshd(False, 1, 100, 2, 64)
BSHD_CAUSAL, BSHD_CAUSAL_REF = mha_bshd(True, 1, 100, 2, 64)
GQA, GQA_REF = mha_bshd(False, 1, 100, 4, 64, groups=2)
GQA_CAUSAL, GQA_CAUSAL_REF = mha_bshd(True, 1, 100, 4, 64, groups=2)
FWD, FWD_REF = flash_fwd(False)
FWD_CAUSAL, FWD_CAUSAL_REF = flash_fwd(True)
BWD, BWD_REF = flash_bwd(False)
BWD_CAUSAL, BWD_CAUSAL_REF = flash_bwd(True)
DECODE, DECODE_REF = gqa_decode()
MLA, MLA_REF = mla()
RET, RET_REF = chunked("retention")
LIN, LIN_REF = chunked("linear")
SINK, SINK_REF = sink_attention(0)
SINK_WINDOW, SINK_WINDOW_REF = sink_attention(64)

PORTS = [
    Port("elementwise_add", "elementwise_add.tl", "elementwise_add",
         lambda r: {"A": randn(r, (100, 70), np.float32), "B": randn(r, (100, 70), np.float32),
                    "C": nan((100, 70), np.float32)},
         lambda a: {"C": f64(a["A"]) + f64(a["B"])}, 1e-7),
    Port("elementwise_add_f16", "elementwise_add.tl", "elementwise_add",
         lambda r: {"A": randn(r, (100, 70)), "B": randn(r, (100, 70)), "C": nan((100, 70), np.float16)},
         lambda a: {"C": f64(a["A"]) + f64(a["B"])}, 2e-3, consts={"block_M": 64, "block_N": 64}),
    Port("gemm", "gemm.tl", "matmul", gemm_args(130, 200, 70), lambda a: {"C": mm(a["A"], a["B"])}, 2e-3),
    Port("gemm_bf16_64x64", "gemm.tl", "matmul", gemm_args(130, 200, 70, BF16, out=BF16),
         lambda a: {"C": mm(a["A"], a["B"])}, 1e-2, consts={"block_M": 64, "block_N": 64}),
    Port("quickstart_gemm_relu", "quickstart_gemm_relu.tl", "matmul", gemm_args(130, 200, 70),
         lambda a: {"C": np.maximum(mm(a["A"], a["B"]), 0)}, 2e-3),
    Port("gemm_splitk", "gemm_splitk.tl", "matmul", gemm_args(130, 100, 256, out=np.float32, c=zeros),
         lambda a: {"C": mm(a["A"], a["B"])}, 1e-5),
    Port("gemm_splitk_vectorize_atomicadd", "gemm_splitk_vectorize_atomicadd.tl", "matmul",
         gemm_args(130, 100, 256, out=np.float32, c=zeros), lambda a: {"C": mm(a["A"], a["B"])}, 1e-5),
    Port("gemm_fp8_e4m3", "gemm_fp8.tl", "matmul", fp8_gemm(F8E4M3, F8E4M3),
         lambda a: {"C": mm(a["A"], a["B"].T)}, 4e-2),
    Port("gemm_fp8_e5m2", "gemm_fp8.tl", "matmul", fp8_gemm(F8E5M2, F8E5M2),
         lambda a: {"C": mm(a["A"], a["B"].T)}, 8e-2),
    # 5e-4: the interpreter is exact (1e-7), but the tensor cores add fp8 products with about 14
    # bits of mantissa between promotions (every 128 of K, as the port asks), and the H200 gave 1.2e-4
    Port("gemm_fp8_2xacc", "gemm_fp8_2xacc.tl", "matmul", fp8_gemm(F8E4M3, np.float32),
         lambda a: {"C": mm(a["A"], a["B"].T)}, 5e-4),
    Port("gemm_persistent_non_persistent", "gemm_persistent.tl", "matmul_non_persistent",
         gemm_args(130, 300, 70), lambda a: {"C": mm(a["A"], a["B"])}, 2e-3),
    # The waves written by hand group 8 columns of tiles without TileLang's clamp to the column
    # count, so they reach every tile only when that count is a multiple of 8 (in TileLang too):
    # 8 columns of 32, the last ragged.
    Port("gemm_persistent_waves", "gemm_persistent.tl", "matmul_persistent", gemm_args(130, 250, 70),
         lambda a: {"C": mm(a["A"], a["B"])}, 2e-3,
         consts={"use_persistent_primitive": False, "sm_num": 4, "block_M": 64, "block_N": 32}),
    Port("gemm_persistent_primitive", "gemm_persistent.tl", "matmul_persistent", gemm_args(300, 600, 70),
         lambda a: {"C": mm(a["A"], a["B"])}, 2e-3, consts={"sm_num": 4}),
    Port("gemm_persistent_primitive_64x32", "gemm_persistent.tl", "matmul_persistent", gemm_args(130, 250, 70),
         lambda a: {"C": mm(a["A"], a["B"])}, 2e-3, consts={"sm_num": 5, "block_M": 64, "block_N": 32}),
    Port("gemm_streamk", "gemm_streamk.tl", "tl_matmul_streamk", streamk,
         lambda a: {"C": mm(a["A"], a["B"].T)}, 1e-5),
    Port("blocksparse_gemm", "blocksparse_gemm.tl", "blocksparse_matmul", blocksparse, blocksparse_ref(), 2e-3),
    Port("grouped_gemm_fwd", "grouped_gemm_fwd.tl", "grouped_gemm", grouped, grouped_ref, 2e-3,
         consts={"total_m_blocks": 3}),
    Port("deepgemm_fp8_2xacc", "deepgemm_fp8_2xacc.tl", "tl_gemm", deepgemm, deepgemm_ref, 1e-2),
    Port("gemv_naive", "gemv.tl", "naive_gemv", gemv, lambda a: {"C": mm(a["B"], a["A"])}, 2e-3),
    Port("gemv_naive_splitk", "gemv.tl", "naive_splitk_gemv", gemv, lambda a: {"C": mm(a["B"], a["A"])}, 2e-3),
    Port("gemv_splitk", "gemv.tl", "splitk_gemv", gemv, lambda a: {"C": mm(a["B"], a["A"])}, 2e-3),
    Port("gemv_splitk_vectorized", "gemv.tl", "splitk_gemv_vectorized", gemv,
         lambda a: {"C": mm(a["B"], a["A"])}, 2e-3),
    Port("dequant_w4a8_convert", "dequant_gemm_w4a8.tl", "_convert_test",
         lambda r: {"B": packed_int4(r, 200, 256), "C": np.full((200, 256), 99, np.int8)},
         lambda a: {"C": unpack_int4(a["B"])}, 0.0),
    Port("dequant_w4a8_gemm", "dequant_gemm_w4a8.tl", "matmul_int8xint4", w4a8,
         lambda a: {"Ct": (unpack_int4(a["B"]).astype(np.int64) @ a["A"].astype(np.int64).T)}, 0.0),
    Port("rms_norm_splitk", "rms_norm_splitk.tl", "rms_norm_splitk",
         lambda r: {"A": randn(r, (37, 1000), np.float32), "B": nan((37, 1000), np.float32)}, rms_ref, 1e-6),
    Port("rms_norm", "rms_norm.tl", "rms_norm",
         lambda r: {"A": randn(r, (5, 300), np.float32), "B": nan((5, 300), np.float32)}, rms_ref, 1e-6),
    Port("layernorm_fwd", "layernorm_fwd.tl", "layernorm_fwd", layernorm_fwd, layernorm_fwd_ref, 1e-2),
    Port("layernorm_bwd", "layernorm_bwd.tl", "layernorm_bwd", layernorm_bwd, layernorm_bwd_ref, 1e-2),
    Port("online_softmax", "online_softmax.tl", "softmax_kernel",
         lambda r: {"X": randn(r, (5, 128)), "Y": nan((5, 128), np.float16)},
         lambda a: {"Y": softmax(f64(a["X"]))}, 2e-3, consts={"BLOCK_N": 64}),
    Port("per_token_cast_to_fp8", "per_token_cast_to_fp8.tl", "per_token_cast_to_fp8", per_token_cast,
         per_token_cast_ref, 1e-6),
    Port("group_per_split_token_cast_to_fp8", "group_per_split_token_cast_to_fp8.tl",
         "group_per_split_token_cast_to_fp8", group_cast, group_cast_ref, 1e-6),
    Port("topk", "topk.tl", "tl_topk", topk, topk_ref, 0.0, consts={"blk_m": 16}),
    Port("chunk_local_cumsum", "chunk_local_cumsum.tl", "chunk_local_cumsum", cumsum, cumsum_ref(False), 1e-6),
    Port("chunk_local_cumsum_reverse_fragment", "chunk_local_cumsum.tl", "chunk_local_cumsum", cumsum,
         cumsum_ref(True), 1e-6, consts={"reverse": True, "use_fragment": True}),
    Port("mha_fwd_bhsd", "mha_fwd_bhsd.tl", "flashattn", MHA_FWD, MHA_FWD_REF, 1e-2),
    Port("mha_fwd_bhsd_causal", "mha_fwd_bhsd.tl", "flashattn", MHA_FWD_CAUSAL, MHA_FWD_CAUSAL_REF, 1e-2,
         consts={"is_causal": True}),
    Port("mha_fwd_bshd", "mha_fwd_bshd.tl", "flashattn", BSHD, BSHD_REF, 1e-2),
    Port("mha_fwd_bshd_causal", "mha_fwd_bshd.tl", "flashattn", BSHD_CAUSAL, BSHD_CAUSAL_REF, 1e-2,
         consts={"is_causal": True}),
    Port("gqa_fwd_bshd", "gqa_fwd_bshd.tl", "flashattn", GQA, GQA_REF, 1e-2, consts={"groups": 2}),
    Port("gqa_fwd_bshd_causal", "gqa_fwd_bshd.tl", "flashattn", GQA_CAUSAL, GQA_CAUSAL_REF, 1e-2,
         consts={"groups": 2, "is_causal": True}),
    Port("mha_bwd_fwd", "mha_bwd_bhsd.tl", "flashattn_fwd", FWD, FWD_REF, 1e-2),
    Port("mha_bwd_fwd_causal", "mha_bwd_bhsd.tl", "flashattn_fwd", FWD_CAUSAL, FWD_CAUSAL_REF, 1e-2,
         consts={"is_causal": True}),
    Port("mha_bwd_preprocess", "mha_bwd_bhsd.tl", "flashattn_bwd_preprocess", bwd_preprocess,
         lambda a: {"Delta": (f64(a["O"]) * f64(a["dO"])).sum(-1)}, 1e-3),  # o * do is an f16 product, as in TileLang
    Port("mha_bwd_postprocess", "mha_bwd_bhsd.tl", "flashattn_bwd_postprocess", bwd_postprocess,
         lambda a: {"dQ_out": f64(a["dQ"])}, 1e-3),
    Port("mha_bwd", "mha_bwd_bhsd.tl", "flashattn_bwd", BWD, BWD_REF, 2e-2),
    Port("mha_bwd_causal", "mha_bwd_bhsd.tl", "flashattn_bwd", BWD_CAUSAL, BWD_CAUSAL_REF, 2e-2,
         consts={"is_causal": True}),
    Port("block_sparse_attn", "block_sparse_attn.tl", "blocksparse_flashattn", block_sparse_attn,
         block_sparse_attn_ref, 1e-2),
    Port("mha_inference", "mha_inference.tl", "flashattn_mha_inference", mha_inference,
         lambda a: {"Output": bshd(attention(bshd(a["Q"]), bshd(a["K"]), bshd(a["V"])))}, 1e-2),
    Port("gqa_decode_split", "gqa_decode.tl", "flashattn_gqa_decode_split", DECODE, DECODE_REF, 1e-2,
         consts={"block_N": 64, "num_split": 2}),
    Port("gqa_decode_no_split", "gqa_decode.tl", "flashattn_gqa_decode_no_split", DECODE, DECODE_REF, 1e-2,
         consts={"block_N": 64}),
    Port("mla_decode_split", "mla_decode.tl", "main_split", MLA, MLA_REF, 1e-2,
         consts={"softmax_scale": MLA_SCALE, "block_N": 32, "block_H": 16, "num_split": 2}),
    Port("mla_decode_no_split", "mla_decode.tl", "main_no_split", MLA, MLA_REF, 1e-2,
         consts={"softmax_scale": MLA_SCALE, "block_N": 32, "block_H": 16}),
    Port("retention_fwd", "retention_fwd.tl", "chunk_retention_fwd", RET, RET_REF, 2e-2),
    Port("linear_attn_fwd", "linear_attn_fwd.tl", "fused_chunk_linear_attn_fwd", LIN, LIN_REF, 1e-2),
    Port("gemm_autotune", "gemm_autotune.tl", "gemm_autotune", gemm_args(130, 200, 70, b_nk=True),
         lambda a: {"C": mm(a["A"], a["B"].T)}, 2e-3),
    Port("mamba_chunk_state", "mamba_chunk_state.tl", "chunk_state_fwd", mamba_state, mamba_state_ref, 1e-2),
    Port("mha_sink_fwd_bhsd", "mha_sink_fwd_bhsd.tl", "flashattn", SINK, SINK_REF, 1e-2),
    Port("mha_sink_fwd_bhsd_window", "mha_sink_fwd_bhsd.tl", "flashattn", SINK_WINDOW, SINK_WINDOW_REF, 1e-2,
         consts={"window_size": 64}),
    Port("nsa_fwd", "nsa_fwd.tl", "native_sparse_attention", nsa, nsa_ref, 1e-2,
         consts={"sm_scale": 0.1, "block_size": 32, "groups": 16, "selected_blocks": 1}),
    Port("convolution", "convolution.tl", "convolution", conv,
         lambda a: {"out": conv2d_nhwc(a["data"], a["kernel"], 1, 1, 1)}, 2e-3),
]


# --- running a row -----------------------------------------------------------------------------

_modules: dict = {}


def load(file: str, target: str):
    if (file, target) not in _modules:
        _modules[file, target] = tlc.load(str(HERE / file), target=target)
    return _modules[file, target]


def rel_err(out, ref) -> float:
    out, ref = f64(out), f64(ref)
    den = np.linalg.norm(ref)
    return float(np.linalg.norm(out - ref) / (den if den else 1.0))


def run_and_check(port: Port, target: str):
    args = port.make(np.random.default_rng(sum(map(ord, port.id))))
    before = {k: v.copy() for k, v in args.items() if isinstance(v, np.ndarray)}
    kernel = getattr(load(port.file, target), port.kernel)
    kernel(*args.values(), **port.consts)
    want = port.ref(before)
    for name, ref in want.items():
        got = args[name]
        assert not np.isnan(f64(got)).any(), f"{name}: {int(np.isnan(f64(got)).sum())} of {got.size} elements never written"
        err = rel_err(got, ref)
        assert err <= port.tol, f"{name}: relative error {err:.3g} > {port.tol:g}"
    for name, was in before.items():  # inputs are read, never written
        if name not in want:
            np.testing.assert_array_equal(args[name], was, err_msg=f"input {name} was written")


# What each failing row waits for: the feature, today's first diagnostic (`python
# tests/ports/status.py` prints it), and what the port meets after it, found by working around
# each in turn.  A reason applies to every stage unless given per stage as {stage: reason}.
def needs(feature: str, diagnostic: str, *then: str) -> str:
    return f"needs {feature}: {diagnostic}" + "".join(f"; then {t}" for t in then)


BLOCKED = {
}


# The builds of the default run (nvcc costs about 3 s of CPU a port and target, and the
# README's run must stay under 5 minutes on 2 cores): a gemm (mma.sync / wgmma), attention
# (a fragment A operand, the P cast between layouts), the int4 dequantize (bit casts) and top-k;
# every other row's build is in the slow run that CI also makes.
BUILT_BY_DEFAULT = {"gemm", "mha_fwd_bshd", "dequant_w4a8_gemm", "topk"}


def params(stage: str):
    """The rows that run at `stage`; a blocked row is tested by its diagnostic instead (below)."""
    def slow(p: Port) -> bool:
        return p.slow or (stage == "build" and p.id not in BUILT_BY_DEFAULT)
    return [pytest.param(p, id=p.id, marks=[pytest.mark.slow] if slow(p) else [])
            for p in PORTS if not (p.reason(stage) or p.id in BLOCKED)]


@pytest.mark.parametrize("port", [p for p in PORTS if p.id in BLOCKED], ids=lambda p: p.id)
def test_a_blocked_port_is_refused_with_its_diagnostic(port):
    """A port waiting for a feature is refused with exactly the diagnostic its row quotes: the
    day the feature lands (or the diagnostic changes) this fails, and the row is moved back."""
    quoted = BLOCKED[port.id].split(": ", 1)[1].split("; then ", 1)[0]  # "FILE:L:C: error[E...]: ..."
    file, place_and_message = quoted.split(":", 1)
    with pytest.raises(tlc.TlcError) as e:
        run_and_check(port, "cpu")
    assert f"{file}:{place_and_message}" in str(e.value).replace(str(HERE) + "/", "")


@pytest.mark.parametrize("port", params("cpu"))
def test_port_on_the_interpreter(port):
    run_and_check(port, "cpu")


@pytest.mark.nvcc
@pytest.mark.parametrize("arch", [pytest.param("sm_80", marks=pytest.mark.slow), "sm_90a"])  # sm_80 in CI's slow run
@pytest.mark.parametrize("port", params("build"))
def test_port_builds(port, arch, tmp_path):
    kernel = getattr(load(port.file, "cpu"), port.kernel)
    args = port.make(np.random.default_rng(0))
    _, constants = kernel.bind(tuple(args.values()), dict(port.consts))
    compile_device(kernel.cuda_source(arch, **constants), arch, tmp_path)


@pytest.mark.gpu
@pytest.mark.parametrize("port", params("gpu"))
def test_port_on_the_gpu(port):
    run_and_check(port, "cuda")


def test_every_port_file_has_a_row_and_names_its_source():
    files = {p.name for p in HERE.glob("*.tl")}
    assert files == {p.file for p in PORTS}
    for f in files:
        head = (HERE / f).read_text().split("\n\n", 1)[0]  # the header comment
        assert head.startswith("# Port of TileLang examples/") and "tile-ai/tilelang@" in head, f
