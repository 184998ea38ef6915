"""bench/ops_variants.py without a GPU: its spec and switches parse as the queued scripts write
them, --compare reads two runs, and the processes of bench/queue/G_histogram_atomics.sh and
V_ops_flips.sh (their rows with their switches) are right on the interpreter."""
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


def _ops_variants_runs(script: str) -> list[tuple[list[str], list[str]]]:
    """(options, spec) of each bench/ops_variants.py process a queue script runs, its $ROW /
    $ROWS words put in (--compare lines left out)."""
    text = (ROOT / "bench" / "queue" / script).read_text().replace("\\\n", " ")
    names = dict(re.findall(r'^(ROWS?)="([^"]*)"', text, re.M))
    runs = []
    for line in re.findall(r"bench/ops_variants.py (.*?) 2>&1", text):
        if "--compare" in line:
            continue
        for name, value in names.items():
            line = re.sub(rf"\${name}\b", value, line)
        words = shlex.split(line)
        options = [w for i, w in enumerate(words) if i and words[i - 1] == "--option"]
        spec = [w for i, w in enumerate(words) if not w.startswith("--") and not (i and words[i - 1].startswith("--"))]
        runs.append((options, spec))
    return runs


@pytest.mark.parametrize("script,processes", [("G_histogram_atomics.sh", 3), ("V_ops_flips.sh", 2),
                                               ("G_broadcast_pow_blocks.sh", 3), ("G_ragged_vector_stores.sh", 2)])
def test_the_queued_processes_are_right_on_the_interpreter(script, processes, monkeypatch, capsys):
    """Each process of the queue script (its compiler switches set as it sets them, put back
    after) runs its rows and variants right on the interpreter."""
    runs = _ops_variants_runs(script)
    assert len(runs) == processes
    for options, spec in runs:
        for opt in options:  # restored after the test
            where, _, attr = opt.partition("=")[0].rpartition(".")
            module = sys.modules.get(where) or __import__(where, fromlist=[attr])
            monkeypatch.setattr(module, attr, getattr(module, attr))
        result = ops_variants.main(["--dry-run", *[w for o in options for w in ("--option", o)], *spec])
        assert result["failures"] == [], capsys.readouterr().out


def test_the_histograms_processes_isolate_one_switch_each():
    runs = _ops_variants_runs("G_histogram_atomics.sh")
    assert [o for o, _ in runs] == [[], ["tlc.schedule.atomic_groups.GROUP_ATOMICS=1"],
                                    ["tlc.runtime.host_asserts.WHOLE_RUNS_WITH_ASSERTS=1"]]
    assert all(spec == ["expert_histogram", "@tlc.runtime.host_asserts.HOST_DECIDED_ASSERTS=0"] for _, spec in runs)
    from tlc.runtime import host_asserts

    switch = runs[0][1][1]
    with ops_variants.switched(switch):
        assert host_asserts.HOST_DECIDED_ASSERTS is False
    assert host_asserts.HOST_DECIDED_ASSERTS is True  # the default since session 28


def test_a_variants_run_time_switch_is_set_for_its_run_alone():
    rows = ops_variants.variant_rows(["expert_histogram", "@tlc.runtime.host_asserts.HOST_DECIDED_ASSERTS=1,PART=4096"])
    assert [label for _, label, _ in rows] == ["default", "@tlc.runtime.host_asserts.HOST_DECIDED_ASSERTS=1,PART=4096"]
    assert rows[1][2].tlc_constants() == {"I": "i64", "PART": 4096}  # the switch is no constant


def test_a_shape_is_two_positive_integers():
    assert ops_variants.shape_arg("16384,8191") == (16384, 8191)
    for bad in ("16384", "0,8", "a,b", "1,2,3", "-4,8"):
        with pytest.raises(Exception, match=f"{bad!r} is not M,N \\(two positive integers\\)"):
            ops_variants.shape_arg(bad)
    runs = _ops_variants_runs("G_broadcast_pow_blocks.sh")
    assert [spec for _, spec in runs] == [["broadcast.pow", "BLOCKS=8"]] * 3
    assert [o for o, _ in runs] == [[]] + [["tlc.codegen.rare_runs.RARE_POW_RUNS=1"]] * 2
    assert "--shape 16384,8191 broadcast.pow" in (ROOT / "bench" / "queue" / "G_broadcast_pow_blocks.sh").read_text()

