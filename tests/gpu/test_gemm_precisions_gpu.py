"""std.gemm's precision kernels (tf32, f8 per-tensor and block-scaled, i8) on the GPU against
NumPy, ragged shapes: on the target the GPU gets (wgmma on an H200) and on the sm_80 path
(mma.sync; f8 through f16), which an H200 runs too."""
import pathlib
import sys

import numpy as np
import pytest

import tlc

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "stdlib"))  # the shared kits
from precision_kit import E4M3, E5M2, cases, check, f8  # noqa: E402
from stdlib_kit import GEMM_PATH  # noqa: E402

pytestmark = pytest.mark.gpu

SHAPES = [(130, 270, 300), (1, 1, 1), (67, 300, 129), (256, 512, 1024), (200, 45, 517)]


def on_arch(mod, name, arch, args, consts):
    """Run `name` as code generated for `arch` (whatever the GPU), NumPy outputs written back."""
    from tlc.runtime import compile_kernel

    kernel = getattr(mod, name)
    values, constants = kernel.bind(tuple(args), dict(consts))
    compile_kernel(kernel.scheduled(constants, arch), kernel.generated(constants, arch))(values)


@pytest.mark.parametrize("M,N,K", SHAPES)
def test_every_kernel_against_numpy(M, N, K):
    mod = tlc.load(GEMM_PATH, target="cuda")
    for name, args, consts, ref, tol in cases(np.random.default_rng(M * N + K), M, N, K):
        getattr(mod, name)(*args, **consts)
        check(name, args[2], ref, tol)


@pytest.mark.parametrize("M,N,K", SHAPES[:3])
def test_every_kernel_on_the_sm80_path(M, N, K):
    mod = tlc.load(GEMM_PATH, target="cuda")
    for name, args, consts, ref, tol in cases(np.random.default_rng(M + N * K), M, N, K):
        on_arch(mod, name, "sm_80", args, consts)
        check(name, args[2], ref, tol)


CONFIGS = [
    ("matmul_tf32", dict(BM=128, BN=128, BK=32, stages=4, THREADS=256)),
    ("matmul_tf32", dict(BM=64, BN=64, BK=32, stages=2, THREADS=128)),
    ("matmul_f8", dict(BM=128, BN=128, BK=128, stages=4, THREADS=256)),
    ("matmul_f8", dict(BM=64, BN=128, BK=64, stages=2, THREADS=128)),
    ("matmul_f8_blockscaled", dict(BM=64, BN=64, stages=2, THREADS=128)),
    ("matmul_f8_blockscaled", dict(BM=128, BN=256, stages=2, THREADS=256)),
    ("matmul_i8", dict(BM=128, BN=128, BK=128, stages=4, THREADS=256)),
    ("matmul_i8", dict(BM=64, BN=64, BK=32, stages=3, THREADS=128)),
    ("matmul_i8_scaled", dict(BM=128, BN=128, BK=128, stages=4, THREADS=256)),
    ("matmul_f8_rowwise", dict(BM=128, BN=192, BK=128, stages=4, THREADS=256)),
    ("matmul_f8_rowwise", dict(BM=64, BN=128, BK=64, stages=2, THREADS=128)),
]


@pytest.mark.parametrize("arch", ["auto", "sm_80"])
@pytest.mark.parametrize("name,consts", CONFIGS)
def test_other_tiles(name, consts, arch):
    mod = tlc.load(GEMM_PATH, target="cuda")
    for kname, args, _, ref, tol in cases(np.random.default_rng(7), 333, 270, 320):
        if kname == name:
            if arch == "auto":
                getattr(mod, name)(*args, **consts)
            else:
                on_arch(mod, name, arch, args, consts)
            check(name, args[2], ref, tol)


@pytest.mark.parametrize("stages", [3, 4])
def test_blockscaled_halves_staged_epilogue(stages):
    """BN = 256's two 128-column halves stored by the TMA: at 3 stages each through its own
    staging buffer, at 4 both through one in turn (ir.StagedStore.more / reuse); tiles of the
    ragged shape's last row and column partly outside C; K past the last scale block."""
    mod = tlc.load(GEMM_PATH, target="cuda")
    for kname, args, _, ref, tol in cases(np.random.default_rng(8), 333, 600, 520):
        if kname == "matmul_f8_blockscaled":
            mod.matmul_f8_blockscaled(*args, BM=128, BN=256, stages=stages, THREADS=256)
            check(kname, args[2], ref, tol)


@pytest.mark.parametrize("arch", ["auto", "sm_80", "sm_89"])
@pytest.mark.parametrize("ta,tb", [(E4M3, E4M3), (E5M2, E5M2), (E4M3, E5M2)])
def test_f8_nan_and_extremes(ta, tb, arch):
    """Every f8 value multiplies exactly (the sm_80 path converts them to f16 by bit
    operations, sm_89's f8 mma takes them as they are), and a NaN in A reaches its row of C."""
    r = np.random.default_rng(5)
    values = np.arange(256, dtype=np.uint8).view(ta)
    finite = values[np.isfinite(values.astype(np.float32))]
    A = np.resize(finite, (64, 256)).astype(ta)
    A[3, 17] = np.float32("nan")
    B = f8(r, (96, 256), tb)
    C = np.zeros((64, 96), np.float32)
    mod = tlc.load(GEMM_PATH, target="cuda")
    args, consts = [A, B, C, 1.0, 1.0], dict(BM=64, BN=96, THREADS=128)
    if arch == "auto":
        mod.matmul_f8(*args, **consts)
    else:
        on_arch(mod, "matmul_f8", arch, args, consts)
    ref = A.astype(np.float64) @ B.astype(np.float64).T
    assert np.isnan(C[3]).all() and not np.isnan(np.delete(C, 3, axis=0)).any()
    rows = np.arange(64) != 3
    assert np.allclose(C[rows], ref[rows], rtol=1e-3, atol=1e-3 * np.abs(ref[rows]).max())

