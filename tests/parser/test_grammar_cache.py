"""The on-disk cache of the parser tables (tlc/parser/grammar_cache.py): JSON data checked by
its hash before use, never a pickle; damaged, foreign and non-regular entries are ignored and
replaced; a cache that cannot be written costs only the rebuild.

The real grammar is used where it matters (the whole parser round-trips; a second process reads
what the first wrote); the cache's mechanics are tested on a tiny grammar that builds in
milliseconds."""
from __future__ import annotations

import errno
import hashlib
import importlib
import json
import os
import pickle
import warnings

import pytest

from file_kit import fifo, is_char_device, python

gc = importlib.import_module("tlc.parser.grammar_cache")
lp = importlib.import_module("tlc.parser.lark_parser")

TINY = 'start: NAME ("+" NAME)*\nNAME: /[a-z]+/\n%ignore " "\n'
TINY_OPTIONS = {"parser": "lalr", "lexer": "basic"}


def tiny(cache_dir, monkeypatch):
    """The tiny grammar's parser through the cache in `cache_dir`."""
    monkeypatch.setenv("TLC_CACHE_DIR", str(cache_dir))
    parser = gc.cached_parser(TINY, TINY_OPTIONS, {})
    assert [str(t) for t in parser.parse("a + bc").children] == ["a", "bc"]
    return parser


def entry_of(cache_dir):
    (entry,) = cache_dir.glob("grammar-*.json")
    return entry


def sound(entry, grammar=TINY, options=TINY_OPTIONS) -> bool:
    key = gc._key(grammar, options)
    head, _, body = entry.read_bytes().partition(b"\n")
    return entry.name == f"grammar-{key[:24]}.json" and head == gc._MAGIC + b" " + gc._digest(key, body)


class NoBuild:
    """In place of Lark: loads as Lark does, fails if asked to build."""
    _load_from_dict = staticmethod(gc.Lark._load_from_dict)

    def __init__(self, *args, **kwargs):
        raise AssertionError("built again")


# ---- the real parser --------------------------------------------------------------------------

def _probe(cache_dir):
    result = python(_TINY_PROBE, env={"TLC_CACHE_DIR": str(cache_dir)})
    assert (result.returncode, result.stdout, result.stderr) == (0, "2\n", "")


def test_a_second_process_reads_what_the_first_wrote(tmp_path):
    """(tlc's own grammar comes from the tables shipped with it: test_grammar_tables.py)"""
    _probe(tmp_path)
    entry = entry_of(tmp_path)
    stamp = entry.stat().st_mtime_ns
    _probe(tmp_path)
    assert entry.stat().st_mtime_ns == stamp  # read, not rebuilt
    assert entry.read_bytes().startswith(gc._MAGIC + b" ")


def _real_grammar():
    from tlc import package_data
    from tlc.parser.lexer import TileLexer

    grammar = package_data.folder("grammar").joinpath("tile.lark").read_text(encoding="utf-8")
    return grammar, dict(parser="lalr", lexer=TileLexer, keep_all_tokens=True, maybe_placeholders=True, start="start")


def _serialized(parser, lexer):
    data, memo = parser.memo_serialize([gc.TerminalDef, gc.Rule])
    data["options"] = {k: v for k, v in data["options"].items() if k not in gc._LOAD_TIME}
    return json.dumps(gc._encode({"data": data, "memo": memo}, lexer), sort_keys=True)


def test_a_loaded_parser_is_the_built_one_and_no_pickle_is_read(tmp_path, monkeypatch):
    """The entry round-trips Lark's whole serialized parser (with tlc's lexer class), and
    loading it neither builds the tables again nor touches pickle."""
    monkeypatch.setenv("TLC_CACHE_DIR", str(tmp_path))
    grammar, options = _real_grammar()
    callbacks = lambda: dict(postlex=lp.TileIndenter(), transformer=lp.ToAst())  # noqa: E731
    built = gc.cached_parser(grammar, options, callbacks())

    def refuse(*args, **kwargs):
        raise AssertionError("pickle used")

    for name in ("load", "loads", "Unpickler"):
        monkeypatch.setattr(pickle, name, refuse)
    monkeypatch.setattr(gc, "Lark", NoBuild)
    loaded = gc.cached_parser(grammar, options, callbacks())
    assert _serialized(loaded, options["lexer"]) == _serialized(built, options["lexer"])
    assert loaded.parse("x = 1 + 2\n").consts[0].value.op == "+"
    assert sound(entry_of(tmp_path), grammar, options)


# ---- the cache's mechanics, on the tiny grammar ----------------------------------------------

def test_written_then_used(tmp_path, monkeypatch):
    tiny(tmp_path, monkeypatch)
    assert sound(entry_of(tmp_path))
    monkeypatch.setattr(gc, "Lark", NoBuild)
    tiny(tmp_path, monkeypatch)


@pytest.mark.parametrize("lexer", ["basic", "contextual"])
def test_the_loaded_states_are_the_built_ones(tmp_path, monkeypatch, lexer):
    """The flat states (_flat_states) come back as Lark's own: the loaded table's actions name
    the same states and the same rules (a contextual lexer reads them while Lark loads)."""
    monkeypatch.setenv("TLC_CACHE_DIR", str(tmp_path))
    options = {**TINY_OPTIONS, "lexer": lexer}
    built = gc.cached_parser(TINY, options, {})
    monkeypatch.setattr(gc, "Lark", NoBuild)
    loaded = gc.cached_parser(TINY, options, {})

    def actions(parser):
        table = parser.parser.parser.parser.parse_table
        return {s: {t: (str(a), str(arg)) for t, (a, arg) in row.items()} for s, row in table.states.items()}

    assert actions(loaded) == actions(built)
    assert [str(t) for t in loaded.parse("a + bc + d").children] == ["a", "bc", "d"]
    assert '"~states"' in entry_of(tmp_path).read_text()


def test_a_pickle_in_the_cache_is_never_run(tmp_path, monkeypatch):
    """Even under a header whose hash matches, the body is parsed as JSON: a pickle that would
    create a file when unpickled creates nothing, and the entry is replaced."""
    tiny(tmp_path, monkeypatch)
    entry, marker = entry_of(tmp_path), tmp_path / "pwned"

    class Payload:
        def __reduce__(self):
            return (open, (str(marker), "w"))

    body = pickle.dumps(Payload())
    entry.write_bytes(gc._MAGIC + b" " + gc._digest(gc._key(TINY, TINY_OPTIONS), body) + b"\n" + body)
    tiny(tmp_path, monkeypatch)
    assert not marker.exists() and sound(entry)


@pytest.mark.parametrize("damage", [
    lambda data, key: b"",
    lambda data, key: b"garbage\n",
    lambda data, key: data[:len(data) // 2],  # a write cut short
    lambda data, key: data[:-10] + b"0123456789",  # changed bytes: the hash no longer matches
    # a matching hash over a body this Lark cannot load (a foreign or hand-made entry)
    lambda data, key: gc._MAGIC + b" " + gc._digest(key, b'{"data":{}}') + b'\n{"data":{}}',
    lambda data, key: gc._MAGIC + b" " + gc._digest(key, b"[1,") + b"\n[1,",
])
def test_damaged_entry_is_ignored_and_rewritten(tmp_path, monkeypatch, damage):
    tiny(tmp_path, monkeypatch)
    entry = entry_of(tmp_path)
    entry.write_bytes(damage(entry.read_bytes(), gc._key(TINY, TINY_OPTIONS)))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        tiny(tmp_path, monkeypatch)
    assert sound(entry)  # written again, and used from then on
    monkeypatch.setattr(gc, "Lark", NoBuild)
    tiny(tmp_path, monkeypatch)


# In a child process with a time limit: a regression blocks on the FIFO or reads /dev/zero
# without end, which must fail the test, not hang the suite or fill the memory.
_TINY_PROBE = ("import importlib, sys\n"
               "gc = importlib.import_module('tlc.parser.grammar_cache')\n"
               f"p = gc.cached_parser({TINY!r}, {TINY_OPTIONS!r}, {{}})\n"
               "print(len(p.parse('a + b').children))\n")


@pytest.mark.parametrize("kind", ["fifo", "dev-zero", "directory"])
def test_an_entry_that_is_not_a_regular_file_is_never_read(tmp_path, monkeypatch, kind):
    """Refused with a warning and replaced by the rebuilt entry (a directory cannot be renamed
    over: it is refused every time)."""
    tiny(tmp_path, monkeypatch)
    entry = entry_of(tmp_path)
    entry.unlink()
    {"fifo": fifo, "dev-zero": lambda p: os.symlink("/dev/zero", p), "directory": os.mkdir}[kind](entry)
    what = {"fifo": "a FIFO", "dev-zero": "a symbolic link", "directory": "a directory"}[kind]
    result = python(_TINY_PROBE, env={"TLC_CACHE_DIR": str(tmp_path)})
    assert (result.returncode, result.stdout) == (0, "2\n"), result.stderr
    assert f"CacheWarning: tlc: ignoring the parser cache entry {entry}: it is {what}, not a regular file" \
        in result.stderr
    assert is_char_device("/dev/zero")
    if kind != "directory":
        assert entry.is_file() and not entry.is_symlink() and sound(entry)


def test_unusable_cache_directory(tmp_path, monkeypatch):
    not_a_dir = tmp_path / "file"
    not_a_dir.write_text("x")
    for where in (not_a_dir, not_a_dir / "sub"):
        tiny(where, monkeypatch)


@pytest.mark.parametrize("err", [errno.EACCES, errno.EROFS, errno.ENOSPC])
def test_a_cache_that_cannot_be_written_costs_only_the_build(tmp_path, monkeypatch, err):
    """Simulated (tests may run as root, whom permission bits do not stop): every write fails,
    the parser is built each time, nothing is left behind, and nothing is said."""
    def fail(*args, **kwargs):
        raise OSError(err, os.strerror(err))

    monkeypatch.setattr(gc, "replace_atomically", fail)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        tiny(tmp_path, monkeypatch)
        tiny(tmp_path, monkeypatch)
    assert list(tmp_path.iterdir()) == []


def test_a_changed_grammar_gets_its_own_cache_entry():
    """The grammar file stays the source of truth: an entry is named, and its hash taken, by the
    grammar's text, the options and Lark's and Python's versions."""
    options = {"parser": "lalr"}
    assert gc._key("a: B\n", options) != gc._key("a: C\n", options)
    assert gc._key("a: B\n", options) == gc._key("a: B\n", options)
    assert gc._key("a: B\n", options) != gc._key("a: B\n", {"parser": "earley"})
    assert gc._digest("k1", b"body") != gc._digest("k2", b"body")
    assert gc._digest("k1", b"body") == hashlib.sha256(b"k1\0body").hexdigest().encode()
