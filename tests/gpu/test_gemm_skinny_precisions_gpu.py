"""std.gemm's skinny (decode) kernels in tf32, f8 (per-tensor and block scales) and i8 on the
GPU against NumPy: with config.json's constants for every M bucket (no constants given), with
the bench's sweep of tiles, on the sm_80 path too; N and K multiples of no tile."""
import pathlib
import sys

import numpy as np
import pytest

import tlc

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "stdlib"))  # the shared kits
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "bench"))  # the bench's sweep
from precision_kit import SKINNY, cases, check  # noqa: E402
from stdlib_kit import GEMM_PATH  # noqa: E402
from test_gemm_precisions_gpu import on_arch  # noqa: E402

pytestmark = pytest.mark.gpu


@pytest.fixture(scope="module")
def mod():
    return tlc.load(GEMM_PATH, target="cuda")


@pytest.mark.parametrize("M", [1, 5, 16, 24, 64, 100, 128])
def test_decode_shapes_with_the_recorded_constants(mod, M):
    from tlc.runtime import target_arch

    for name, args, _, ref, tol in cases(np.random.default_rng(M), M, 2000, 2056):
        kernel = getattr(mod, SKINNY[name])
        assert kernel.with_recorded(dict(zip(("A", "W"), args[:2])), {}, target_arch())  # a rule covers M
        kernel(*args)
        check(SKINNY[name], args[2], ref, tol)


@pytest.mark.parametrize("M,N,K", [(5, 200, 300), (16, 256, 1024), (1, 1, 1), (40, 130, 520)])
def test_ragged_shapes(mod, M, N, K):
    for name, args, _, ref, tol in cases(np.random.default_rng(M * N + K), M, N, K):
        getattr(mod, SKINNY[name])(*args)
        check(SKINNY[name], args[2], ref, tol)


def test_the_bench_sweep(mod):
    import gemm_cases

    # the scaled kernels (W8A8, row-wise f8) take the tiles of their operands' precision
    precision = {**{v: k for k, v in gemm_cases.STD_KERNEL.items()}, "matmul_i8_scaled": "i8",
                 "matmul_f8_rowwise": "f8"}
    for cfg in gemm_cases.SKINNY_PRECISION_SWEEP:
        for name, args, _, ref, tol in cases(np.random.default_rng(2), 16, 1000, 1100):
            consts = gemm_cases._skinny_constants(precision[name], cfg)
            if consts is not None:
                getattr(mod, SKINNY[name])(*args, **consts)
                check(f"{SKINNY[name]} {consts}", args[2], ref, tol)


@pytest.mark.parametrize("M", [5, 100])
def test_the_sm80_path(mod, M):
    for name, args, _, ref, tol in cases(np.random.default_rng(M + 1), M, 300, 700):
        on_arch(mod, SKINNY[name], "sm_80", args, {})
        check(SKINNY[name], args[2], ref, tol)
