"""std.gemm on the interpreter against NumPy: every kernel, ragged shapes, non-default tiles."""
import numpy as np
import pytest

import tlc
from tlc.dtypes import BF16, F16
from stdlib_kit import GEMM_PATH, cases, rel_err

KERNELS = ["matmul", "matmul_nt", "matmul_tn", "matmul_epilogue", "matmul_batched"]


def test_std_gemm_checks_clean_and_has_its_kernels():
    mod = tlc.load(GEMM_PATH, target="cpu")
    assert set(KERNELS) <= set(mod.kernels)  # the precision and shape kernels are tested beside this file


@pytest.mark.parametrize("dtype", [F16, BF16])
def test_every_kernel_against_numpy(dtype):
    mod = tlc.load(GEMM_PATH, target="cpu")
    tol = 2e-3 if dtype == F16 else 1.5e-2
    for name, args, consts, ref in cases(np.random.default_rng(1), dtype.numpy()):
        getattr(mod, name)(*args, **consts)
        out = args[2]
        assert rel_err(out.astype(np.float32), ref) < tol, (name, consts)


def test_small_tiles():
    mod = tlc.load(GEMM_PATH, target="cpu")
    r = np.random.default_rng(2)
    A, B = r.standard_normal((77, 45)).astype(np.float16), r.standard_normal((45, 61)).astype(np.float16)
    C = np.full((77, 61), np.nan, np.float16)
    mod.matmul(A, B, C, BM=32, BN=32, BK=16, stages=2, THREADS=64)
    assert rel_err(C, A.astype(np.float32) @ B.astype(np.float32)) < 2e-3


def test_import_from_another_file(tmp_path):
    p = tmp_path / "use.tl"
    p.write_text("from std.gemm import matmul, matmul_nt\n")
    mod = tlc.load(str(p), target="cpu")
    assert mod.program.function("matmul").kind == "kernel"


def test_std_modules_load_by_name():
    mod = tlc.load("std.gemm", target="cpu")
    assert "matmul" in mod.kernels
