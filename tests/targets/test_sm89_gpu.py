"""std.gemm's f8 kernels as generated for sm_89 (the f8 mma.sync), run on whatever GPU is
here (sm_89 code serves compute capability 8.9 and later: an H200 runs it as sm_90), against
NumPy, ragged shapes.  tests/gpu/test_gemm_precisions_gpu.py puts a NaN and every finite f8
value through the sm_89 path too."""
import pathlib
import sys

import numpy as np
import pytest

import tlc

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "stdlib"))  # the shared kits
from precision_kit import cases, check  # noqa: E402
from stdlib_kit import GEMM_PATH  # noqa: E402

pytestmark = pytest.mark.gpu

def on_sm89(mod, name, args, consts):
    from tlc.runtime import compile_kernel

    kernel = getattr(mod, name)
    values, constants = kernel.bind(tuple(args), dict(consts))
    generated = kernel.generated(constants, "sm_89")
    assert generated.arch == "sm_89" and ", false, true>(" in generated.source  # tf32 off, the f8 mma on
    compile_kernel(kernel.scheduled(constants, "sm_89"), generated)(values)


@pytest.mark.parametrize("M,N,K", [(130, 270, 300), (67, 300, 129), (256, 512, 1024)])
def test_f8_kernels_against_numpy(M, N, K):
    mod = tlc.load(GEMM_PATH, target="cuda")
    for name, args, consts, ref, tol in cases(np.random.default_rng(M * N + K), M, N, K):
        if name in ("matmul_f8", "matmul_f8_blockscaled"):
            on_sm89(mod, name, args, consts)  # defaults fitted to Ada's 99 KB (schedule/fit.py)
            check(name, args[2], ref, tol)
