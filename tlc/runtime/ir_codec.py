"""The program cache's entries (a kernel's IR, its generated code and binary) as JSON data.

Why not pickle: an entry sits in `$TLC_CACHE_DIR`, and an unpickler runs whatever the file asks
of it (a restricted one only narrows what).  JSON cannot name code at all: `loads` builds
containers, numbers, strings and bytes, and tlc's own data classes (dataclasses and enums of a
`tlc.*` module) by filling in their fields, never calling a constructor or anything the entry
names.  A value outside that set is refused when the entry is written, so what is stored is
what comes back (`loads(dumps(x)) == x`, tests/runtime/test_ir_codec.py).
"""
from __future__ import annotations

import dataclasses
import enum
import importlib
import json
import sys

MAGIC = b"tlc-ir-json-3\n"


class NotData(TypeError):
    """`dumps` met a value that is not plain data or a data class of tlc's."""


class BadEntry(ValueError):
    """`loads` met something other than what `dumps` writes."""


# The JSON: {"$classes": [[CLASS, [FIELD, ...]], ...], "$value": VALUE}, where CLASS is a data
# class's "module:qualname" with its fields' names in order, each class once; an instance in
# VALUE is {"$d": [its class's place in the table, each field's value in that order]}.  The
# table is checked against this tlc's classes once per value, so an instance costs a list and
# no field names (std.gemm's signature: 8 KB of JSON rather than 13, decoded in 30% less time).
# Tuples, sets, frozensets, dicts and bytes are {"$tuple": [...]}, {"$set": [...]},
# {"$frozenset": [...]}, {"$dict": [[key, value], ...]}, {"$bytes": base64}; an enum member
# {"$enum": CLASS, "name": NAME}; lists, strings, numbers, booleans and null stand for themselves.
# A data class instance met again (the same object: the IR's dtypes, spans and shapes are shared)
# is {"$r": N}, the Nth instance written, counted as each is finished: it decodes to the same
# object, as it was, and only one finished before it can be named, so no entry makes a cycle
# (std.gemm's launch head: 32 instances and 24 references, where format 2 wrote 56 instances).


def dumps(value) -> bytes:
    return MAGIC + dumps_text(value).encode()


def dumps_text(value) -> str:
    """`value` as the JSON text that `dumps` writes after its header (for an entry that holds
    several values, each decoded when it is needed: `loads_text`)."""
    table: dict = {}  # class -> (its place, its fields' names)
    tree = _encode(value, table, {})
    classes = [[_class_name(cls), list(names)] for cls, (_, names) in table.items()]
    return json.dumps({"$classes": classes, "$value": tree}, separators=(",", ":"), allow_nan=True)


def loads_text(text: str | bytes):
    if type(text) is not str:
        try:
            text = text.decode("utf-8")  # what dumps_text's text becomes (json.loads would guess)
        except (UnicodeDecodeError, AttributeError):
            return _loads_document(text)
    if text.startswith(_HEAD):
        value = _loads_compact(text)
        if value is not _MISSING:
            return value
    return _loads_document(text)


# dumps_text's layout: the class table, then the value, without spaces
_HEAD, _VALUE = '{"$classes":', ',"$value":'
_MISSING = object()  # no value: another layout (_loads_compact), neither enum nor bytes (_enum_or_bytes)
_SCAN = json.JSONDecoder()


def _loads_compact(text: str):
    """The value of a text laid out as `dumps_text` writes it, decoded as JSON's parser meets each
    object (`_Builder`): no second walk of the decoded tree, which cost a launch head of 89
    objects most of its decode.  _MISSING for another layout (spaces, keys in another order:
    `_loads_document` reads it); BadEntry for a damaged one."""
    try:
        classes, end = _SCAN.raw_decode(text, len(_HEAD))
    except (ValueError, RecursionError):
        return _MISSING
    if type(classes) is not list or not text.startswith(_VALUE, end):
        return _MISSING
    table = [_table_class(entry) for entry in classes]
    try:
        value, stop = json.JSONDecoder(object_hook=_Builder(table).build).raw_decode(text, end + len(_VALUE))
    except BadEntry:
        raise
    except RecursionError:
        raise BadEntry("damaged entry: nested too deeply") from None
    except ValueError as e:
        raise BadEntry(f"damaged entry: {e}") from None
    return value if stop == len(text) - 1 and text[stop] == "}" else _MISSING


class _Builder:
    """Each JSON object of an entry made into what it stands for once its values are (innermost
    first, in the order `_encode` finished them: a reference names one built before), checked:
    the object_hook of `_loads_compact`'s parser and the step of `_decode`'s walk."""

    __slots__ = ("table", "done")

    def __init__(self, table: list):
        self.table, self.done = table, []  # done: each data class instance built, in order

    def build(self, t: dict):
        if len(t) not in (1, 2):
            raise BadEntry("damaged entry: an object that dumps does not write")
        try:
            d = t.get("$d")
            if d is not None:
                cls, names = _instance_class(t, d, self.table)
                obj = _new(cls)  # fields filled in as pickle does: no constructor runs
                state = getattr(obj, "__dict__", None)
                if state is not None:  # the values are built already: one update, not a call a field
                    state.update(zip(names, d[1:]))
                else:
                    for i, name in enumerate(names, 1):
                        _set(obj, name, d[i])
                self.done.append(obj)
                return obj
            r = t.get("$r")
            if r is not None:
                return _referenced(t, r, self.done)
            found = _enum_or_bytes(t)
            if found is not _MISSING:
                return found
            (tag, value), = t.items()
            if type(value) is not list:
                raise BadEntry("damaged entry: an object that dumps does not write")
            return _container(tag, value)
        except BadEntry:
            raise
        except (KeyError, TypeError, ValueError, IndexError) as e:
            raise BadEntry(f"damaged entry: {type(e).__name__}: {e}") from None


def _loads_document(text: str | bytes):
    try:
        doc = json.loads(text)
    except (ValueError, RecursionError, TypeError) as e:
        raise BadEntry(f"damaged entry: {e}") from None
    if type(doc) is not dict or doc.keys() != {"$classes", "$value"} or type(doc["$classes"]) is not list:
        raise BadEntry("damaged entry: not a value that dumps writes")
    table = [_table_class(entry) for entry in doc["$classes"]]
    try:
        return _decode(doc["$value"], _Builder(table))
    except RecursionError:
        raise BadEntry("damaged entry: nested too deeply") from None


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
    return loads_text(data[len(MAGIC):])


def _class_name(cls) -> str:
    return f"{cls.__module__}:{cls.__qualname__}"


_CLASSES: dict = {}  # name -> (class, its fields' names in order): each looked up and checked once


def _data_class(name: str):
    """The tlc data class `module:qualname` and its fields' names (None for an enum), or
    BadEntry: nothing else is ever looked up."""
    found = _CLASSES.get(name)
    if found is None:
        cls = _look_up(name)
        found = _CLASSES[name] = (cls, tuple(f.name for f in dataclasses.fields(cls))
                                  if dataclasses.is_dataclass(cls) else None)
    return found


def _table_class(entry) -> tuple:
    """(class, fields' names) of one entry of a value's class table, checked against this tlc."""
    if not (type(entry) is list and len(entry) == 2 and type(entry[0]) is str and type(entry[1]) is list):
        raise BadEntry("damaged entry: not a value that dumps writes")
    name, names = entry
    cls, fields = _data_class(name)
    if fields is None or tuple(names) != fields:
        raise BadEntry(f"damaged entry: the fields of {name} differ from this tlc's")
    return cls, fields


def _look_up(name: str):
    module, _, qualname = name.partition(":")
    if not (module == "tlc" or module.startswith("tlc.")) or not all(p.isidentifier() for p in qualname.split(".")):
        raise BadEntry(f"{name} is not a data class of tlc's")
    try:  # a module imported already (every class of a launch's entry) without importlib's call
        obj = sys.modules.get(module) or importlib.import_module(module)
        for part in qualname.split("."):
            obj = getattr(obj, part)
    except (ImportError, AttributeError):
        raise BadEntry(f"{name} is not a data class of tlc's") from None
    if not (isinstance(obj, type) and obj.__module__ == module and
            (dataclasses.is_dataclass(obj) or issubclass(obj, enum.Enum))):
        raise BadEntry(f"{name} is not a data class of tlc's")
    return obj


# what `_encode` does with a value, by its type alone (each type classified once, `_kind`)
_PLAIN, _ENUM, _DATA, _BYTES, _TUPLE, _LIST, _SET, _DICT, _OTHER = range(9)
_KINDS: dict = {}
_FIELD_NAMES: dict = {}  # data class -> its fields' names in order (dataclasses.fields is slow)


def _kind(cls) -> int:
    """What `_encode` does with an instance of `cls`: every test reads the type alone, in this
    order (a str that is also an Enum is a str)."""
    if cls is type(None) or issubclass(cls, (bool, str)) or cls in (int, float):
        return _PLAIN
    if issubclass(cls, enum.Enum):
        return _ENUM
    if hasattr(cls, "__dataclass_fields__") and not issubclass(cls, type):  # dataclasses.is_dataclass
        return _DATA
    if issubclass(cls, (bytes, bytearray)):
        return _BYTES
    return {tuple: _TUPLE, list: _LIST, set: _SET, frozenset: _SET, dict: _DICT}.get(cls, _OTHER)


def _encode(v, table: dict, written: dict):
    # written: id of each data class instance finished -> its number (the objects live in `v`)
    cls = type(v)
    kind = _KINDS.get(cls)
    if kind is None:
        kind = _KINDS[cls] = _kind(cls)
    if kind == _PLAIN:
        return v
    if kind == _DATA:
        seen = written.get(id(v))
        if seen is not None:
            return {"$r": seen}
        found = table.get(cls)
        if found is None:
            _check_tlc(cls)
            names = _FIELD_NAMES.get(cls)
            if names is None:
                names = _FIELD_NAMES[cls] = tuple(f.name for f in dataclasses.fields(v))
            found = table[cls] = (len(table), names)
        place, names = found
        tree = {"$d": [place] + [_encode(getattr(v, name), table, written) for name in names]}
        written[id(v)] = len(written)
        return tree
    if kind == _TUPLE:
        return {"$tuple": [_encode(x, table, written) for x in v]}
    if kind == _LIST:
        return [_encode(x, table, written) for x in v]
    if kind == _ENUM:
        _check_tlc(cls)
        return {"$enum": _class_name(cls), "name": v.name}
    if kind == _DICT:
        return {"$dict": [[_encode(k, table, written), _encode(x, table, written)] for k, x in v.items()]}
    if kind == _SET:
        return {"$" + cls.__name__: [_encode(x, table, written) for x in v]}
    if kind == _BYTES:
        import base64  # here: few values are bytes, and a launch from the caches decodes none

        return {"$bytes": base64.b64encode(bytes(v)).decode()}
    raise NotData(f"the program cache stores data only, not {cls.__module__}.{cls.__qualname__}")


def _check_tlc(cls) -> None:
    if not (cls.__module__ == "tlc" or cls.__module__.startswith("tlc.")):
        raise NotData(f"the program cache stores tlc's data classes only, not {_class_name(cls)}")


_SCALARS = frozenset({str, int, float, bool, type(None)})  # what JSON gives that stands for itself


_new, _set = object.__new__, object.__setattr__


def _decode(t, builder: "_Builder"):
    """`t`, a value of json.loads, decoded as `_loads_compact`'s parser decodes it: each object
    built by `builder` once its own values are (post-order, the order `_encode` numbered them)."""
    kind = type(t)
    if kind in _SCALARS:
        return t
    if kind is list:
        return [x if type(x) in _SCALARS else _decode(x, builder) for x in t]
    if kind is not dict:
        raise BadEntry("damaged entry: an object that dumps does not write")
    return builder.build({k: v if type(v) in _SCALARS else _decode(v, builder) for k, v in t.items()})


def _instance_class(t: dict, d, table: list) -> tuple:
    """(class, fields' names) of the instance {"$d": d} (`t`), checked against the table."""
    place = d[0] if type(d) is list and len(t) == 1 else None
    if type(place) is not int or place < 0:
        raise BadEntry("damaged entry: an object that dumps does not write")
    cls, names = table[place]
    if len(d) != len(names) + 1:
        raise BadEntry(f"damaged entry: the fields of {_class_name(cls)} differ from this tlc's")
    return cls, names


def _referenced(t: dict, r, done: list):
    if type(r) is not int or not 0 <= r < len(done) or len(t) != 1:
        raise BadEntry("damaged entry: a reference to no object written before")
    return done[r]


def _enum_or_bytes(t: dict):
    """The enum member or the bytes that `t` stands for; _MISSING where it is neither."""
    if "$enum" in t:
        cls, _ = _data_class(t["$enum"])
        return cls[t["name"]]
    if "$bytes" in t and len(t) == 1:
        import base64

        return base64.b64decode(t["$bytes"], validate=True)
    return _MISSING


def _container(tag: str, items: list):
    """The tuple, set, frozenset or dict {tag: items} stands for, its items decoded."""
    if tag == "$tuple":
        return tuple(items)
    if tag == "$set":
        return set(items)
    if tag == "$frozenset":
        return frozenset(items)
    if tag == "$dict":
        return {k: x for k, x in items}
    raise BadEntry("damaged entry: an object that dumps does not write")
