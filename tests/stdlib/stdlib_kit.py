"""The std modules as files, and NumPy references of std.gemm's kernels."""
from tlc import package_data

import numpy as np

GEMM_PATH = str(package_data.stdlib().joinpath("gemm.tl"))


def gelu(x):
    return 0.5 * x * (1 + np.tanh(0.7978845608028654 * (x + 0.044715 * x ** 3)))


ACTS = {0: lambda x: x, 1: gelu, 2: lambda x: np.maximum(x, 0), 3: lambda x: x / (1 + np.exp(-x))}


def rel_err(got, want) -> float:
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    assert np.isfinite(got).all(), "an output was not written (or is not finite)"
    return float(np.linalg.norm(got - want) / max(np.linalg.norm(want), 1e-30))


def cases(rng, dtype, M=130, N=270, K=100):
    """(kernel, args, constants, reference) for std.gemm's matmul, matmul_nt, matmul_tn,
    matmul_epilogue and matmul_batched; ragged shapes unless given."""
    f = lambda *s: rng.standard_normal(s).astype(np.float32).astype(dtype)  # noqa: E731
    A, B, Bt, At = f(M, K), f(K, N), f(N, K), f(K, M)
    A32, B32 = A.astype(np.float32), B.astype(np.float32)
    bias = rng.standard_normal(N).astype(np.float32)
    C0 = f(M, N)
    Ab, Bb = f(3, 70, 50), f(3, 50, 90)
    out = []
    out.append(("matmul", [A, B, np.full((M, N), np.nan, dtype)], {}, A32 @ B32))
    out.append(("matmul_nt", [A, Bt, np.full((M, N), np.nan, dtype)], {}, A32 @ Bt.astype(np.float32).T))
    out.append(("matmul_tn", [At, B, np.full((M, N), np.nan, dtype)], {}, At.astype(np.float32).T @ B32))
    for act in (0, 1, 2, 3):
        ref = ACTS[act](0.5 * (A32 @ B32) + bias + 2.0 * C0.astype(np.float32))
        out.append(("matmul_epilogue", [A, B, C0.copy(), bias, 0.5, 2.0], {"ACT": act}, ref))
    out.append(("matmul_batched", [Ab, Bb, np.full((3, 70, 90), np.nan, dtype)], {},
                Ab.astype(np.float32) @ Bb.astype(np.float32)))
    return out


MATH_PATH = str(__import__("pathlib").Path(__file__).resolve().parents[1] / "programs" / "std_math.tl")


def math_reference(x):
    from math import erf

    x = x.astype(np.float64)
    sig = 1 / (1 + np.exp(-x))
    return np.stack([gelu(x), 0.5 * x * (1 + np.vectorize(erf)(x / np.sqrt(2))), x * sig, np.maximum(x, 0),
                     np.where(x >= 0, x, 0.1 * x), np.where(x > 20, x, np.log1p(np.exp(np.minimum(x, 20)))),
                     x / (1 + np.exp(-1.702 * x)), gelu(x)])
