"""bench/ops_variants.py without a GPU: its spec and switches parse as the queued scripts write
them, --compare reads two runs, and the queued question of bench/queue/G_ops_weak_rows.sh (its
rows with the three switches on) is right on the interpreter."""
import json
import re
import shlex
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))

import ops_variants  # noqa: E402
from tlc.schedule import fast_math  # noqa: E402


def test_a_word_without_a_value_names_the_next_op():
    assert ops_variants.parse(["pow", "broadcast.pow", "transpose", "B=128", "B=64,THREADS=128,T=f16"]) == [
        ("pow", []), ("broadcast.pow", []), ("transpose", [{"B": 128}, {"B": 64, "THREADS": 128, "T": "f16"}])]
    with pytest.raises(SystemExit, match=r"a variant \(B=128\) before any op"):
        ops_variants.parse(["B=128"])


def test_variants_are_the_rows_with_their_constants_merged():
    rows = ops_variants.variant_rows(["transpose", "B=128", "broadcast.pow"])
    assert [(op, label) for op, label, _ in rows] == [("transpose", "default"), ("transpose", "B=128"),
                                                      ("broadcast.pow", "default")]
    assert rows[1][2].tlc_constants() == {"T": "f16", "B": 128} and rows[2][2].module == "std.broadcast"
    with pytest.raises(SystemExit, match="no row 'nosuch' in bench/ops.py's table"):
        ops_variants.variant_rows(["nosuch"])


def test_an_option_sets_a_compiler_switch(monkeypatch):
    monkeypatch.setattr(fast_math, "RARE_POW_SPECIALS", False)
    ops_variants.apply_options(["tlc.schedule.fast_math.RARE_POW_SPECIALS=1"])
    assert fast_math.RARE_POW_SPECIALS is True
    with pytest.raises(SystemExit, match="--option tlc.schedule.nothere.X=1: no module tlc.schedule.nothere"):
        ops_variants.apply_options(["tlc.schedule.nothere.X=1"])
    with pytest.raises(SystemExit, match="tlc.schedule.fast_math has no constant NOPE, or '1' is not an integer"):
        ops_variants.apply_options(["tlc.schedule.fast_math.NOPE=1"])


def test_compare_gives_each_shared_rows_speedup(tmp_path):
    def run(ms):
        return {"rows": [{"module": "std.moe", "op": "moe_permute", "dtype": "f16", "variant": "default",
                          "tlc": {"ms": ms, "of_copy": 0.5, "gbs": 1.0}, "vs_torch": 4.0}]}
    (tmp_path / "a.json").write_text(json.dumps(run(0.125)))
    (tmp_path / "b.json").write_text(json.dumps(run(0.100)))
    assert ops_variants.compare(run(0.125), run(0.100)) == [
        "moe.moe_permute f16 default                 125.0 us (0.50, 4.00x) ->    100.0 us (0.50, 4.00x): 1.250x"]


def test_the_queued_question_is_right_on_the_interpreter(monkeypatch, capsys):
    script = (ROOT / "bench" / "queue" / "G_ops_weak_rows.sh").read_text()
    spec = shlex.split(re.search(r'^SPEC="([^"]*)"', script, re.M).group(1))
    options = re.findall(r"--option (\S+)", script)
    assert len(options) == 4
    for opt in options:  # restored after the test
        where, _, attr = opt.partition("=")[0].rpartition(".")
        monkeypatch.setattr(sys.modules.get(where) or __import__(where, fromlist=[attr]), attr, False)
    result = ops_variants.main(["--dry-run", *[w for o in options for w in ("--option", o)], *spec])
    assert result["failures"] == [], capsys.readouterr().out
    # the second process's broadcast.pow at BLOCKS = 8, a variant there
    assert "${SPEC/broadcast.pow/broadcast.pow BLOCKS=8}" in script and "broadcast.pow" in spec
    assert ops_variants.main(["--dry-run", "broadcast.pow", "BLOCKS=8"])["failures"] == []
    # the first process's run-time switch, a variant of expert_histogram there
    switch = re.search(r"^ASSERTS=(\S+)", script, re.M).group(1)
    assert "${SPEC/expert_histogram/expert_histogram $ASSERTS}" in script and "expert_histogram" in spec
    from tlc.runtime import host_asserts

    monkeypatch.setattr(host_asserts, "HOST_DECIDED_ASSERTS", False)  # as the first process ran it
    with ops_variants.switched(switch):
        assert host_asserts.HOST_DECIDED_ASSERTS is True
    assert host_asserts.HOST_DECIDED_ASSERTS is False


def test_a_variants_run_time_switch_is_set_for_its_run_alone():
    rows = ops_variants.variant_rows(["expert_histogram", "@tlc.runtime.host_asserts.HOST_DECIDED_ASSERTS=1,PART=4096"])
    assert [label for _, label, _ in rows] == ["default", "@tlc.runtime.host_asserts.HOST_DECIDED_ASSERTS=1,PART=4096"]
    assert rows[1][2].tlc_constants() == {"I": "i64", "PART": 4096}  # the switch is no constant


def test_the_queued_transpose_tiles_are_right_on_the_interpreter(capsys):
    script = (ROOT / "bench" / "queue" / "G_transpose_tiles.sh").read_text()
    words = shlex.split(re.search(r"bench/ops_variants.py (.*?) 2>&1", script).group(1))
    spec = [w for i, w in enumerate(words) if not w.startswith("--") and not words[i - 1].startswith("--")]
    assert spec[0] == "transpose" and len(spec) == 2
    result = ops_variants.main(["--dry-run", *spec])
    assert result["failures"] == [], capsys.readouterr().out
