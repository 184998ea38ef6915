"""The on-disk cache of the parser's LALR tables: JSON data, never a pickle.

Building the tables from `grammar/tile.lark` takes half a second to 1.5 s, more than the rest
of a `tlc check`; loading them from data takes a tenth of that.  tlc's own grammar ships its
tables (`grammar/tile.tables.json`, scripts/parser-tables, in this format under a key without
Python's version), used when their key matches; this cache holds any other grammar's, or the
tables of a grammar changed since they were made.  The entry lives in the user's cache
directory (`$TLC_CACHE_DIR`, as the kernel cache), named by a hash of what it was built from:
the grammar text, the options, Lark's version and Python's.

Why not Lark's own `cache=`: it is a pickle, and it is unpickled before its hash is compared, so
any file placed in the cache directory would run as the user.  Here the entry is Lark's
`memo_serialize()` data written as JSON (with the few tuples, integer keys and the lexer class
tagged, see `_encode`, and the LALR states as flat lists of numbers, `_flat_states`), under a header line holding the SHA-256 of the key and the body.  Nothing
is decoded before that hash matches, and decoding builds only Lark's own grammar objects.  An
entry that is damaged, stale, not a regular file (a FIFO, a link to /dev/zero) or not loadable
by this Lark is ignored and replaced; an entry that cannot be written only costs the rebuild.
"""
from __future__ import annotations

import hashlib
import json
import sys
import warnings

import lark
from lark import Lark
from lark.grammar import Rule
from lark.lexer import TerminalDef

from ..cachedir import CacheWarning, cache_dir, replace_atomically
from ..files import NotRegularFile, read_regular

_MAGIC = b"TLCGRAMMAR2"  # 2: the LALR states flat (_flat_states)
_LIMIT = 16 << 20  # bytes; the entry is about 1 MB
# The options Lark takes at load time rather than from the entry (Lark's `_LOAD_ALLOWED_OPTIONS`).
_LOAD_TIME = frozenset(getattr(lark.lark, "_LOAD_ALLOWED_OPTIONS", ("postlex", "transformer")))


def cached_parser(grammar: str, options: dict, load_time: dict, shipped=None) -> Lark:
    """The LALR parser of `grammar`: from `shipped` (tables made by `shipped_tables` and
    installed with tlc) when they were made from this grammar by this Lark, else from the cache
    when a sound entry exists, else built (and stored).  `load_time` holds the options that
    are objects (postlex, transformer): never stored, given to each parser."""
    if shipped is not None:
        parser = _load(shipped, _key(grammar, options, python=False), options, load_time)
        if parser is not None:
            return parser
    key = _key(grammar, options)
    path = _entry_path(key)
    if path is not None:
        parser = _load(path, key, options, load_time)
        if parser is not None:
            return parser
    parser = Lark(grammar, **options, **load_time)
    if path is not None:
        _store(path, key, parser, options)
    return parser


def shipped_tables(grammar: str, options: dict, load_time: dict) -> bytes:
    """The tables of `grammar` built now, as the file `cached_parser` takes as `shipped`: an
    entry of this cache whose key leaves out Python's version (Lark's data does not depend on
    it; scripts/parser-tables writes grammar/tile.tables.json)."""
    return _entry(_key(grammar, options, python=False), Lark(grammar, **options, **load_time), options)


def shipped_key_matches(path, grammar: str, options: dict) -> bool:
    """Whether the tables at `path` were made from `grammar` with `options` by this Lark."""
    head, _, body = read_regular(path, follow_symlinks=False, limit=_LIMIT).partition(b"\n")
    return head == _MAGIC + b" " + _digest(_key(grammar, options, python=False), body)


def _key(grammar: str, options: dict, python: bool = True) -> str:
    shown = {k: (f"{v.__module__}.{v.__qualname__}" if isinstance(v, type) else v) for k, v in options.items()}
    doc = {"format": _MAGIC.decode(), "grammar": grammar, "options": shown, "lark": lark.__version__}
    if python:
        doc["python"] = list(sys.version_info[:2])
    return hashlib.sha256(json.dumps(doc, sort_keys=True, default=repr).encode()).hexdigest()


def _entry_path(key: str):
    try:
        return cache_dir() / f"grammar-{key[:24]}.json"
    except RuntimeError:  # no home directory: no cache
        return None


def _digest(key: str, body: bytes) -> bytes:
    return hashlib.sha256(key.encode() + b"\0" + body).hexdigest().encode()


def _load(path, key: str, options: dict, load_time: dict) -> Lark | None:
    try:
        raw = read_regular(path, follow_symlinks=False, limit=_LIMIT)
    except NotRegularFile as e:
        warnings.warn(f"tlc: ignoring the parser cache entry {e.path}: it is {e.kind}, not a regular file",
                      CacheWarning, stacklevel=4)
        return None
    except OSError:  # missing or unreadable: not cached
        return None
    head, _, body = raw.partition(b"\n")
    if head != _MAGIC + b" " + _digest(key, body):
        return None
    try:
        doc = json.loads(body, object_hook=_decoder(options["lexer"]))
        return _from_dict(doc, options, load_time)
    except Exception:  # noqa: BLE001 - sound bytes this Lark cannot load: rebuild and replace
        return None


def _store(path, key: str, parser: Lark, options: dict) -> None:
    try:
        replace_atomically(path, _entry(key, parser, options))
    except (OSError, TypeError, ValueError):  # unwritable, full, or data JSON cannot hold
        pass


def _entry(key: str, parser: Lark, options: dict) -> bytes:
    """The header line (magic and digest) and the JSON body of `parser`'s tables."""
    data, memo = parser.memo_serialize([TerminalDef, Rule])
    data["options"] = {k: v for k, v in data["options"].items() if k not in _LOAD_TIME}
    encoded = _encode({"data": data, "memo": memo}, options["lexer"])
    tables = encoded["data"].get("parser", {}).get("parser")
    if isinstance(tables, dict) and "states" in tables:
        tables["states"] = _flat_states(data["parser"]["parser"]["states"]) or tables["states"]
    body = json.dumps(encoded, separators=(",", ":")).encode()
    return _MAGIC + b" " + _digest(key, body) + b"\n" + body


def _encode(x, lexer_class):
    """`x` as JSON data: a tuple, a dict with keys other than strings, and the lexer class (the
    only object in Lark's data) become one-key objects tagged with '~'."""
    if x is lexer_class:
        return {"~lexer": 0}
    if isinstance(x, tuple):
        return {"~tuple": [_encode(v, lexer_class) for v in x]}
    if isinstance(x, list):
        return [_encode(v, lexer_class) for v in x]
    if isinstance(x, dict):
        if all(type(k) is str and not k.startswith("~") for k in x):
            return {k: _encode(v, lexer_class) for k, v in x.items()}
        return {"~pairs": [[_encode(k, lexer_class), _encode(v, lexer_class)] for k, v in x.items()]}
    if x is None or type(x) in (str, int, float, bool):
        return x
    raise TypeError(f"{type(x).__name__} is not JSON data")


def _flat_states(states) -> dict | None:
    """The LALR states `{state: {token: (action, arg)}}` (a shift's arg a state, a reduction's
    `{"@": rule}`) as `{"~states": [[state, [token, action, arg, ...]], ...]}`, each reduction's
    arg its rule's number: ~17,000 actions that JSON reads as numbers, where the generic form
    made each a tagged object for the decoder to turn into a tuple (most of the load's time);
    None for tables of another shape."""
    out = []
    for state, actions in states.items() if isinstance(states, dict) else ():
        flat = []
        for token, action in actions.items():
            if not (type(token) is int and isinstance(action, tuple) and len(action) == 2):
                return None
            kind, arg = action
            if kind == 0 and type(arg) is int:
                flat += (token, 0, arg)
            elif kind == 1 and isinstance(arg, dict) and arg.keys() == {"@"} and type(arg["@"]) is int:
                flat += (token, 1, arg["@"])
            else:
                return None
        if type(state) is not int:
            return None
        out.append([state, flat])
    return {"~states": out}


class _Flat(list):
    """The `~states` of an entry as read: [[state, [token, action, arg, ...]], ...]."""


def _from_dict(doc: dict, options: dict, load_time: dict) -> Lark:
    """Lark's parser from an entry's data.  Flat states (`_flat_states`) are handed to Lark
    empty and filled in after: Lark would make each of the ~7,000 reductions' rule again from
    its `{"@": N}` (a generic deserialize call each, most of the load), where here each is the
    rule object Lark has made already, found by its number.  Only where Lark builds nothing
    from the states while it loads (a lexer of tlc's, or `basic`: not `contextual`)."""
    tables = doc["data"].get("parser", {}).get("parser")
    flat = tables.get("states") if isinstance(tables, dict) else None
    if not isinstance(flat, _Flat):
        return Lark._load_from_dict(doc["data"], doc["memo"], **load_time)
    if options["lexer"] == "contextual":
        tables["states"] = {state: {items[i]: (0, items[i + 2]) if items[i + 1] == 0 else (1, {"@": items[i + 2]})
                                    for i in range(0, len(items), 3)} for state, items in flat}
        return Lark._load_from_dict(doc["data"], doc["memo"], **load_time)
    from lark.parsers.lalr_analysis import Reduce, Shift

    tables["states"] = {}
    parser = Lark._load_from_dict(doc["data"], doc["memo"], **load_time)
    rules = {ref["@"]: rule for ref, rule in zip(doc["data"]["rules"], parser.rules)}
    names = tables["tokens"]
    parser.parser.parser.parser.parse_table.states = {
        state: {names[items[i]]: (Shift, items[i + 2]) if items[i + 1] == 0 else (Reduce, rules[items[i + 2]])
                for i in range(0, len(items), 3)} for state, items in flat}
    return parser


def _decoder(lexer_class):
    """The inverse of `_encode`, as json.loads's object_hook (which sees inner objects first)."""
    def hook(obj: dict):
        if len(obj) == 1:
            (tag, value), = obj.items()
            if tag == "~lexer":
                return lexer_class
            if tag == "~tuple":
                return tuple(value)
            if tag == "~pairs":
                return {k: v for k, v in value}
            if tag == "~states":  # _flat_states, made Lark's states by _from_dict
                return _Flat(value)
        return obj
    return hook
