"""The plain kernels of bench/plain/ (written as docs/LANGUAGE.md teaches, not tuned): for each,
inputs of a given size and the NumPy result, shared by the CPU, nvcc and GPU tests."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

PLAIN = Path(__file__).resolve().parents[2] / "bench" / "plain"


@dataclass(frozen=True)
class Case:
    file: str  # bench/plain/<file>.tl
    kernel: str
    small: dict  # constants that keep the interpreter quick
    sizes: dict  # default problem size: symbol -> size
    tol: float  # relative error allowed (the output's rounding)

    @property
    def path(self) -> str:
        return str(PLAIN / f"{self.file}.tl")


CASES = [
    Case("softmax", "softmax", {"BN": 512}, {"M": 5, "N": 300}, 2e-3),
    Case("rms_norm", "rms_norm", {"BN": 512}, {"M": 5, "N": 300}, 2e-3),
    Case("layer_norm", "layer_norm", {"BN": 512}, {"M": 5, "N": 300}, 2e-3),
    Case("column_sums", "column_sums", {"BM": 8, "BN": 64}, {"M": 70, "N": 150}, 1e-5),
    Case("transpose", "transpose", {"B": 32}, {"M": 70, "N": 45}, 0.0),
    Case("saxpy", "saxpy", {"BLOCK": 512}, {"N": 3001}, 1e-6),
    Case("gemm", "gemm_f32", {"BM": 64, "BN": 64, "BK": 16}, {"M": 100, "N": 70, "K": 40}, 1e-5),
    Case("bias_relu", "bias_relu", {"BM": 8, "BN": 64}, {"M": 37, "N": 150}, 1e-3),
]


def rand(rng, shape, dtype):
    return rng.standard_normal(shape).astype(np.float32).astype(dtype)


def inputs(case: Case, sizes: dict, seed: int = 0) -> tuple[list, list, dict]:
    """(arguments in order, the outputs among them, scalars), outputs filled with NaN."""
    r = np.random.default_rng(seed)
    M, N, K = sizes.get("M"), sizes.get("N"), sizes.get("K")
    f16, f32 = np.float16, np.float32
    nan = lambda shape, dt: np.full(shape, np.nan, dt)  # noqa: E731
    if case.file == "softmax":
        y = nan((M, N), f16)
        return [rand(r, (M, N), f16) * 4, y], [y], {}
    if case.file == "rms_norm":
        y = nan((M, N), f16)
        return [rand(r, (M, N), f16), rand(r, N, f16), y], [y], {}
    if case.file == "layer_norm":
        y = nan((M, N), f16)
        return [rand(r, (M, N), f16) + 3, rand(r, N, f16), rand(r, N, f16), y], [y], {}
    if case.file == "column_sums":
        out = nan(N, f32)
        return [rand(r, (M, N), f32), out], [out], {}
    if case.file == "transpose":
        y = nan((N, M), f32)
        return [rand(r, (M, N), f32), y], [y], {}
    if case.file == "saxpy":
        out = nan(N, f32)
        return [rand(r, N, f32), rand(r, N, f32), out], [out], {"a": 1.75}
    if case.file == "gemm":
        c = nan((M, N), f32)
        return [rand(r, (M, K), f16), rand(r, (K, N), f16), c], [c], {}
    if case.file == "bias_relu":
        y = nan((M, N), f16)
        return [rand(r, (M, N), f16), rand(r, N, f16), y], [y], {}
    raise KeyError(case.file)


def reference(case: Case, args: list, scalars: dict) -> np.ndarray:
    """The NumPy result, in f64 from the inputs as given."""
    a = [np.asarray(x, np.float64) for x in args]
    if case.file == "softmax":
        e = np.exp(a[0] - a[0].max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)
    if case.file == "rms_norm":
        return a[0] / np.sqrt((a[0] ** 2).mean(axis=1, keepdims=True) + 1e-6) * a[1]
    if case.file == "layer_norm":
        mean = a[0].mean(axis=1, keepdims=True)
        var = ((a[0] - mean) ** 2).mean(axis=1, keepdims=True)
        return (a[0] - mean) / np.sqrt(var + 1e-5) * a[1] + a[2]
    if case.file == "column_sums":
        return a[0].sum(axis=0)
    if case.file == "transpose":
        return a[0].T
    if case.file == "saxpy":
        return scalars["a"] * a[0] + a[1]
    if case.file == "gemm":
        return a[0] @ a[1]
    if case.file == "bias_relu":
        return np.maximum(a[0] + a[1], 0)
    raise KeyError(case.file)


def rel_err(out, ref) -> float:
    out, ref = np.asarray(out, np.float64), np.asarray(ref, np.float64)
    assert np.isfinite(out).all(), f"{int((~np.isfinite(out)).sum())} of {out.size} outputs not written or not finite"
    return float(np.linalg.norm(out - ref) / max(np.linalg.norm(ref), 1e-30))
