"""std.gemm's shape kernels on the GPU against NumPy: skinny, split-K, grouped; with the
constants of config.json (no constants given) and with explicit ones; ragged shapes."""
import pathlib
import sys

import numpy as np
import pytest

import tlc
from tlc.dtypes import BF16, F16

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "stdlib"))  # the shared kits
from gemm_shapes_kit import GROUP_SIZES, f32, grouped_case, grouped_f8_case, rand, skinny_cases, splitk  # noqa: E402
from stdlib_kit import GEMM_PATH, rel_err  # noqa: E402

pytestmark = pytest.mark.gpu
TOL = {F16: 2e-3, BF16: 1.5e-2}


@pytest.fixture(scope="module")
def mod():
    return tlc.load(GEMM_PATH, target="cuda")


@pytest.mark.parametrize("dtype", [F16, BF16])
def test_skinny_explicit_constants(mod, dtype):
    for A, W, consts in skinny_cases(np.random.default_rng(20), dtype.numpy()):
        C = np.full((A.shape[0], W.shape[0]), np.nan, dtype.numpy())
        mod.matmul_skinny(A, W, C, **consts)
        assert rel_err(C, f32(A) @ f32(W).T) < TOL[dtype], (A.shape, W.shape, consts)


@pytest.mark.parametrize("M", [1, 16, 24, 64, 100, 128])
def test_skinny_decode_shapes_with_the_recorded_constants(mod, M):
    from tlc.runtime import target_arch

    rng = np.random.default_rng(M)
    A, W = rand(rng, np.float16, M, 4104), rand(rng, np.float16, 8000, 4104)  # N, K not multiples of the tiles
    assert mod.matmul_skinny.with_recorded({"A": A, "W": W}, {}, target_arch())  # the table has a rule
    C = np.full((M, 8000), np.nan, np.float16)
    mod.matmul_skinny(A, W, C)
    assert rel_err(C, f32(A) @ f32(W).T) < 2e-3


@pytest.mark.parametrize("S", [1, 3, 8])
def test_skinny_splitk(mod, S):
    rng = np.random.default_rng(21)
    A, W = rand(rng, np.float16, 13, 3000), rand(rng, np.float16, 1000, 3000)
    C = splitk(mod, "matmul_skinny_splitk", A, W, S, np.float16)
    assert rel_err(C, f32(A) @ f32(W).T) < 2e-3


@pytest.mark.parametrize("dtype", [F16, BF16])
def test_splitk_few_tiles(mod, dtype):
    rng = np.random.default_rng(22)
    A, B = rand(rng, dtype.numpy(), 500, 16000), rand(rng, dtype.numpy(), 16000, 520)
    C = splitk(mod, "matmul_splitk", A, B, 8, dtype.numpy())
    assert rel_err(C, f32(A) @ f32(B)) < TOL[dtype]


@pytest.mark.parametrize("sizes", GROUP_SIZES + [[0, 300, 1, 0, 1100, 17, 600, 0]])
def test_grouped(mod, sizes):
    A, W, offsets, ref = grouped_case(np.random.default_rng(23), np.float16, sizes, N=520, K=264)
    C = np.full(ref.shape, np.nan, np.float16)
    mod.matmul_grouped(A, W, offsets, C)
    assert rel_err(C, ref) < 2e-3


@pytest.mark.parametrize("consts", [{}, {"BN": 256}, {"BN": 256, "stages": 4}], ids=["default", "BN256s3", "BN256s4"])
@pytest.mark.parametrize("sizes", GROUP_SIZES + [[0, 300, 1, 0, 1100, 17, 600, 0]])
def test_grouped_f8_blockscaled(mod, sizes, consts):
    # BN = 256: two 128-column halves (N = 520: the last tile's second half partly outside)
    A, W, offsets, SA, SB, ref = grouped_f8_case(np.random.default_rng(25), sizes, N=520, K=392)
    C = np.full(ref.shape, np.nan, BF16.numpy())
    mod.matmul_grouped_f8_blockscaled(A, W, offsets, C, SA, SB, **consts)
    if ref.size:
        assert rel_err(C, ref) < 1e-2


def test_grouped_large_bf16(mod):
    sizes = [512, 0, 1000, 2048, 33, 500]  # TOTAL_M above the small-batch rule's bucket
    A, W, offsets, ref = grouped_case(np.random.default_rng(24), BF16.numpy(), sizes, N=1024, K=512)
    C = np.full(ref.shape, np.nan, BF16.numpy())
    mod.matmul_grouped(A, W, offsets, C)
    assert rel_err(C, ref) < 1.5e-2


def test_repeat_calls_with_shape_chosen_constants_take_the_signature_launcher():
    # std.gemm's kernels have dtype parameters and config.json rules, so their constants follow
    # the arrays: a call like an earlier one (kinds, dtypes, shapes) reuses its launcher
    import torch

    k = tlc.load(GEMM_PATH, target="cuda").matmul
    rng = np.random.default_rng(21)
    for M, N, K, dt in [(300, 264, 136, torch.float16), (300, 264, 136, torch.float16), (64, 72, 40, torch.bfloat16),
                        (300, 264, 136, torch.float16)]:
        A = torch.from_numpy(rand(rng, np.float32, M, K)).to("cuda", dt)
        B = torch.from_numpy(rand(rng, np.float32, K, N)).to("cuda", dt)
        C = torch.full((M, N), float("nan"), device="cuda", dtype=dt)
        k(A, B, C)
        assert rel_err(C.float().cpu().numpy(), (A.float() @ B.float()).cpu().numpy()) < 1.5e-2, (M, N, K, dt)
    assert len(k._by_signature) == 2  # one per (dtypes, shapes) seen
    with pytest.raises(tlc.TlcError):  # a wrong array still gets the general path's explanation
        k(A, B, torch.empty((M, N + 1), device="cuda", dtype=torch.float16))
