"""std.gemm's w4a16 kernels under the option bench/queue/D_w4a16_*.sh times, on the GPU against
NumPy (w4a16_kit's dequantize-then-matmul): what must hold before it becomes the default.
codegen/copies.py's ROUND_STEPS and CLIP_ROWS_MAX = 8: tl::copy_g2s's stepped rounds and clipped
rows.  The option's kernels come from a copy of std.gemm's text at a path of its own, so that
their cache entries are their own (the program cache's keys do not hold the options)."""
import pathlib
import sys

import numpy as np
import pytest


ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "stdlib"))
sys.path.insert(0, str(ROOT / "tests" / "gpu"))
from w4a16_kit import case, check, loaded_copy, splitk  # noqa: E402

from tlc.codegen import copies  # noqa: E402

pytestmark = pytest.mark.gpu


@pytest.fixture(scope="module")
def forms_mod(tmp_path_factory):
    return loaded_copy(tmp_path_factory.mktemp("copy_forms"))


@pytest.mark.parametrize("M,N,K", [(1, 70, 384), (5, 130, 520), (1, 300, 4100), (16, 64, 640)])
def test_the_decode_kernels_with_the_copy_forms_against_numpy(forms_mod, monkeypatch, M, N, K):
    monkeypatch.setattr(copies, "ROUND_STEPS", True)
    monkeypatch.setattr(copies, "CLIP_ROWS_MAX", 8)
    rng = np.random.default_rng(M + N * K)
    A, W4, scales, zeros, C, ref, tol, _ = case(rng, M, N, K)
    forms_mod.matmul_w4a16(A, W4, scales, zeros, C)
    check("matmul_w4a16 with the copy forms", C, ref, tol)
    check("matmul_w4a16_splitk with the copy forms", splitk(forms_mod, A, W4, scales, zeros, 3), ref, tol)
    if M == 1:
        C[:] = np.nan
        forms_mod.matmul_w4a16_gemv(A, W4, scales, zeros, C)
        check("matmul_w4a16_gemv with the copy forms", C, ref, tol)
