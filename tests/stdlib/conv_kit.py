"""std.conv's NumPy references and ragged cases, shared by the interpreter test (test_conv.py)
and the GPU test (tests/gpu/test_conv_gpu.py).

Layouts as std.conv's: images NHWC, convolution weights [F, K, K, C // G] (OHWI), depthwise
weights [C, K, K], the 1-D causal convolution's x (B, C, L) and weight (C, WIDTH).  Every
reference computes in float64."""
from __future__ import annotations

import numpy as np

from tlc import package_data

CONV_PATH = str(package_data.stdlib().joinpath("conv.tl"))
NP = {"f16": np.float16, "bf16": None, "f32": np.float32}


def out_size(h: int, k: int, s: int, p: int, d: int = 1) -> int:
    return (h + 2 * p - d * (k - 1) - 1) // s + 1


def padded(x, p: int, value=0.0):
    n, h, w, c = x.shape
    out = np.full((n, h + 2 * p, w + 2 * p, c), value, np.float64)
    out[:, p:p + h, p:p + w] = x
    return out


def windows(x, k: int, s: int, p: int, d: int = 1, value=0.0):
    """[N, OH, OW, K, K, C]: the input each output pixel's kernel taps read (padding = value)."""
    n, h, w, c = x.shape
    oh, ow = out_size(h, k, s, p, d), out_size(w, k, s, p, d)
    xp = padded(np.asarray(x, np.float64), p, value)
    out = np.empty((n, oh, ow, k, k, c))
    for i in range(k):
        for j in range(k):
            out[:, :, :, i, j] = xp[:, i * d:i * d + s * (oh - 1) + 1:s, j * d:j * d + s * (ow - 1) + 1:s]
    return out


def conv2d(x, w, s: int = 1, p: int = 0, d: int = 1, groups: int = 1):
    """y[n, oh, ow, f] = sum over kh, kw, c of x[n, oh*s + kh*d - p, ow*s + kw*d - p, g*CG + c]
    * w[f, kh, kw, c], g = f // (F // groups)."""
    f, k, _, cg = w.shape
    cols = windows(x, k, s, p, d)
    fg = f // groups
    w64 = np.asarray(w, np.float64)
    out = [np.einsum("nhwijc,fijc->nhwf", cols[..., g * cg:(g + 1) * cg], w64[g * fg:(g + 1) * fg])
           for g in range(groups)]
    return np.concatenate(out, axis=-1)


def depthwise_conv2d(x, w, s: int = 1, p: int = 0, d: int = 1):
    """w: [C, K, K]."""
    return np.einsum("nhwijc,cij->nhwc", windows(x, w.shape[1], s, p, d), np.asarray(w, np.float64))


def causal_conv1d(x, w, bias=None, silu: bool = False):
    """x (B, C, L), w (C, WIDTH): y[b, c, l] = bias[c] + sum_k w[c, k] x[b, c, l - WIDTH + 1 + k]."""
    b, c, length = x.shape
    width = w.shape[1]
    xp = np.concatenate([np.zeros((b, c, width - 1)), np.asarray(x, np.float64)], axis=2)
    y = sum(np.asarray(w, np.float64)[None, :, k:k + 1] * xp[:, :, k:k + length] for k in range(width))
    if bias is not None:
        y = y + np.asarray(bias, np.float64)[None, :, None]
    return y / (1 + np.exp(-y)) if silu else y


def max_pool2d(x, k: int, s: int, p: int):
    """The window's largest, padding never chosen, NaN propagated (PyTorch's)."""
    win = windows(x, k, s, p, value=-np.inf)
    nan = np.isnan(win).any(axis=(3, 4))
    return np.where(nan, np.nan, np.nanmax(np.where(np.isnan(win), -np.inf, win), axis=(3, 4)))


def avg_pool2d(x, k: int, s: int, p: int, count_pad: bool = True):
    win = windows(x, k, s, p)
    total = win.sum(axis=(3, 4))
    if count_pad:
        return total / (k * k)
    ones = windows(np.ones(x.shape[:3] + (1,)), k, s, p).sum(axis=(3, 4))
    return total / ones


def conv2d_bwd_data(dy, w, h: int, wd: int, s: int = 1, p: int = 0, d: int = 1):
    """dx of conv2d (groups 1): the adjoint of `conv2d` over an image of h x wd pixels."""
    n, oh, ow, f = dy.shape
    _, k, _, c = w.shape
    dxp = np.zeros((n, h + 2 * p + s * k * d, wd + 2 * p + s * k * d, c))
    dy64, w64 = np.asarray(dy, np.float64), np.asarray(w, np.float64)
    for i in range(k):
        for j in range(k):
            dxp[:, i * d:i * d + s * (oh - 1) + 1:s, j * d:j * d + s * (ow - 1) + 1:s] += dy64 @ w64[:, i, j, :]
    return dxp[:, p:p + h, p:p + wd]


def conv2d_bwd_weight(dy, x, k: int, s: int = 1, p: int = 0, d: int = 1):
    """dw[f, kh, kw, c] = sum over n, oh, ow of dy[n, oh, ow, f] * x[n, oh*s + kh*d - p, ...]."""
    return np.einsum("nhwf,nhwijc->fijc", np.asarray(dy, np.float64), windows(x, k, s, p, d))


def rel_err(got, want) -> float:
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    return float(np.abs(got - want).max() / max(np.abs(want).max(), 1e-30))
