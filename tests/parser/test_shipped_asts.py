"""The std modules' ASTs shipped with tlc (grammar/std_asts/, written by scripts/std-asts): current
for every std module, the parser and the grammar, and exactly what a parse makes (every field,
the spans too, under the import path and the file's own), so that a new process's first call of
a std kernel neither parses nor imports Lark.  Anything else is parsed: a text that is not the
module's, a path outside the std library, a file made by another parser."""
from __future__ import annotations

import os

import pytest
from file_kit import python

from tlc import parser
from tlc.package_data import folder
from tlc.parser import shipped
from tlc.runtime import ir_codec

STD = folder("stdlib")
MODULES = sorted(p.relative_to(STD).as_posix() for p in STD.rglob("*.tl"))


def _encoded(module) -> str:
    return ir_codec.dumps_text(module)  # every field: the nodes' == leaves the spans out


def test_every_std_module_is_shipped_for_its_text():
    """Fails after a change to a std module, the grammar or the parser: run scripts/std-asts."""
    stale = [name for name in MODULES if shipped.module((STD / name).read_text(encoding="utf-8"), shipped.STD + name) is None]
    assert not stale, f"grammar/std_asts/ is stale for {', '.join(stale)}: run scripts/std-asts"
    shipped_files = {p.name for p in (folder("grammar") / shipped.FOLDER).glob("*.ast")}
    assert shipped_files == {os.path.basename(shipped.entry_path(name)) for name in MODULES}


# each module under its import path; under its file's own path (tlc.load's, the path replaced in
# the JSON text, which scripts/std-asts checks for every module) std.gemm and std.math, all in the slow run
CASES = [pytest.param(name, own, marks=[pytest.mark.slow] if own and name not in ("gemm.tl", "math.tl") else [],
                      id=f"{name}-{'file' if own else 'import'}") for name in MODULES for own in (False, True)]


@pytest.mark.parametrize("name,own", CASES)
def test_a_shipped_ast_is_the_parse(name, own):
    text = (STD / name).read_text(encoding="utf-8")
    path = str(STD / name) if own else shipped.STD + name
    found = shipped.module(text, path)
    if found is None:
        pytest.skip("stale: test_every_std_module_is_shipped_for_its_text says so")
    assert _encoded(found) == _encoded(parser._parse(text, path))


def test_anything_else_is_parsed():
    name = "math.tl"
    text = (STD / name).read_text(encoding="utf-8")
    assert shipped.module(text, shipped.STD + name) is not None
    assert shipped.module(text + "\n", shipped.STD + name) is None  # not the module's text
    assert shipped.module(text, "/elsewhere/math.tl") is None  # not a std module
    assert shipped.module(text, shipped.STD + "gemm.tl") is None  # another module's text
    assert shipped.std_name(str(STD / "sub" / "x.tl")) == "sub/x.tl" and shipped.std_name("<string>") is None


def test_a_file_of_another_parser_or_damaged_is_not_used(tmp_path, monkeypatch):
    text = (STD / "math.tl").read_text(encoding="utf-8")
    assert shipped.module(text, "<std>/math.tl") is not None
    monkeypatch.setattr(shipped, "identity", lambda: "another parser")
    assert shipped.module(text, "<std>/math.tl") is None
    monkeypatch.undo()
    real = open(shipped.entry_path("math.tl"), "rb").read()
    head, _, body = real[len(shipped.MAGIC):].partition(b"\n")
    for damaged in (real[:-10], shipped.MAGIC + head + b"\n" + b"x" * len(body), b"not a file of asts",
                    shipped.MAGIC + b"{}\n" + body):
        (tmp_path / shipped.FOLDER).mkdir(exist_ok=True)
        (tmp_path / shipped.FOLDER / "math.tl.ast").write_bytes(damaged)
        monkeypatch.setattr(shipped, "folder_path", lambda name: str(tmp_path) if name == "grammar" else str(STD))
        assert shipped.module(text, "<std>/math.tl") is None
        path = "<std>/damaged-math.tl"  # parse() keeps what it parsed by path and text
        assert _encoded(parser.parse(text, path)) == _encoded(parser._parse(text, path))
        monkeypatch.undo()


def test_a_new_process_loads_a_std_module_without_lark(tmp_path):
    """tlc.load of std.gemm (and std.math, which it imports) with an empty cache: no parse, so
    neither Lark nor its tables."""
    probe = ("import sys, tlc\n"
             "mod = tlc.load('std.gemm', target='cpu')\n"
             "print(sorted(m for m in ('lark', 'tlc.parser.lark_parser') if m in sys.modules), 'matmul' in mod.kernels)\n")
    result = python(probe, env={"TLC_CACHE_DIR": str(tmp_path)})
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["[]", "True"]
