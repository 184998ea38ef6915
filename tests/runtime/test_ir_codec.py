"""The program cache's entry format (tlc/runtime/ir_codec.py): JSON data that gives back every
example's and std kernel's IR and generated code exactly, and refuses anything else."""
from __future__ import annotations

import base64
import dataclasses
import json
import os
import pathlib
import pickle
import zlib

import pytest

import tlc
from tlc.runtime import ir_codec

ROOT = pathlib.Path(__file__).resolve().parents[2]
PROGRAMS = sorted((ROOT / "examples").glob("*.tl")) + sorted((ROOT / "stdlib").glob("*.tl"))


def kernels():
    """Every kernel of every example and std module; by default the examples' and the first
    three of each std module's (the codec is the same for all, and the whole list costs about a
    minute of CPU), all of them in the slow run."""
    for path in PROGRAMS:
        mod = tlc.load(str(path), target="cpu")
        for i, name in enumerate(sorted(mod.kernels)):
            slow = path.parent.name == "stdlib" and i >= 3
            yield pytest.param(path, name, id=f"{path.stem}.{name}", marks=[pytest.mark.slow] if slow else [])


# sm_90a's IR holds everything sm_80's does and the warp specialization: sm_80 in the slow run
@pytest.mark.parametrize("arch", [pytest.param("sm_80", marks=pytest.mark.slow), "sm_90a"])
@pytest.mark.parametrize("path,name", list(kernels()))
def test_every_kernel_round_trips(path, name, arch):
    k = tlc.load(str(path), target="cpu").kernels[name]
    try:
        entry = (k.scheduled({}, arch), k.generated({}, arch), b"\x00cubin\xff" * 3, arch)
    except tlc.TlcError:
        pytest.skip("needs constants or dtypes that only a call gives")
    back = ir_codec.loads(ir_codec.dumps(entry))
    assert back == entry
    assert back[1].source == entry[1].source


def entry_of(tree, classes=(), compact=False) -> bytes:
    """An entry of `tree`: laid out as dumps writes it (`compact`, which loads_text decodes as it
    parses) or with JSON's default spaces (decoded, then walked)."""
    separators = (",", ":") if compact else None
    return ir_codec.MAGIC + json.dumps({"$classes": list(classes), "$value": tree}, separators=separators).encode()


@pytest.mark.parametrize("classes,tree,message", [
    ([["os:system", []]], {"$d": [0]}, "os:system is not a data class of tlc's"),
    ([["tlc.api:load", []]], {"$d": [0]}, "tlc.api:load is not a data class of tlc's"),
    ([["tlc.runtime.ir_codec:BadEntry", []]], {"$d": [0]}, "is not a data class of tlc's"),
    ([], {"$enum": "builtins:int", "name": "real"}, "builtins:int is not a data class of tlc's"),
    ([["tlc.ir.nodes:Sync", ["x"]]], {"$d": [0, 1]}, "the fields of tlc.ir.nodes:Sync differ"),
    ([["tlc.ir.nodes:Const", ["dtype", "value", "span"]]], {"$d": [0, None, 1, None]},
     "the fields of tlc.ir.nodes:Const differ"),  # the names in another order
    ([["tlc.ir.nodes:Const", ["value", "dtype", "span"]]], {"$d": [0, 1, None]},
     "the fields of tlc.ir.nodes:Const differ"),  # a value missing
    ([["tlc.ir.nodes:Const", ["value", "dtype", "span"]]], {"$d": [1, 1, None, None]}, "damaged entry"),  # no class 1
    ([["tlc.ir.nodes:Const", ["value", "dtype", "span"]]], {"$d": [-1, 1, None, None]}, "an object that dumps"),
    ([["tlc.ir.nodes:Const", ["value", "dtype", "span"]]], {"$d": 0}, "an object that dumps does not write"),
    ([["tlc.ir.nodes:Const"]], 1, "not a value that dumps writes"),
    ([], {"$eval": "1"}, "an object that dumps does not write"),
    ([], {"$bytes": "!!"}, "damaged entry"),
    ([], {"x": 1}, "an object that dumps does not write"),
])
@pytest.mark.parametrize("compact", [False, True])
def test_an_entry_naming_anything_else_is_refused(classes, tree, message, compact):
    with pytest.raises(ir_codec.BadEntry, match=message.replace("(", r"\(")):
        ir_codec.loads(entry_of(tree, classes, compact))


def test_both_layouts_decode_to_the_same_value():
    """dumps_text's layout is decoded as it is parsed; JSON's other layouts of the same document
    (spaces, the keys in another order) by the walk after the parse: the same value, references
    shared alike.  A damaged compact text (cut, run on, a key added) is refused."""
    from tlc.diagnostics import Span
    from tlc.dtypes import I32
    from tlc.ir.nodes import BinOp, Const, Var

    span = Span("f.tl", 1, 2, 1, 3)
    x = Var("x", I32, span=span)
    value = {"t": (BinOp("+", x, Const(2, I32, span=span), I32), [x, None, 1.5], frozenset({"a"}), {2}, b"\x00")}
    text = ir_codec.dumps_text(value)
    assert text.startswith('{"$classes":[') and ',"$value":{' in text
    assert ir_codec._loads_compact(text) == value  # decoded as parsed, not handed to the walk
    doc = json.loads(text)
    for layout in (text, json.dumps(doc), json.dumps({"$value": doc["$value"], "$classes": doc["$classes"]}),
                   text[:-1] + " }", text.encode()):
        back = ir_codec.loads_text(layout)
        assert back == value and back["t"][0].a is back["t"][1][0] and back["t"][0].dtype is back["t"][0].b.dtype
    for bad in (text[:-1], text + "1", text[:-1] + ',"x":1}', text.replace('"$r"', '"$q"', 1)):
        with pytest.raises(ir_codec.BadEntry):
            ir_codec.loads_text(bad)


@pytest.mark.parametrize("text", ['1', '[]', '{"$value": 1}', '{"$classes": {}, "$value": 1}',
                                  '{"$classes": [], "$value": 1, "x": 2}'])
def test_a_value_without_its_class_table_is_refused(text):
    with pytest.raises(ir_codec.BadEntry, match="not a value that dumps writes"):
        ir_codec.loads_text(text)


def test_each_class_is_named_once_and_its_instances_by_place():
    from tlc.diagnostics import Span

    spans = tuple(Span("f.tl", i, 1, i, 2) for i in range(3))
    doc = json.loads(ir_codec.dumps_text(spans))
    assert doc["$classes"] == [["tlc.diagnostics:Span", ["file", "line", "col", "end_line", "end_col"]]]
    assert doc["$value"] == {"$tuple": [{"$d": [0, "f.tl", i, 1, i, 2]} for i in range(3)]}
    assert ir_codec.loads_text(json.dumps(doc)) == spans


def test_an_instance_met_again_is_a_reference_and_decodes_to_the_same_object():
    """Format 3: a data class instance that appears again (the same object: the IR shares its
    dtypes, spans and shapes) is written once and then as {"$r": N}, N counting the instances
    as each is finished; it decodes to the one object, so the decoded value is shared as the
    original was (and equal ones that were distinct objects stay distinct).  A reference to an
    instance not yet finished (which would make a cycle) or never written is a damaged entry."""
    from tlc.diagnostics import Span
    from tlc.dtypes import I32
    from tlc.ir.nodes import BinOp, Const, Var

    span = Span("f.tl", 1, 2, 1, 3)
    x = Var("x", I32, span=span)
    tree = BinOp("+", x, BinOp("*", x, Const(2, I32, span=span), I32), I32, span=Span("f.tl", 1, 2, 1, 3))
    doc = json.loads(ir_codec.dumps_text(tree))
    text = json.dumps(doc["$value"])
    assert text.count('"$d"') == 7 and text.count('"$r"') == 5  # x once more, I32 three times, the span once
    back = ir_codec.loads_text(json.dumps(doc))
    assert back == tree and back.a is back.b.a and back.dtype is back.a.dtype is back.b.b.dtype
    assert back.a.span is back.b.b.span and back.span is not back.a.span  # equal, but another object
    refs = {"$classes": doc["$classes"], "$value": {"$tuple": [{"$d": [0, "f.tl", 1, 2, 1, 3]}, {"$r": 0}]}}
    first, again = ir_codec.loads_text(json.dumps(refs))
    assert first is again
    classes = [["tlc.ir.nodes:Var", ["name", "dtype", "span"]], ["tlc.dtypes:DType", ["name", "kind", "bits", "c_type"]]]
    for bad in ({"$r": 0}, {"$tuple": [{"$d": [1, "i32", "int", 32, "int32_t"]}, {"$r": 1}]}, {"$r": -1}, {"$r": "0"},
                {"$d": [0, "x", {"$d": [1, "i32", "int", 32, "int32_t"]}, {"$r": 1}]}):  # the last: its own Var
        with pytest.raises(ir_codec.BadEntry, match="a reference to no object written before"):
            ir_codec.loads_text(json.dumps({"$classes": classes, "$value": bad}))


def test_a_pickle_or_truncated_entry_is_refused():
    with pytest.raises(ir_codec.BadEntry, match="not a tlc IR entry"):
        ir_codec.loads(pickle.dumps(("x", 1)))
    data = ir_codec.dumps({"a": (1, 2.5, b"\x01")})
    with pytest.raises(ir_codec.BadEntry, match="damaged entry"):
        ir_codec.loads(data[:-3])
    assert ir_codec.loads(data) == {"a": (1, 2.5, b"\x01")}
    assert base64.b64decode(json.loads(data[len(ir_codec.MAGIC):])["$value"]["$dict"][0][1]["$tuple"][2]["$bytes"]) == b"\x01"


def test_only_data_is_stored():
    with pytest.raises(ir_codec.NotData, match="not builtins.function"):
        ir_codec.dumps((1, lambda: 0))
    with pytest.raises(ir_codec.NotData, match="tlc's data classes only, not test_ir_codec:Foreign"):
        ir_codec.dumps(Foreign(1))


@dataclasses.dataclass(frozen=True)
class Foreign:
    x: int


class _Name(str):
    """A str subclass (as Lark's tokens are)."""


def test_a_value_is_encoded_by_its_type_in_the_order_of_the_tests():
    """`_encode` decides by a value's type (each type classified once): a str subclass is a
    string, a bool is not an int, bytearray is bytes, a set and a frozenset keep their kind, and a
    class, even a data class, is not data."""
    from tlc.dtypes import DType

    value = [_Name("a"), True, 1, 2.5, None, bytearray(b"\x02"), {3}, frozenset({4}), {"k": (5,)}]
    tree = json.loads(ir_codec.dumps_text(value))["$value"]
    assert tree[:5] == ["a", True, 1, 2.5, None] and type(tree[1]) is bool
    assert list(tree[6]) == ["$set"] and list(tree[7]) == ["$frozenset"]
    assert ir_codec.loads(ir_codec.dumps(value)) == ["a", True, 1, 2.5, None, b"\x02", {3}, frozenset({4}), {"k": (5,)}]
    for cls in (DType, Foreign, int):
        with pytest.raises(ir_codec.NotData, match="not builtins.type"):
            ir_codec.dumps((cls,))


class _Runs:
    """Unpickled by a plain pickle, this calls `func(*args)`."""

    def __init__(self, func, *args):
        self.func, self.args = func, args

    def __reduce__(self):
        return self.func, self.args


@pytest.mark.parametrize("make", [
    lambda marker: _Runs(os.system, f"touch {marker}"),
    lambda marker: _Runs(open, str(marker), "w"),
    lambda marker: _Runs(tlc.files.write_all, [(str(marker), "x")]),
])
def test_a_pickle_that_would_run_code_is_refused_unread(tmp_path, make):
    marker = tmp_path / "ran"
    with pytest.raises(ir_codec.BadEntry, match="not a tlc IR entry"):
        ir_codec.loads(pickle.dumps(make(marker)))
    assert not marker.exists()


@pytest.mark.gpu
def test_a_planted_program_cache_entry_is_rebuilt_not_run(tmp_path, monkeypatch):
    """Through the real path (tlc.load, a kernel's first launch): the program cache's entry is
    replaced by a pickle that would create a file; the kernel is rebuilt and runs correctly."""
    import numpy as np

    from tlc.runtime import cache as cache_mod

    monkeypatch.setenv("TLC_CACHE_DIR", str(tmp_path / "cache"))
    marker = tmp_path / "ran"
    planted = pickle.dumps(_Runs(open, str(marker), "w"))
    real_load = cache_mod.KernelCache.load
    monkeypatch.setattr(cache_mod.KernelCache, "load",
                        lambda self, key: planted if key.startswith("p") else real_load(self, key))
    mod = tlc.load(str(ROOT / "examples" / "vector_add.tl"), target="cuda")
    x, y = np.arange(1000, dtype=np.float32), np.ones(1000, dtype=np.float32)
    out = np.zeros(1000, dtype=np.float32)
    mod.vector_add(x, y, out, 2.0)
    assert not marker.exists()
    np.testing.assert_allclose(out, 2 * x + 1)


def test_a_deflated_value_round_trips():
    value = {"a": (1, 2.5, b"\x01"), "b": [None, "x" * 1000]}
    data = ir_codec.dumps_deflated(value)
    assert len(data) < len(ir_codec.dumps_text(value)) and ir_codec.loads_deflated(data) == value
    assert ir_codec.loads_deflated(memoryview(data)) == value  # as a cache entry's view holds it


OK = ir_codec.dumps_text("ok").encode()


@pytest.mark.parametrize("data", [
    zlib.compress(ir_codec.dumps_text("x" * 1000).encode()),  # past the limit (here 100 bytes)
    zlib.compress(OK)[:-2],  # cut short
    zlib.compress(OK) + b"more",  # runs on
    b"not deflated",
    zlib.compress(b"\xff\xfe"),  # not UTF-8
    zlib.compress(b'"ok"'),  # a value without its class table
    zlib.compress(b'{"$classes": [["os:system", []]], "$value": {"$d": [0]}}'),  # what no entry holds
])
def test_deflated_data_that_is_not_a_value_is_a_damaged_entry(monkeypatch, data):
    monkeypatch.setattr(ir_codec, "DEFLATED_LIMIT", 100)
    assert ir_codec.loads_deflated(zlib.compress(OK)) == "ok"
    with pytest.raises(ir_codec.BadEntry):
        ir_codec.loads_deflated(data)
