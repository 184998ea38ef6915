"""gemm with a fragment A operand on the GPU against NumPy: the two-gemm chain of flash
attention (S = Q K^T in f32, P = cast(S * scale), O = P V; tests/programs/attention_chain.tl)
for f16 and bf16, BM 64 and 128, head dims 64 and 128, ragged S and SK, on the target the
GPU gets (wgmma's register-A form on an H200) and on the sm_80 path (mma.sync from registers),
which an H200 runs too; a fragment A loaded from global memory; and a fragment A that is
staged through shared memory."""
from pathlib import Path

import numpy as np
import pytest

import tlc
from tlc.dtypes import BF16, F16

pytestmark = pytest.mark.gpu

CHAIN = Path(__file__).resolve().parents[1] / "programs" / "attention_chain.tl"
TOL = {F16: 2e-3, BF16: 1e-2}  # of the largest |O|: O is rounded to T, P to T before P V

FRAGMENT_A_GEMM = CHAIN.parent / "gemm_fragment_a.tl"


def f32(x):
    return np.asarray(x, np.float32)


def run(kernel, args, consts, arch):
    """`kernel` as generated for `arch` (None: the GPU's own target), NumPy outputs written back."""
    if arch is None:
        kernel(*args, **consts)
        return
    from tlc.runtime import compile_kernel

    values, constants = kernel.bind(tuple(args), dict(consts))
    compile_kernel(kernel.scheduled(constants, arch), kernel.generated(constants, arch))(values)


def chain_case(dtype, d, S, SK, seed):
    rng = np.random.default_rng(seed)
    Q, K, V = (rng.standard_normal((n, d)).astype(dtype.numpy()) for n in (S, SK, SK))
    scale = 1 / np.sqrt(d)
    P = (f32(Q) @ f32(K).T * np.float32(scale)).astype(dtype.numpy())
    return Q, K, V, scale, f32(P) @ f32(V)


@pytest.mark.parametrize("arch", [None, "sm_80"])
@pytest.mark.parametrize("dtype", [F16, BF16])
@pytest.mark.parametrize("bm,d", [(64, 64), (64, 128), (128, 64), (128, 128)])
def test_the_chain_against_numpy(arch, dtype, bm, d):
    mod = tlc.load(str(CHAIN), target="cuda")
    for S, SK in [(300, 517), (64, 64), (1, 7), (129, 1000)]:
        Q, K, V, scale, ref = chain_case(dtype, d, S, SK, S + SK + d)
        O = np.full((S, d), np.nan, dtype.numpy())
        run(mod.attention_chain, (Q, K, V, O, scale), dict(D=d, BM=bm, THREADS=2 * bm), arch)
        err = np.abs(f32(O) - ref).max() / np.abs(ref).max()
        assert err < TOL[dtype], (S, SK, err)


@pytest.mark.parametrize("arch", [None, "sm_80"])
@pytest.mark.parametrize("consts", [{}, {"BM": 16}, {"BK": 24}])
def test_a_fragment_loaded_from_global(arch, consts):
    """In the register-A layout (the default), and staged through shared memory (16 rows over
    4 warps; K not whole steps of 16)."""
    mod = tlc.load(str(FRAGMENT_A_GEMM), target="cuda")
    rng = np.random.default_rng(7)
    A, B = rng.standard_normal((150, 200)).astype(np.float16), rng.standard_normal((200, 70)).astype(np.float16)
    C = np.full((150, 70), np.nan, np.float32)
    run(mod.k, (A, B, C), consts, arch)
    ref = f32(A) @ f32(B)
    assert np.abs(C - ref).max() < 1e-3 * np.abs(ref).max()


@pytest.mark.parametrize("arch", [None, "sm_80"])
@pytest.mark.parametrize("dtype", [F16, BF16])
@pytest.mark.parametrize("bm,d", [(64, 64), (128, 128), (64, 128)])
def test_flash_attention_against_numpy(arch, dtype, bm, d):
    """tests/programs/flash_attention.tl (online softmax, P from registers) against the
    softmax in float64, ragged S and SK."""
    mod = tlc.load(str(CHAIN.parent / "flash_attention.tl"), target="cuda")
    for S, SK in [(300, 517), (1, 1), (128, 64), (77, 1000)]:
        rng = np.random.default_rng(S * SK + d)
        Q, K, V = (rng.standard_normal((n, d)).astype(dtype.numpy()) for n in (S, SK, SK))
        O = np.full((S, d), np.nan, dtype.numpy())
        run(mod.flash_attention, (Q, K, V, O, 1 / np.sqrt(d)), dict(D=d, BM=bm, THREADS=2 * bm), arch)
        s = np.asarray(Q, np.float64) @ np.asarray(K, np.float64).T / np.sqrt(d)
        p = np.exp(s - s.max(1, keepdims=True))
        ref = (p / p.sum(1, keepdims=True)) @ np.asarray(V, np.float64)
        err = np.abs(O.astype(np.float64) - ref).max() / np.abs(ref).max()
        assert err < TOL[dtype], (S, SK, err)
