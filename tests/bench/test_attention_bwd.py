"""bench/attention_bwd.py without a GPU: --flags names tlc.codegen's switches that a variant is
compiled with (set only around its compile, restored after), and refuses a switch that does not
exist before anything compiles."""
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))

import attention_bwd  # noqa: E402
from tlc.codegen import half_pairs, sm80  # noqa: E402


def test_flags_are_set_inside_and_restored_after():
    label, flags = attention_bwd.parse_flags("block=half_pairs.CAST_PAIRS=1+sm80.UNIFORM_GUARDS=1")
    assert label == "block" and [(m, n, v) for m, n, v in flags] == \
        [(half_pairs, "CAST_PAIRS", 1), (sm80, "UNIFORM_GUARDS", 1)]
    before = (half_pairs.CAST_PAIRS, sm80.UNIFORM_GUARDS)
    with attention_bwd.switches(flags):
        assert half_pairs.CAST_PAIRS is True and sm80.UNIFORM_GUARDS is True
    assert (half_pairs.CAST_PAIRS, sm80.UNIFORM_GUARDS) == before


def test_a_word_is_a_word():
    _, flags = attention_bwd.parse_flags("x=half_pairs.CAST_PAIRS=on")
    assert flags[0][2] == "on"


def test_a_switch_that_does_not_exist():
    with pytest.raises(SystemExit) as e:
        attention_bwd.parse_flags("x=half_pairs.CAST_PAIR=1")
    assert str(e.value) == "--flags x=half_pairs.CAST_PAIR=1: tlc.codegen.half_pairs has no switch CAST_PAIR"
