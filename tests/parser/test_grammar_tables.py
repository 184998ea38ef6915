"""The parser's LALR tables shipped with tlc (grammar/tile.tables.json, written by
scripts/parser-tables): current for grammar/tile.lark and the installed Lark, so that a new
process with an empty cache builds no tables (1.45 s on the H200), and loaded into the parser
that building would make.  Stale tables are never used: tlc builds the tables instead."""
from __future__ import annotations

import importlib
import json

from file_kit import python

from tlc.package_data import folder, grammar_text

gc = importlib.import_module("tlc.parser.grammar_cache")
lp = importlib.import_module("tlc.parser.lark_parser")


def test_the_shipped_tables_are_the_grammars():
    """Fails after a change to grammar/tile.lark or to Lark's version: run scripts/parser-tables."""
    options, _ = lp.parser_options()
    assert gc.shipped_key_matches(folder("grammar") / lp.TABLES, grammar_text(), options), \
        "grammar/tile.tables.json is stale: run scripts/parser-tables"


def test_a_new_process_builds_no_tables_and_writes_no_cache(tmp_path):
    probe = ("import lark, json\n"
             "built = []\n"
             "real = lark.Lark.__init__\n"
             "lark.Lark.__init__ = lambda self, *a, **k: built.append(1) or real(self, *a, **k)\n"
             "from tlc.parser import parse\n"
             "op = parse('x = 1 + 2\\n', 'p.tl').consts[0].value.op\n"
             "print(json.dumps([op, len(built)]))\n")
    result = python(probe, env={"TLC_CACHE_DIR": str(tmp_path)})
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == ["+", 0]
    assert not list(tmp_path.glob("grammar-*.json"))


def test_stale_tables_are_not_used(tmp_path, monkeypatch):
    """Tables of another grammar text are passed over: the parser is built (and cached)."""
    monkeypatch.setenv("TLC_CACHE_DIR", str(tmp_path))
    options, callbacks = lp.parser_options()
    grammar = grammar_text() + "\n// changed\n"
    parser = gc.cached_parser(grammar, options, callbacks, shipped=folder("grammar") / lp.TABLES)
    assert parser.parse("x = 1 + 2\n").consts[0].value.op == "+"
    assert len(list(tmp_path.glob("grammar-*.json"))) == 1


def test_the_shipped_parser_is_the_built_one(tmp_path, monkeypatch):
    """The same grammar symbols, rules and terminals, and the same parse of the standard library."""
    monkeypatch.setenv("TLC_CACHE_DIR", str(tmp_path))
    options, callbacks = lp.parser_options()
    shipped = gc.cached_parser(grammar_text(), options, callbacks, shipped=folder("grammar") / lp.TABLES)
    built = gc.Lark(grammar_text(), **options, **lp.parser_options()[1])
    assert sorted(map(str, shipped.rules)) == sorted(map(str, built.rules))
    assert sorted(t.name for t in shipped.terminals) == sorted(t.name for t in built.terminals)
    for path in sorted(folder("stdlib").glob("*.tl"))[:6]:
        text = path.read_text()
        assert repr(shipped.parse(text)) == repr(built.parse(text)), path.name
