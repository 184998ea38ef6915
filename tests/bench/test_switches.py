"""bench/switches.py: tlc's module switches set for a block and put back after it, also where the
block or a later setting raises (lowbit's copy of the loop, before cb4a29c, left the settings
before a failing one set)."""
import sys
import types
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))

from switches import switched  # noqa: E402


def test_the_settings_hold_inside_the_block_and_are_put_back_after_it():
    mod = types.SimpleNamespace(A=False, B=0)
    with switched([(mod, "A", True), (mod, "B", 8)]):
        assert (mod.A, mod.B) == (True, 8)
    assert (mod.A, mod.B) == (False, 0)


def test_a_module_named_by_its_dotted_name():
    from tlc.schedule import stream_k

    before = stream_k.STREAM_K
    with switched([("tlc.schedule.stream_k", "STREAM_K", not before)]):
        assert stream_k.STREAM_K is (not before)
    assert stream_k.STREAM_K is before


def test_what_was_set_is_put_back_when_the_block_or_a_later_setting_raises():
    mod = types.SimpleNamespace(A=False)
    with pytest.raises(RuntimeError, match="in the block"):
        with switched([(mod, "A", True)]):
            raise RuntimeError("in the block")
    assert mod.A is False
    with pytest.raises(AttributeError):
        with switched([(mod, "A", True), (mod, "NOPE", 1)]):
            pass
    assert mod.A is False and not hasattr(mod, "NOPE")
