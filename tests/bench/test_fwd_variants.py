"""bench/fwd_variants.py's compiler switches (a variant's fourth element): the renamed copy and
the switches set around a call, restored after; the dynamic tile order of bench/queue's causal
walk contender reached that way (its timing needs the GPU)."""
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))
import fwd_variants  # noqa: E402


def test_a_switched_variant_is_a_renamed_copy_scheduled_with_the_switch():
    from tlc.schedule import warpspec
    mod = fwd_variants.renamed(str(ROOT / "bench" / "A_fwd_walk.tl"), "dyn", target="cpu")
    kernel = mod.kernels["flash_fwd_dyn"]
    seen = fwd_variants.switched(lambda: (warpspec.DYNAMIC_TILES,
                                          kernel.scheduled({"D": 128, "CAUSAL": True}, "sm_90a").warp_spec.tile_order),
                                 {"tlc.schedule.warpspec.DYNAMIC_TILES": False})
    assert seen[0] is False and seen[1].pairs and warpspec.DYNAMIC_TILES is True  # restored


def test_an_unknown_switch_is_said():
    with pytest.raises(SystemExit, match="fwd_variants: tlc.schedule.warpspec has no switch NOPE"):
        fwd_variants.switched(lambda: None, {"tlc.schedule.warpspec.NOPE": 1})


def test_the_queued_walk_is_std_flash_fwd_as_a_walk(tmp_path):
    # bench/results/q_A_fwd_persistent-h200-twentyeighth.txt's contender follows std's flash_fwd statement for statement
    sys.path.insert(0, str(ROOT / "tests" / "schedule"))
    from test_persistent_grid import attention_walk
    text = (ROOT / "bench" / "A_fwd_walk.tl").read_text()
    assert text[text.index("LOG2E: const"):] == attention_walk(tmp_path).read_text()


@pytest.mark.parametrize("rule", ["after_last_write", "before_last_write"])
def test_the_queued_waits_reach_the_schedule(rule):
    # bench/queue/A_fwd_d64_bn128.sh's bn128_aw / bn128_bw: the renamed copy of std.attention
    # scheduled with DEFERRED_WAIT set waits for P @ V earlier than the default does
    from tlc.schedule import gemm_overlap
    kernel = fwd_variants.renamed(None, "bw", target="cpu").kernels["flash_fwd_bw"]
    consts = {"D": 64, "BM": 192, "THREADS": 384, "BN": 128}
    wait = fwd_variants.switched(lambda: kernel.scheduled(consts, "sm_90a").warp_spec.deferred.wait,
                                 {"tlc.schedule.gemm_overlap.DEFERRED_WAIT": rule})
    assert gemm_overlap.DEFERRED_WAIT == "first_use"  # restored
    default = kernel.scheduled({**consts, "CAUSAL": False}, "sm_90a").warp_spec.deferred.wait
    # (default: copy(scores, probs); 2 before it the row sum of the exponentials, 3 the exponentials)
    assert wait == default - (2 if rule == "after_last_write" else 3), (wait, default)
