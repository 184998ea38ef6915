"""The record of which std operators have a passing table-driven test: stdlib/tested.json,
which `tlc ops` reads to count operators (tlc/ops.py).

Each module's table-driven test file (tests/stdlib/test_elementwise.py, ...) ends with a test
that calls `check_or_record(module, table, passed, file)`: `table` maps each operator of its
table to the dtypes its row tests, `passed` the rows that passed in this run.
- When every row passed, the module's entry in tested.json must equal the table (an operator
  added to the table, or removed, without recording fails here), or, with TLC_RECORD_TESTED=1
  in the environment, the entry is rewritten from this run.
- When some row did not pass in this run (it failed: its own test says why; or it was
  deselected), nothing is compared or written: the check skips.
So an operator is in tested.json only if a full run of its table passed, and a table that no
longer matches tested.json fails its suite.
"""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
REGISTRY = ROOT / "stdlib" / "tested.json"


def load() -> dict:
    return json.loads(REGISTRY.read_text()) if REGISTRY.exists() else {}


def dumps(registry: dict) -> str:
    """tested.json's text: one line an operator, so that a diff shows which changed."""
    lines = []
    for module, entry in sorted(registry.items()):
        ops = ",\n".join(f"   {json.dumps(name)}: {json.dumps(dtypes)}" for name, dtypes in sorted(entry["ops"].items()))
        lines.append(f' {json.dumps(module)}: {{\n  "test": {json.dumps(entry["test"])},\n  "ops": {{\n{ops}\n  }}\n }}')
    return "{\n" + ",\n".join(lines) + "\n}\n"


def check_or_record(module: str, table: dict, passed: dict, test_file: str) -> None:
    missing = sorted(set(table) - set(passed))
    if missing:
        pytest.skip(f"{len(missing)} of {len(table)} rows did not pass in this run ({', '.join(missing[:5])}...): "
                    "nothing to compare with tested.json")
    entry = {"test": str(Path(test_file).resolve().relative_to(ROOT)),
             "ops": {name: sorted(dtypes) for name, dtypes in sorted(table.items())}}
    registry = load()
    if os.environ.get("TLC_RECORD_TESTED") == "1":
        registry[module] = entry
        REGISTRY.write_text(dumps(registry))
        return
    recorded = registry.get(module, {}).get("ops", {})
    added = sorted(set(entry["ops"]) - set(recorded))
    gone = sorted(set(recorded) - set(entry["ops"]))
    changed = sorted(k for k in set(recorded) & set(entry["ops"]) if recorded[k] != entry["ops"][k])
    assert not (added or gone or changed), (
        f"stdlib/tested.json is out of date for {module}: not recorded {added}, no longer tested {gone}, "
        f"dtypes changed {changed}; rerun with TLC_RECORD_TESTED=1 python -m pytest {entry['test']}")
