"""std.gemm on the GPU against NumPy (and wgmma where the H200 takes it)."""
import pathlib
import sys

import numpy as np
import pytest

import tlc
from tlc.dtypes import BF16, F16

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "stdlib"))  # the shared kit
from stdlib_kit import GEMM_PATH, cases, rel_err  # noqa: E402

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("dtype", [F16, BF16])
def test_every_kernel_against_numpy(dtype):
    mod = tlc.load(GEMM_PATH, target="cuda")
    tol = 2e-3 if dtype == F16 else 1.5e-2
    for name, args, consts, ref in cases(np.random.default_rng(3), dtype.numpy()):
        getattr(mod, name)(*args, **consts)
        assert rel_err(args[2].astype(np.float32), ref) < tol, (name, consts)
