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


def scheduled_conv2d_error(kernel, case: tuple, seed: int | None = None) -> float:
    """conv2d's scheduled IR `kernel` (a warp-specialized ring) run by the interpreter on f16
    inputs made from `case` (N, H, W, C, F, K, S, P, D), its output filled with NaN first: its
    relative error against the NumPy reference."""
    from tlc.interp import run_kernel

    N, H, W, C, F, K, S, P, D = case
    rng = np.random.default_rng(sum(case) if seed is None else seed)
    x = rng.standard_normal((N, H, W, C)).astype(np.float16)
    w = rng.standard_normal((F, K, K, C)).astype(np.float16)
    want = conv2d(x, w, S, P, D)
    y = np.full(want.shape, np.nan, np.float16)
    run_kernel(kernel, {"x": x, "w": w, "y": y})
    return rel_err(y, want)


def scheduled_bwd_weight(N, H, W, C, F, K, S, P, seed=0):
    """std.conv's conv2d_bwd_weight at SPLIT 1 in 64 x 64 tiles (config.json's sm_90a constants
    for 64 channels), each grid scheduled for sm_90a and run by the interpreter on f16 inputs:
    (dw, the NumPy reference, the grids)."""
    import tlc
    from tlc.interp import run_kernel

    kern = tlc.load(CONV_PATH, target="cpu").kernels["conv2d_bwd_weight"]
    consts = {"SPLIT": 1, "BM": 64, "BN": 64, "THREADS": 128, "stages": 4, "S": S, "P": P}
    grids = kern.scheduled_grids(consts, "sm_90a")
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((N, H, W, C)).astype(np.float16)
    dy = rng.standard_normal((N, out_size(H, K, S, P), out_size(W, K, S, P), F)).astype(np.float16)
    dw = np.full((F, K, K, C), np.nan, np.float16)
    values = kern.with_workspaces({"dy": dy, "x": x, "dw": dw}, grids[0], on_gpu=False)
    for g in grids:
        run_kernel(g, values)
    return dw, conv2d_bwd_weight(dy, x, K, S, P, 1), grids


# ---- one check per operator (scripts/run-all-kernels: every std kernel at ragged shapes) -------
# (N, H, W, C, F, K, S, P, D): padding at the borders, stride 2, dilation 2, C not a multiple of 8
RAGGED = [(2, 9, 7, 24, 20, 3, 2, 1, 1), (1, 7, 8, 5, 10, 3, 1, 2, 2)]
OPS = ("conv2d", "conv2d_grouped", "depthwise_conv2d", "causal_conv1d", "max_pool2d", "avg_pool2d",
       "conv2d_bwd_data", "conv2d_bwd_weight")


def check_op(mod, op: str, case: tuple, consts: dict | None = None) -> None:
    """Runs std.conv's `op` once on inputs made from `case` (RAGGED's form) as a user would
    (outputs filled with NaN first) and asserts it matches the NumPy reference."""
    N, H, W, C, F, K, S, P, D = case
    consts = consts or {}
    rng = np.random.default_rng(sum(case))
    g = lambda *shape: rng.standard_normal(shape).astype(np.float16)  # noqa: E731
    x = g(N, H, W, C)
    oh, ow = out_size(H, K, S, P, D), out_size(W, K, S, P, D)
    if op == "conv2d":
        w = g(F, K, K, C)
        got, want = np.full((N, oh, ow, F), np.nan, np.float16), conv2d(x, w, S, P, D)
        mod.conv2d(x, w, got, S=S, P=P, D=D, **consts)
    elif op == "conv2d_grouped":
        x = g(N, H, W, 2 * C)
        w = g(2 * F, K, K, C)
        got, want = np.full((N, oh, ow, 2 * F), np.nan, np.float16), conv2d(x, w, S, P, D, groups=2)
        mod.conv2d_grouped(x, w, got, G=2, S=S, P=P, D=D, **consts)
    elif op == "depthwise_conv2d":
        w = g(C, K, K)
        got, want = np.full((N, oh, ow, C), np.nan, np.float16), depthwise_conv2d(x, w, S, P, D)
        mod.depthwise_conv2d(x, w, got, S=S, P=P, D=D, **consts)
    elif op == "causal_conv1d":
        x1, w1, b1 = g(N, C, H * W), g(C, K + 1), g(C)
        got, want = np.full(x1.shape, np.nan, np.float16), causal_conv1d(x1, w1, b1, silu=True)
        mod.causal_conv1d(x1, w1, b1, got, SILU=True, **consts)
    elif op in ("max_pool2d", "avg_pool2d"):
        oh, ow = out_size(H, K, S, min(P, K // 2)), out_size(W, K, S, min(P, K // 2))
        p = min(P, K // 2)  # PyTorch's limit: padding at most half the window
        got = np.full((N, oh, ow, C), np.nan, np.float16)
        want = max_pool2d(x, K, S, p) if op == "max_pool2d" else avg_pool2d(x, K, S, p)
        getattr(mod, op)(x, got, K=K, S=S, P=p, **consts)
    elif op == "conv2d_bwd_data":
        w, dy = g(F, K, K, C), g(N, oh, ow, F)
        got, want = np.full(x.shape, np.nan, np.float16), conv2d_bwd_data(dy, w, H, W, S, P, D)
        mod.conv2d_bwd_data(dy, w, got, S=S, P=P, D=D, **consts)
    elif op == "conv2d_bwd_weight":
        dy = g(N, oh, ow, F)
        got, want = np.full((F, K, K, C), np.nan, np.float16), conv2d_bwd_weight(dy, x, K, S, P, D)
        mod.conv2d_bwd_weight(dy, x, got, S=S, P=P, D=D, **consts)
    else:
        raise KeyError(op)
    got = np.asarray(got, np.float64)
    assert np.isfinite(got).all(), f"{op} {case}: {int((~np.isfinite(got)).sum())} elements not written"
    err = rel_err(got, want)
    assert err < 4e-3, f"{op} {case}: relative error {err:.3g}"
