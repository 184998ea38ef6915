"""The program cache's entries (a kernel's IR, its generated code and binary) as JSON data.

Why not pickle: an entry sits in `$TLC_CACHE_DIR`, and an unpickler runs whatever the file asks
of it (a restricted one only narrows what).  JSON cannot name code at all: `loads` builds
containers, numbers, strings and bytes, and tlc's own data classes (dataclasses and enums of a
`tlc.*` module) by filling in their fields, never calling a constructor or anything the entry
names.  A value outside that set is refused when the entry is written, so what is stored is
what comes back (`loads(dumps(x)) == x`, tests/runtime/test_ir_codec.py).
"""
from __future__ import annotations

import base64
import dataclasses
import enum
import importlib
import json

MAGIC = b"tlc-ir-json-1\n"


class NotData(TypeError):
    """`dumps` met a value that is not plain data or a data class of tlc's."""


class BadEntry(ValueError):
    """`loads` met something other than what `dumps` writes."""


def dumps(value) -> bytes:
    return MAGIC + json.dumps(_encode(value), separators=(",", ":"), allow_nan=True).encode()


def dumps_text(value) -> str:
    """`value` as the JSON text that `dumps` writes after its header (for an entry that holds
    several values, each decoded when it is needed: `loads_text`)."""
    return json.dumps(_encode(value), separators=(",", ":"), allow_nan=True)


def loads_text(text: str):
    try:
        tree = json.loads(text)
    except (ValueError, RecursionError, TypeError) as e:
        raise BadEntry(f"damaged entry: {e}") from None
    return _decode(tree)


DEFLATED_LIMIT = 1 << 28  # bytes: what a deflated value may inflate to (no entry of tlc's comes near)


def dumps_deflated(value) -> bytes:
    """`dumps_text(value)` deflated (zlib, its fastest level): a cache entry's parts that are
    decoded only when something needs them (a launch reads and checksums them all the same)."""
    import zlib

    return zlib.compress(dumps_text(value).encode(), 1)


def loads_deflated(data) -> object:
    """The value of `dumps_deflated`'s bytes; BadEntry for anything else (data that is not
    deflated, cut short, runs on past its end, or inflates past `DEFLATED_LIMIT`)."""
    import zlib

    try:
        inflate = zlib.decompressobj()
        text = inflate.decompress(data, DEFLATED_LIMIT)
        if inflate.unconsumed_tail or inflate.unused_data or not inflate.eof:
            raise BadEntry("damaged entry: deflated data cut short, running on or inflating past its limit")
        text = text.decode("utf-8")
    except (zlib.error, UnicodeDecodeError) as e:
        raise BadEntry(f"damaged entry: {e}") from None
    return loads_text(text)


def loads(data: bytes):
    if not data.startswith(MAGIC):
        raise BadEntry("not a tlc IR entry (or one of another format version)")
    try:
        tree = json.loads(data[len(MAGIC):])
    except (ValueError, RecursionError) as e:
        raise BadEntry(f"damaged entry: {e}") from None
    return _decode(tree)


def _class_name(cls) -> str:
    return f"{cls.__module__}:{cls.__qualname__}"


_CLASSES: dict = {}  # name -> (class, its fields' names): each looked up and checked once


def _data_class(name: str):
    """The tlc data class `module:qualname`, or BadEntry: nothing else is ever looked up."""
    found = _CLASSES.get(name)
    if found is None:
        cls = _look_up(name)
        found = _CLASSES[name] = (cls, frozenset(f.name for f in dataclasses.fields(cls))
                                  if dataclasses.is_dataclass(cls) else None)
    return found


def _look_up(name: str):
    module, _, qualname = name.partition(":")
    if not (module == "tlc" or module.startswith("tlc.")) or not all(p.isidentifier() for p in qualname.split(".")):
        raise BadEntry(f"{name} is not a data class of tlc's")
    try:
        obj = importlib.import_module(module)
        for part in qualname.split("."):
            obj = getattr(obj, part)
    except (ImportError, AttributeError):
        raise BadEntry(f"{name} is not a data class of tlc's") from None
    if not (isinstance(obj, type) and obj.__module__ == module and
            (dataclasses.is_dataclass(obj) or issubclass(obj, enum.Enum))):
        raise BadEntry(f"{name} is not a data class of tlc's")
    return obj


def _encode(v):
    if v is None or isinstance(v, (bool, str)) or type(v) in (int, float):
        return v
    if isinstance(v, enum.Enum):
        _check_tlc(type(v))
        return {"$enum": _class_name(type(v)), "name": v.name}
    if dataclasses.is_dataclass(v) and not isinstance(v, type):
        _check_tlc(type(v))
        return {"$data": _class_name(type(v)),
                "fields": {f.name: _encode(getattr(v, f.name)) for f in dataclasses.fields(v)}}
    if isinstance(v, (bytes, bytearray)):
        return {"$bytes": base64.b64encode(bytes(v)).decode()}
    if type(v) is tuple:
        return {"$tuple": [_encode(x) for x in v]}
    if type(v) is list:
        return [_encode(x) for x in v]
    if type(v) in (set, frozenset):
        return {"$" + type(v).__name__: [_encode(x) for x in v]}
    if type(v) is dict:
        return {"$dict": [[_encode(k), _encode(x)] for k, x in v.items()]}
    raise NotData(f"the program cache stores data only, not {type(v).__module__}.{type(v).__qualname__}")


def _check_tlc(cls) -> None:
    if not (cls.__module__ == "tlc" or cls.__module__.startswith("tlc.")):
        raise NotData(f"the program cache stores tlc's data classes only, not {_class_name(cls)}")


_SCALARS = frozenset({str, int, float, bool, type(None)})  # what JSON gives that stands for itself


_new, _set = object.__new__, object.__setattr__


def _decode(t):
    kind = type(t)
    if kind in _SCALARS:
        return t
    if kind is list:
        return [x if type(x) in _SCALARS else _decode(x) for x in t]
    if kind is not dict or len(t) not in (1, 2):
        raise BadEntry("damaged entry: an object that dumps does not write")
    try:
        name = t.get("$data")
        if name is not None:
            cls, fields = _CLASSES.get(name) or _data_class(name)
            values = t["fields"]
            if fields is None or type(values) is not dict or values.keys() != fields:
                raise BadEntry(f"damaged entry: the fields of {name} differ from this tlc's")
            obj = _new(cls)  # fields filled in as pickle does: no constructor runs
            for field, value in values.items():  # most are names and numbers: no call for those
                _set(obj, field, value if type(value) in _SCALARS else _decode(value))
            return obj
        if "$enum" in t:
            cls, _ = _data_class(t["$enum"])
            return cls[t["name"]]
        (tag, value), = t.items()
        if tag == "$bytes":
            return base64.b64decode(value, validate=True)
        items = [x if type(x) in _SCALARS else _decode(x) for x in value]
        if tag == "$tuple":
            return tuple(items)
        if tag == "$set":
            return set(items)
        if tag == "$frozenset":
            return frozenset(items)
        if tag == "$dict":
            return {k: x for k, x in items}
    except BadEntry:
        raise
    except (KeyError, TypeError, ValueError) as e:
        raise BadEntry(f"damaged entry: {type(e).__name__}: {e}") from None
    raise BadEntry("damaged entry: an object that dumps does not write")
