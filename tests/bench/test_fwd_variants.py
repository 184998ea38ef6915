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
