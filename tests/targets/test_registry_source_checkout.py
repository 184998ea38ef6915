"""tlc's own targets without package metadata: a source checkout run through PYTHONPATH (as the
GPU machine runs the tests) has no `tlc.targets` entry points, and every call then ended in
E071 "unknown target architecture 'sm_80'"."""
from tlc import targets


def test_own_targets_are_known_without_entry_points(monkeypatch):
    monkeypatch.setattr(targets, "_plugin_entry_points", lambda: [])
    targets.registered.cache_clear()
    try:
        assert set(targets.names()) == {"cpu", "sm_80", "sm_86", "sm_89", "sm_90a"}
        assert targets.for_capability((9, 0)).name == "sm_90a"
        assert targets.for_capability((8, 0)).name == "sm_80"
    finally:
        targets.registered.cache_clear()
