"""The checks every std module's table-driven test makes of the module as a whole (its doc
comments, its nvcc build, its reference page), for the modules whose test calls them
(test_moe.py, test_broadcast.py)."""
from __future__ import annotations

import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "codegen"))  # the nvcc helper
from nvcc import compile_object  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


def defs_without_a_doc_comment(path: str) -> list:
    """The operators and device functions of `path` whose first line under the def is not a
    comment saying what it computes (the reference page reads it)."""
    defs = re.findall(r"^def (\w+)\(.*?\).*?:\n(\s*)(\S)", Path(path).read_text(), re.M | re.S)
    assert defs, f"no def in {path}"
    return [d for d, _, first in defs if first != "#"]


def assert_builds_without_spills(path: str, arch: str, dtype: str, tmp_path, defines: tuple = ()) -> str:
    """Every kernel of the module, for one dtype T (and `defines`: "Q=f8e4m3"), compiles without
    warnings or spills; returns ptxas's log (its -v notes)."""
    from tlc.runner import build

    source, _ = build(path, defines=(f"T={dtype}", *defines), arch=arch)
    log = compile_object(source, arch, tmp_path)
    spills = dict(re.findall(r"Function properties for (\w+)\n\s*\d+ bytes stack frame, (\d+) bytes spill", log))
    assert len([k for k in spills if not k.startswith("_Z")]) == source.count("__global__")  # device functions
    assert {k for k, v in spills.items() if v != "0"} == set(), log
    return log


def assert_reference_page_is_current(path: str) -> None:
    """docs/stdlib/<module>.md is what scripts/stdlib-docs writes from the .tl."""
    from tlc.ops import load_tested, markdown, module_ops

    stem = Path(path).stem
    text = markdown(Path(path), module_ops(Path(path), load_tested()))
    assert (ROOT / "docs" / "stdlib" / f"{stem}.md").read_text() == text, \
        f"docs/stdlib/{stem}.md is stale: run scripts/stdlib-docs {stem}"
