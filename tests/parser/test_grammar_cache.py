"""The on-disk cache of the parser tables (tlc/parser/grammar_cache.py): JSON data checked by
its hash before use, never a pickle; damaged, foreign and non-regular entries are ignored and
replaced; a cache that cannot be written costs only the rebuild."""
from __future__ import annotations

import hashlib
import importlib
import json
import os
import pickle

import pytest

from file_kit import fifo, is_char_device, python

gc = importlib.import_module("tlc.parser.grammar_cache")
lp = importlib.import_module("tlc.parser.lark_parser")

_PROBE = ("from tlc.parser import parse\n"
          "print(parse('x = 1 + 2\\n', 'p.tl').consts[0].value.op)\n")


def _run(cache_dir):
    return python(_PROBE, env={"TLC_CACHE_DIR": str(cache_dir)})


def _ok(result, stderr: str = "") -> bool:
    return result.returncode == 0 and result.stdout == "+\n" and stderr in result.stderr and (stderr or not result.stderr)


def _entry(cache_dir):
    assert _ok(_run(cache_dir))
    (entry,) = cache_dir.glob("grammar-*.json")
    return entry


def test_cache_is_written_then_used(tmp_path):
    entry = _entry(tmp_path)
    assert entry.read_bytes().startswith(b"TLCGRAMMAR1 ")
    stamp = entry.stat().st_mtime_ns
    assert _ok(_run(tmp_path))
    assert entry.stat().st_mtime_ns == stamp  # read, not rebuilt


def _grammar_and_options():
    from importlib import resources
    from tlc.parser.lexer import TileLexer

    grammar = resources.files("tlc").joinpath("grammar/tile.lark").read_text(encoding="utf-8")
    return grammar, dict(parser="lalr", lexer=TileLexer, keep_all_tokens=True, maybe_placeholders=True, start="start")


def _serialized(parser, lexer):
    data, memo = parser.memo_serialize([gc.TerminalDef, gc.Rule])
    data["options"] = {k: v for k, v in data["options"].items() if k not in gc._LOAD_TIME}
    return json.dumps(gc._encode({"data": data, "memo": memo}, lexer), sort_keys=True)


def test_a_loaded_parser_is_the_built_one_and_no_pickle_is_read(tmp_path, monkeypatch):
    """The entry round-trips Lark's whole serialized parser, and loading it neither builds the
    tables again nor touches pickle."""
    monkeypatch.setenv("TLC_CACHE_DIR", str(tmp_path))
    grammar, options = _grammar_and_options()
    callbacks = lambda: dict(postlex=lp.TileIndenter(), transformer=lp.ToAst())  # noqa: E731
    built = gc.cached_parser(grammar, options, callbacks())

    def refuse(*args, **kwargs):
        raise AssertionError("pickle used")

    class NoBuild:  # loads as Lark does, never builds
        _load_from_dict = staticmethod(gc.Lark._load_from_dict)

        def __init__(self, *args, **kwargs):
            raise AssertionError("built again")

    for name in ("load", "loads", "Unpickler"):
        monkeypatch.setattr(pickle, name, refuse)
    monkeypatch.setattr(gc, "Lark", NoBuild)
    loaded = gc.cached_parser(grammar, options, callbacks())
    assert _serialized(loaded, options["lexer"]) == _serialized(built, options["lexer"])
    assert loaded.parse("x = 1 + 2\n").consts[0].value.op == "+"


def test_a_pickle_in_the_cache_is_never_run(tmp_path):
    """Even under a header whose hash matches, the body is parsed as JSON: a pickle that would
    create a file when unpickled creates nothing, and the entry is replaced."""
    entry = _entry(tmp_path)
    marker = tmp_path / "pwned"

    class Payload:
        def __reduce__(self):
            return (open, (str(marker), "w"))

    body = pickle.dumps(Payload())
    key = _key_of(entry)
    entry.write_bytes(b"TLCGRAMMAR1 " + gc._digest(key, body) + b"\n" + body)
    assert _ok(_run(tmp_path))
    assert not marker.exists()
    assert _sound(entry)


def _sound(entry) -> bool:
    head, _, body = entry.read_bytes().partition(b"\n")
    return len(body) > 10000 and head == b"TLCGRAMMAR1 " + gc._digest(_key_of(entry), body)


def _key_of(entry) -> str:
    grammar, options = _grammar_and_options()
    key = gc._key(grammar, options)
    assert entry.name == f"grammar-{key[:24]}.json"
    return key


@pytest.mark.parametrize("damage", [
    lambda data, key: b"",
    lambda data, key: b"garbage\n",
    lambda data, key: data[:3000],  # a write cut short
    lambda data, key: data[:-10] + b"0123456789",  # flipped bytes: the hash no longer matches
    # a matching hash over a body this Lark cannot load (a foreign or hand-made entry)
    lambda data, key: b"TLCGRAMMAR1 " + gc._digest(key, b'{"data":{}}') + b'\n{"data":{}}',
    lambda data, key: b"TLCGRAMMAR1 " + gc._digest(key, b"[1,") + b"\n[1,",
])
def test_damaged_cache_is_ignored_and_rewritten(tmp_path, damage):
    entry = _entry(tmp_path)
    entry.write_bytes(damage(entry.read_bytes(), _key_of(entry)))
    assert _ok(_run(tmp_path))
    assert _sound(entry)  # written again
    stamp = entry.stat().st_mtime_ns
    assert _ok(_run(tmp_path))
    assert entry.stat().st_mtime_ns == stamp


@pytest.mark.parametrize("kind", ["fifo", "dev-zero", "directory"])
def test_an_entry_that_is_not_a_regular_file_is_never_read(tmp_path, kind):
    """A FIFO would block the reader, /dev/zero would never end: both are refused on the open
    descriptor, with a warning, and replaced by the rebuilt entry."""
    entry = _entry(tmp_path)
    entry.unlink()
    {"fifo": fifo, "dev-zero": lambda p: os.symlink("/dev/zero", p), "directory": os.mkdir}[kind](entry)
    what = {"fifo": "a FIFO", "dev-zero": "a symbolic link", "directory": "a directory"}[kind]
    result = _run(tmp_path)
    assert _ok(result, f"ignoring the parser cache entry {entry}: it is {what}, not a regular file")
    assert is_char_device("/dev/zero")
    if kind != "directory":  # a directory cannot be renamed over; it is refused every time
        assert entry.is_file() and not entry.is_symlink() and _sound(entry)
        assert _ok(_run(tmp_path))


def test_unusable_cache_directory(tmp_path):
    not_a_dir = tmp_path / "file"
    not_a_dir.write_text("x")
    for where in (not_a_dir, not_a_dir / "sub"):
        assert _ok(_run(where))


def test_read_only_cache_directory(tmp_path, monkeypatch):
    """Simulated (tests may run as root, whom permission bits do not stop): every write fails."""
    import errno

    monkeypatch.setenv("TLC_CACHE_DIR", str(tmp_path))

    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(gc, "replace_atomically", full)
    grammar, options = _grammar_and_options()
    parser = gc.cached_parser(grammar, options, dict(postlex=lp.TileIndenter(), transformer=lp.ToAst()))
    assert parser.parse("x = 1\n").consts[0].name == "x"
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
