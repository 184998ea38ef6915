"""`tlc tune` on the GPU: std.gemm's @autotune space for one shape finds a configuration at
least as fast as the shipped one (timed again here, apart from the tuner), and a wrong
candidate (tests/tune/scale.tl's SCALE=2) is reported and never chosen."""
import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

import tlc
import tlc.tune
from tlc import timing
from tlc.cli import main

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.gpu


@pytest.fixture(autouse=True)
def own_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("TLC_CACHE_DIR", str(tmp_path / "cache"))


def test_std_gemm_tuned_is_at_least_as_fast_as_shipped():
    shape = {"M": 4096, "N": 4096, "K": 4096}
    report, = tlc.tune.tune("std.gemm", "matmul", [shape], target="cuda", write=False)
    labels = {o.label: o for o in report.outcomes}
    assert len(labels) == 48
    # the shipped configuration (config.json's rule for this arch and shape) is in the space, right, and timed
    assert report.shipped_label in labels and labels[report.shipped_label].status == "ok", report.shipped_label
    assert report.winner is not None and report.winner.ms <= report.shipped_ms * 1.02
    assert not [o for o in report.outcomes if o.status in ("wrong", "error")], \
        [(o.label, o.status, o.why) for o in report.outcomes if o.status in ("wrong", "error")]
    # timed again, apart from the tuner, alternating the two
    mod = tlc.load("std.gemm", target="cuda")
    rng = np.random.default_rng(1)
    import cupy as cp

    A = cp.asarray(rng.standard_normal((4096, 4096)).astype(np.float16))
    B = cp.asarray(rng.standard_normal((4096, 4096)).astype(np.float16))
    C = cp.empty((4096, 4096), np.float16)
    runs = {"tuned": lambda: mod.matmul(A, B, C, **report.winner.constants),
            "shipped": lambda: mod.matmul(A, B, C, **report.shipped)}
    ms = timing.compare(runs, min_ms=300)
    assert ms["tuned"] <= ms["shipped"] * 1.02, (ms, report.winner.label, report.shipped_label)


def test_a_wrong_candidate_is_rejected_on_the_gpu(tmp_path):
    folder = tmp_path / "prog"
    folder.mkdir()
    shutil.copy(ROOT / "tests/tune/scale.tl", folder / "scale.tl")
    r = CliRunner().invoke(main, ["tune", str(folder / "scale.tl"), "-k", "scale", "--target", "cuda",
                                  "--shape", "N=100000", "--json", "--min-ms", "20"])
    assert r.exit_code == 0, r.output
    bucket, = json.loads(r.stdout)["buckets"]
    status = {c["label"]: c["status"] for c in bucket["candidates"]}
    assert [label for label, s in status.items() if s == "wrong"] == [
        "BLOCK=32 ROWS=1 SCALE=2", "BLOCK=32 ROWS=1024 SCALE=2", "BLOCK=64 ROWS=1 SCALE=2"]
    assert bucket["pruned"] == {"E070": 2}  # 272 KB > the 227 KB of sm_90a (and 163 KB of sm_80)
    assert bucket["winner"]["constants"]["SCALE"] == 1
    rules = json.loads((folder / "config.json").read_text())["kernels"]["scale.tl"]["scale"]
    assert rules[0]["constants"]["SCALE"] == 1 and rules[0]["when"] == {"N": [65537, 131072]}


def test_an_arch_other_than_the_gpus_is_refused():
    from tlc.runtime import target_arch

    here = target_arch()
    other = "sm_80" if here != "sm_80" else "sm_90a"
    r = CliRunner().invoke(main, ["tune", str(ROOT / "tests/tune/scale.tl"), "-k", "scale", "--target", "cuda",
                                  "--shape", "N=100", "--arch", other, "--no-write"])
    assert r.exit_code == 1
    assert r.stderr == (f"error[E343]: --arch {other}: the GPU here runs {here} kernels, and tlc tune measures on it\n"
                        f"  = hint: drop --arch, or tune on the interpreter with --target cpu --arch {other} (which "
                        "checks and prunes for that target but times the interpreter)\n")


def test_autotune_true_tunes_the_first_call_of_a_bucket(tmp_path):
    import cupy as cp

    folder = tmp_path / "prog"
    folder.mkdir()
    shutil.copy(ROOT / "tests/tune/scale.tl", folder / "scale.tl")
    mod = tlc.load(str(folder / "scale.tl"), target="cuda")
    x = cp.arange(100_000, dtype=cp.float32)
    y = cp.zeros_like(x)
    mod.scale(x, y, autotune=True)
    assert bool((y == x).all())  # with the recorded winner: SCALE=1
    rules = json.loads((folder / "config.json").read_text())["kernels"]["scale.tl"]["scale"]
    assert [(r["when"], r["constants"]["SCALE"]) for r in rules] == [({"N": [65537, 131072]}, 1)]
    before = (folder / "config.json").stat().st_mtime_ns
    mod.scale(x, y, autotune=True)  # recorded: not tuned again
    assert (folder / "config.json").stat().st_mtime_ns == before
