"""std.nn's kernels as cases: arguments, constants and NumPy references (float64), shared by
the interpreter tests and the GPU tests."""
from tlc import package_data

import numpy as np

NN_PATH = str(package_data.stdlib().joinpath("nn.tl"))
KERNELS = ["softmax", "rms_norm", "layer_norm", "silu_residual"]


def softmax_ref(x):
    x = x.astype(np.float64)
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def rms_norm_ref(x, w, eps):
    x = x.astype(np.float64)
    return x / np.sqrt((x * x).mean(axis=-1, keepdims=True) + eps) * w.astype(np.float64)


def layer_norm_ref(x, w, b, eps):
    x = x.astype(np.float64)
    c = x - x.mean(axis=-1, keepdims=True)
    return c / np.sqrt((c * c).mean(axis=-1, keepdims=True) + eps) * w.astype(np.float64) + b.astype(np.float64)


def silu_residual_ref(x, alpha, beta, gamma):
    x = x.astype(np.float64)
    t = alpha * x + beta
    return gamma * (t / (1 + np.exp(-t)) + x)


def rel_err(got, want) -> float:
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    assert np.isfinite(got).all(), "an output was not written (or is not finite)"
    return float(np.linalg.norm(got - want) / max(np.linalg.norm(want), 1e-30))


def rowwise_cases(rng, dtype, M, N, consts):
    """(kernel, args, constants, output index, reference) for the three row-wise kernels."""
    x = (rng.standard_normal((M, N)) * 3 + 0.5).astype(np.float32).astype(dtype)
    w = rng.standard_normal(N).astype(np.float32).astype(dtype)
    b = rng.standard_normal(N).astype(np.float32).astype(dtype)
    out = lambda: np.full((M, N), np.nan, dtype)  # noqa: E731
    eps = 1e-5
    return [("softmax", [x, out()], consts, 1, softmax_ref(x)),
            ("rms_norm", [x, w, out(), eps], consts, 2, rms_norm_ref(x, w, eps)),
            ("layer_norm", [x, w, b, out(), eps], consts, 3, layer_norm_ref(x, w, b, eps))]


def elementwise_case(rng, dtype, n, consts):
    x = (rng.standard_normal(n) * 2).astype(np.float32).astype(dtype)
    args = [x, np.full(n, np.nan, dtype), 1.5, -0.25, 0.75]
    return ("silu_residual", args, consts, 1, silu_residual_ref(x, 1.5, -0.25, 0.75))


# (M, N, constants): one tile per row (N <= BN, ragged N and M), several tiles (N > BN, ragged
# last tile), several rows per block, a row narrower than a warp's vectors.
SHAPES = [(7, 50, dict(BM=2, BN=64, THREADS=32)),
          (5, 200, dict(BM=2, BN=64, THREADS=32)),
          (9, 128, dict(BM=4, BN=128, THREADS=64)),
          (3, 24, dict(BM=1, BN=32, THREADS=64))]
