"""std.gemm's matmul_w4a16 through the TMA ring split along K by the blocks an SM holds
(schedule/dequant_ring.py's DEQUANT_SPLIT, off by default; bench/queue/D_w4a16_split_ring.sh
times it) on the GPU against NumPy: what must hold before it becomes the default.  The parts
meet in the kernel (split_k.py's slots and counters, module memory): each case launched twice,
the second launch finding every tile's counter back at 0.  config.json's M = 1 rule (8 parts at
N = 512, 2 at N = K = 8192), a ragged one whose scale and zero rows do not encode as maps (the
element fallback), M = 16 on mma.sync (3 blocks an SM, 3 parts).  A copy of std.gemm's text
at a path of its own: the program cache's keys do not hold the option."""
import pathlib
import sys

import numpy as np
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "stdlib"))
from w4a16_kit import case, check, loaded_copy  # noqa: E402

from tlc.runtime.grid import evaluate_int  # noqa: E402
from tlc.schedule import dequant_ring, operand_layout  # noqa: E402

pytestmark = pytest.mark.gpu

RULE_M1 = {"BM": 8, "BK": 256, "stages": 6, "TMA": True}


@pytest.fixture(scope="module")
def split_mod(tmp_path_factory):
    return loaded_copy(tmp_path_factory.mktemp("split_ring"))


# (M, N, K, constants, WGMMA_REGISTER_A_MAX, parts)
CASES = [(1, 512, 8192, RULE_M1, 0, 8), (1, 8192, 8192, RULE_M1, 0, 2), (3, 200, 4100, RULE_M1, 0, 4),
         (16, 8192, 8192, {"BM": 16, "BK": 512, "stages": 2, "TMA": True}, 32, 3)]


@pytest.mark.parametrize("M,N,K,consts,mma,parts", CASES)
def test_the_split_ring_against_numpy_twice(split_mod, monkeypatch, M, N, K, consts, mma, parts):
    monkeypatch.setattr(dequant_ring, "DEQUANT_SPLIT", True)
    monkeypatch.setattr(operand_layout, "WGMMA_REGISTER_A_MAX", mma)
    kernel = split_mod.matmul_w4a16
    for launch in range(2):
        A, W4, scales, zeros, C, ref, tol, _ = case(np.random.default_rng(M * N + K + launch), M, N, K)
        _, constants = kernel.bind((A, W4, scales, zeros, C), dict(consts))
        sk = kernel.scheduled(constants, "sm_90a").warp_spec.split_k
        sizes = {"M": M, "N": N, "K": K, "KW": W4.shape[1], "KG": scales.shape[1]}
        assert evaluate_int(sk.parts, sizes) == parts
        kernel(A, W4, scales, zeros, C, **consts)
        check(f"matmul_w4a16 split through the TMA ring {M}x{N}x{K}, launch {launch}", C, ref, tol)
