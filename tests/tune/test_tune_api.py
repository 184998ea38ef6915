"""tlc.tune from Python on the interpreter: a wrong candidate is never timed nor chosen, even
when a timer would call it the fastest; --resume skips what an interrupted run measured; a
kernel called with autotune=True tunes its bucket once and records it."""
from __future__ import annotations

import json

import numpy as np
import pytest

import tlc
import tlc.tune
from tlc import config_table
from tlc.tune.measure import fake_timer


def test_a_wrong_candidate_is_never_timed_nor_chosen(scale):
    timed = []

    def timer(runs):  # SCALE=2 would be the fastest by far
        timed.extend(runs)
        return {label: 0.001 if "SCALE=2" in label else 1.0 + len(label) / 100 for label in runs}

    report, = tlc.tune.tune(str(scale), "scale", [{"N": 100}], target="cpu", timer=timer)
    assert not [label for label in timed if "SCALE=2" in label]
    assert report.winner.constants["SCALE"] == 1
    assert sorted(o.label for o in report.outcomes if o.status == "wrong") == [
        "BLOCK=32 ROWS=1 SCALE=2", "BLOCK=32 ROWS=1024 SCALE=2", "BLOCK=64 ROWS=1 SCALE=2"]
    assert all(o.why.startswith("WRONG: 100 of 100 elements outside") for o in report.outcomes if o.status == "wrong")


def test_the_reference_is_the_kernels_defaults(scale):
    """A space whose first value is the wrong one: the defaults (SCALE=1) still decide."""
    report, = tlc.tune.tune(str(scale), "scale", [{"N": 100}], space=["SCALE=2,1"], target="cpu", timer="fake",
                            write=False)
    assert [(o.label, o.status) for o in report.outcomes] == [("SCALE=2", "wrong"), ("SCALE=1", "ok")]
    assert report.winner.label == "SCALE=1" and report.config is None


class Interrupted(Exception):
    pass


def test_resume_skips_what_was_measured(scale):
    calls = []

    def interrupted_after_two(runs):
        if len(calls) == 2:
            raise Interrupted
        calls.extend(runs)
        return fake_timer(runs)

    with pytest.raises(Interrupted):
        tlc.tune.tune(str(scale), "scale", [{"N": 100}], target="cpu", timer=interrupted_after_two)
    assert not (scale.parent / "config.json").exists()
    measured_first = list(calls)

    timed = []

    def timer(runs):
        timed.append(list(runs))
        return fake_timer(runs)

    report, = tlc.tune.tune(str(scale), "scale", [{"N": 100}], target="cpu", timer=timer, resume=True)
    singles = [runs[0] for runs in timed if len(runs) == 1]
    assert not set(singles) & set(measured_first)
    assert len(singles) == 3 - len(measured_first)  # the right candidates left
    assert report.count("ok") == 3 and report.count("wrong") == 3 and report.count("pruned") == 2
    # without --resume everything is measured again
    timed.clear()
    tlc.tune.tune(str(scale), "scale", [{"N": 100}], target="cpu", timer=timer)
    assert len([runs for runs in timed if len(runs) == 1]) == 3


def test_autotune_true_tunes_a_bucket_once(scale, monkeypatch):
    monkeypatch.setattr(tlc.tune, "AUTOTUNE_TIMER", "fake")
    tunes = []
    real = tlc.tune.tune_kernel
    # jobs=1: no worker processes, which would run again a calling script without a __main__ guard
    monkeypatch.setattr(tlc.tune, "tune_kernel", lambda *a, **kw: tunes.append((a[1], kw["jobs"])) or real(*a, **kw))
    mod = tlc.load(str(scale), target="cpu")
    x = np.arange(100, dtype=np.float32)
    y = np.zeros(100, np.float32)
    mod.scale(x, y, autotune=True)
    np.testing.assert_array_equal(y, x)
    mod.scale(x, y, autotune=True)  # the same bucket: recorded already
    mod.scale(np.ones(70, np.float32), np.zeros(70, np.float32), autotune=True)  # N=70: [65, 128] too
    x2 = np.ones(1000, np.float32)
    mod.scale(x2, np.zeros(1000, np.float32), autotune=True)
    assert tunes == [([{"N": 100}], 1), ([{"N": 1000}], 1)]
    rules = json.loads((scale.parent / "config.json").read_text())["kernels"]["scale.tl"]["scale"]
    assert [r["when"] for r in rules] == [{"N": [513, 1024]}, {"N": [65, 128]}]
    # a new module reads them: no tuning
    tlc.load(str(scale), target="cpu").scale(x, y, autotune=True)
    assert len(tunes) == 2


def test_autotune_true_in_a_read_only_folder_records_per_user(scale, monkeypatch):
    monkeypatch.setattr(tlc.tune, "AUTOTUNE_TIMER", "fake")
    scale.parent.chmod(0o555)
    try:
        mod = tlc.load(str(scale), target="cpu")
        mod.scale(np.ones(100, np.float32), np.zeros(100, np.float32), autotune=True)
        assert not (scale.parent / "config.json").exists()
        user = config_table.user_path(str(scale))
        rules = json.loads(user.read_text())["kernels"]["scale.tl"]["scale"]
        assert [r["when"] for r in rules] == [{"N": [65, 128]}]
        assert config_table.rules_for(str(scale), "scale")[0].ranges == (("N", 65, 128),)
    finally:
        scale.parent.chmod(0o755)


def test_the_interpreter_runs_a_candidate_as_scheduled_for_the_arch_tuned_for(scale):
    """Regression: 192 KB of shared memory fits sm_90a but not sm_80, whose schedule a call on
    the interpreter uses; the candidate was reported as failing with E070."""
    reports = {arch: tlc.tune.tune(str(scale), "scale", [{"N": 100}], space=["BLOCK=32", "ROWS=1,1536"],
                                   target="cpu", arch=arch, timer="fake", write=False)[0]
               for arch in ("sm_80", "sm_90a")}
    assert [(o.label, o.status, o.code) for o in reports["sm_90a"].outcomes] == [
        ("BLOCK=32 ROWS=1", "ok", ""), ("BLOCK=32 ROWS=1536", "ok", "")]
    assert [(o.label, o.status, o.code) for o in reports["sm_80"].outcomes] == [
        ("BLOCK=32 ROWS=1", "ok", ""), ("BLOCK=32 ROWS=1536", "pruned", "E070")]


def test_a_wrong_shipped_configuration_is_never_timed_nor_chosen(scale):
    """config.json's rule for the bucket sets SCALE=2 (what a call uses today computes something
    else): it is not in the final round, and the winner is a right configuration."""
    (scale.parent / "config.json").write_text(json.dumps(
        {"format": 1, "kernels": {"scale.tl": {"scale": [{"arch": "sm_80", "constants": {"SCALE": 2}}]}}}))
    timed = []

    def timer(runs):
        timed.extend(runs)
        return {label: 0.001 if "SCALE=2" in label else 1.0 for label in runs}

    for space in (["BLOCK=32,64"], ["SCALE=1,2"]):  # the shipped configuration outside the space, then in it
        timed.clear()
        report, = tlc.tune.tune(str(scale), "scale", [{"N": 100}], space=space, target="cpu", timer=timer, write=False)
        assert not [label for label in timed if "SCALE=2" in label], space
        assert report.winner.constants["SCALE"] == 1 and report.shipped_ms is None


def test_calls_of_the_bucket_use_the_recorded_winner(scale):
    report, = tlc.tune.tune(str(scale), "scale", [{"N": 100}], target="cpu", timer="fake")
    k = tlc.load(str(scale), target="cpu").scale

    def chosen(n):
        return k.with_recorded({"x": np.zeros(n, np.float32), "y": np.zeros(n, np.float32)}, {}, "sm_80")

    assert chosen(65) == chosen(128) == report.winner.constants
    assert chosen(64) == chosen(129) == {}  # other buckets keep the defaults
    assert k.with_recorded({"x": np.zeros(100, np.float32)}, {}, "sm_90a") == {}  # and other archs
