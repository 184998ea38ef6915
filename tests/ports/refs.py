"""NumPy references for the ports in this folder: what each TileLang example computes, from its
own reference (`ref_program`, the torch code in its `main`), in float64 unless a rounding
step of the original is part of the result (an f8 quantization, a group's scale)."""
from __future__ import annotations

import ml_dtypes
import numpy as np

F8E4M3 = np.dtype(ml_dtypes.float8_e4m3fn)
BF16 = np.dtype(ml_dtypes.bfloat16)


def f64(x):
    return np.asarray(x, np.float64)


def softmax(s, axis=-1):
    m = np.max(s, axis=axis, keepdims=True)
    e = np.exp(s - m)
    return e / np.sum(e, axis=axis, keepdims=True)


def attention(q, k, v, mask=None):
    """softmax(q k^T / sqrt(d)) v over the last two axes; `mask` True where a key counts."""
    s = f64(q) @ np.swapaxes(f64(k), -1, -2) / np.sqrt(q.shape[-1])
    if mask is not None:
        s = np.where(mask, s, -np.inf)
    return softmax(s) @ f64(v)


def causal_mask(seq_q, seq_kv):
    """Query i (of the last seq_q) sees keys up to i + seq_kv - seq_q."""
    return np.arange(seq_q)[:, None] + (seq_kv - seq_q) >= np.arange(seq_kv)[None, :]


def bshd(x):
    """(batch, seq, heads, dim) -> (batch, heads, seq, dim) and back (its own inverse)."""
    return np.swapaxes(x, 1, 2)


def attention_backward(q, k, v, do, causal):
    """(dq, dk, dv, o, lse2) of softmax attention in (batch, heads, seq, dim); lse2 is the
    log-sum-exp of the scaled scores in base 2, as flashattn_fwd stores it."""
    q, k, v, do = map(f64, (q, k, v, do))
    scale = 1 / np.sqrt(q.shape[-1])
    s = q @ np.swapaxes(k, -1, -2) * scale
    if causal:
        s = np.where(causal_mask(q.shape[-2], k.shape[-2]), s, -np.inf)
    m = s.max(-1, keepdims=True)
    lse = (m + np.log(np.exp(s - m).sum(-1, keepdims=True)))[..., 0]
    p = softmax(s)
    o = p @ v
    dv = np.swapaxes(p, -1, -2) @ do
    dp = do @ np.swapaxes(v, -1, -2)
    delta = (o * do).sum(-1, keepdims=True)
    ds = p * (dp - delta)
    dq = ds @ k * scale
    dk = np.swapaxes(ds, -1, -2) @ q * scale
    return dq, dk, dv, o, lse / np.log(2)


def per_token_cast_to_fp8(x, group_size=128):
    """(x_fp8, x_amax) as the original's ref_program: per row and group of 128 columns the
    scale amax / 448, the values x / scale clamped to +-448 and rounded to e4m3."""
    m, n = x.shape
    groups = -(-n // group_size)
    padded = np.zeros((m, groups * group_size), np.float32)
    padded[:, :n] = x
    view = padded.reshape(m, groups, group_size)
    amax = np.maximum(np.abs(view).max(axis=2), np.float32(1e-4))
    s = (amax / np.float32(448.0)).astype(np.float32)
    q = np.clip(view / s[:, :, None], -448.0, 448.0).astype(np.float32).astype(F8E4M3)
    return q.reshape(m, -1)[:, :n], s


def unpack_int4(packed):
    """u8[N, K/2] -> i8[N, K]: the low nibble first, each sign-extended (the original's torch_convert)."""
    lo = (packed & 0x0F).astype(np.int8)
    hi = (packed >> 4).astype(np.int8)
    i4 = np.stack((lo, hi), axis=-1).reshape(packed.shape[0], -1)
    return ((i4 << 4).astype(np.int8) >> 4).astype(np.int8)


def retention(q, k, v, scale):
    """Causal retention with the per-head decay 1 - 2^(-5 - h), (batch, seq, heads, dim)."""
    q, k, v = (f64(bshd(x)) for x in (q, k, v))
    seq, heads = q.shape[2], q.shape[1]
    gamma = 1 - 2.0 ** (-5.0 - np.arange(heads))
    t = np.arange(seq)
    decay = gamma[:, None, None] ** np.maximum(t[:, None] - t[None, :], 0) * (t[:, None] >= t[None, :])
    s = (q * scale) @ np.swapaxes(k, -1, -2) * decay[None]
    return bshd(s @ v)


def linear_attention(q, k, v, scale):
    """(o, final_state): causal linear attention in (batch, seq, heads, dim), and K^T V."""
    q, k, v = (f64(bshd(x)) for x in (q, k, v))
    s = (q * scale) @ np.swapaxes(k, -1, -2)
    s = np.tril(s)
    return bshd(s @ v), np.swapaxes(k, -1, -2) @ v


def conv2d_nhwc(data, kernel, stride, padding, dilation):
    """data (N, H, W, C), kernel (KH, KW, C, F) -> (N, OH, OW, F)."""
    n, h, w, c = data.shape
    kh, kw, _, f = kernel.shape
    oh = (h + 2 * padding - dilation * (kh - 1) - 1) // stride + 1
    ow = (w + 2 * padding - dilation * (kw - 1) - 1) // stride + 1
    x = np.zeros((n, h + 2 * padding, w + 2 * padding, c))
    x[:, padding:padding + h, padding:padding + w] = data
    out = np.zeros((n, oh, ow, f))
    for i in range(kh):
        for j in range(kw):
            patch = x[:, i * dilation: i * dilation + stride * oh: stride, j * dilation: j * dilation + stride * ow: stride]
            out += patch @ f64(kernel[i, j])
    return out
