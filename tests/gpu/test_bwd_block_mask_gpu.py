"""std.attention's flash_bwd with its block mask (MASK_BLOCKS, the default), as session 28 timed
it (bench/results/q_B_bwd_block_mask-h200-twentyeighth.txt: then bench/B_bwd_block_mask.tl built
with RING_SCALE_D_CLEARS "all" (now schedule/scale_d_clears.py), whose scale-d clears std's default rule now
takes for its back-to-back products), at config.json's
sm_90a tiles: its gradients against the f64 ones where the block mask matters
(S and SK ragged at both ends, S > SK causal: rows that see no key, GQA, 48 queries a dK/dV step
in 2 stages), f16 and bf16."""
import pathlib
import sys

import pytest

import tlc

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "stdlib"))
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from test_attention import check_bwd  # noqa: E402

pytestmark = pytest.mark.gpu
TILES = {"BM": 128, "THREADS": 256, "BN": 128, "BQ": 64, "KV_STAGES": 3}
CASES = [(1, 4, 2, 300, 513, 128, True, {}), (2, 8, 8, 1000, 1000, 128, False, {}),
         (1, 4, 2, 513, 300, 128, True, {}), (1, 2, 1, 129, 64, 64, True, {}),
         (1, 6, 2, 260, 300, 128, True, {"BQ": 48, "KV_STAGES": 2})]


@pytest.mark.parametrize("dtype", ["f16", "bf16"])
@pytest.mark.parametrize("case", range(len(CASES)))
def test_the_block_mask_against_numpy(dtype, case):
    from test_attention_gpu import on_device  # (this folder)

    B, H, HK, S, SK, D, causal, consts = CASES[case]
    std = tlc.load("std.attention", target="cuda")
    check_bwd(on_device(std.flash_fwd), on_device(std.flash_bwd), dtype, B, H, HK, S, SK, D, causal,
              {**TILES, **consts}, seed=60 + case)
