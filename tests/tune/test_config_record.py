"""What tlc tune writes into config.json (tlc.config_table.record): merged with what is there,
one rule per arch and bucket, safe with two writers at once; a corrupt file or a read-only
folder is a clear error and nothing is overwritten."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest
from click.testing import CliRunner

from tlc import cli, config_table

EXISTING = {"format": 1, "about": "kept",
            "kernels": {"scale.tl": {"scale": [{"arch": "sm_90a", "constants": {"BLOCK": 32}, "note": "by hand"}],
                                     "untuned": [{"arch": ["sm_80"], "when": {"N": [1, 16]},
                                                  "constants": {"BLOCK": 32}}]},
                        "other.tl": {"k": [{"arch": "sm_80", "constants": {"X": 1}}]}}}


def rule(lo, hi, block, arch="sm_80"):
    return {"arch": [arch], "when": {"N": [lo, hi]}, "constants": {"BLOCK": block}}


def test_merge_keeps_other_rules_and_replaces_the_same_bucket(tmp_path):
    config = tmp_path / "config.json"
    config.write_text(json.dumps(EXISTING))
    config_table.record(config, "scale.tl", "scale", rule(129, 256, 64))
    config_table.record(config, "scale.tl", "scale", rule(257, 512, 64))
    config_table.record(config, "scale.tl", "scale", rule(129, 256, 32))  # tuned again: replaces
    data = json.loads(config.read_text())
    assert data["about"] == "kept"
    assert data["kernels"]["other.tl"] == EXISTING["kernels"]["other.tl"]
    assert data["kernels"]["scale.tl"]["untuned"] == EXISTING["kernels"]["scale.tl"]["untuned"]
    assert data["kernels"]["scale.tl"]["scale"] == [rule(129, 256, 32), rule(257, 512, 64),
                                                    EXISTING["kernels"]["scale.tl"]["scale"][0]]
    # one line per rule, as the shipped files are written, and what the reader takes
    rule_lines = [json.loads(line.strip().rstrip(",")) for line in config.read_text().splitlines()
                  if line.startswith("    {")]
    assert rule_lines == [*data["kernels"]["scale.tl"]["scale"], *data["kernels"]["scale.tl"]["untuned"],
                          *data["kernels"]["other.tl"]["k"]]
    assert config_table.rules_for(str(tmp_path / "scale.tl"), "scale")[0].constants == (("BLOCK", 32),)


def test_a_new_file(tmp_path):
    config = tmp_path / "config.json"
    config_table.record(config, "m.tl", "k", rule(1, 1, 16))
    assert json.loads(config.read_text()) == {"format": 1, "kernels": {"m.tl": {"k": [rule(1, 1, 16)]}}}


WRITER = """
import sys
from pathlib import Path
from tlc import config_table
config, first = Path(sys.argv[1]), int(sys.argv[2])
for i in range(first, first + 25):
    config_table.record(config, "m.tl", "k", {"arch": ["sm_80"], "when": {"N": [i, i]}, "constants": {"B": i}})
"""


def test_two_writers_at_once_both_land(tmp_path):
    config = tmp_path / "config.json"
    writers = [subprocess.Popen([sys.executable, "-c", WRITER, str(config), str(first)]) for first in (1, 101)]
    assert [w.wait(timeout=300) for w in writers] == [0, 0]
    rules = json.loads(config.read_text())["kernels"]["m.tl"]["k"]
    assert sorted(r["constants"]["B"] for r in rules) == [*range(1, 26), *range(101, 126)]
    assert not [p.name for p in tmp_path.iterdir() if p.name.startswith(".tlc-")]  # no temporary file left


def tune(path, *args):
    return CliRunner().invoke(cli.main, ["tune", str(path), "-k", "scale", "--target", "cpu", "--timer", "fake",
                                         "--shape", "N=100", *args])


def test_a_corrupt_config_json_is_reported_and_kept(scale):
    config = scale.parent / "config.json"
    config.write_text('{"format": 1, "kernels": {')
    result = tune(scale)
    assert result.exit_code == 1
    assert result.stderr.endswith(
        f"error: {config}: not readable as JSON (Expecting property name enclosed in double quotes: line 1 column 27 "
        "(char 26)); it was left as it is: fix it or remove it, then tune again\n")
    assert config.read_text() == '{"format": 1, "kernels": {'


def test_a_config_json_of_another_format_is_reported_and_kept(tmp_path):
    config = tmp_path / "config.json"
    config.write_text('{"format": 2}')
    with pytest.raises(config_table.ConfigError, match='expected an object with "format": 1'):
        config_table.record(config, "m.tl", "k", rule(1, 1, 16))
    assert config.read_text() == '{"format": 2}'


def test_a_read_only_folder_is_said_before_measuring(scale):
    scale.parent.chmod(0o555)
    try:
        result = tune(scale)
    finally:
        scale.parent.chmod(0o755)
    assert result.exit_code == 1
    assert result.stdout == ""
    assert result.stderr == (
        f"error: cannot record the tuned configurations in {scale.parent / 'config.json'}: the folder {scale.parent} "
        f"is read-only; give --user-config to record them in your own config.json (read before the folder's), "
        f"{config_table.user_path(str(scale))}, or --no-write to only measure\n")
    assert not (scale.parent / "config.json").exists()
    result = tune(scale, "--user-config", "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["buckets"][0]["config"] == str(config_table.user_path(str(scale)))


def test_record_into_a_read_only_folder(tmp_path):
    folder = tmp_path / "ro"
    folder.mkdir()
    folder.chmod(0o555)
    try:
        with pytest.raises(config_table.ConfigError) as e:
            config_table.record(folder / "config.json", "m.tl", "k", rule(1, 1, 16))
    finally:
        folder.chmod(0o755)
    assert str(e.value) == f"cannot write {folder / 'config.json'}: the folder {folder} is read-only"
