"""tlc.frozen: a `@frozen` class behaves as the `@dataclass(frozen=True)` class of the same body, a
`@record` class as the `@dataclass` one."""
from __future__ import annotations

import copy
import dataclasses
import inspect
import pickle
from dataclasses import KW_ONLY, FrozenInstanceError, dataclass, field

import pytest

from tlc.frozen import frozen, record


def body(decorate):
    """The same classes, made by `decorate(slots)` (a plain one, one with keyword-only and
    compare=False fields, a default factory, a __post_init__, a subclass)."""
    @decorate(False)
    class Point:
        """A point."""

        x: int
        y: int = 0

    @decorate(True)
    class Node:
        name: str
        kids: tuple = ()
        span: object = field(default=None, compare=False, repr=False)
        tag: str = field(default="t", kw_only=True)

    @decorate(False)
    class Listed:
        items: list = field(default_factory=list)
        weight: float = field(default=1.0, hash=False)

        def __post_init__(self):
            object.__setattr__(self, "items", tuple(self.items))

    @decorate(False)
    class Point3(Point):
        z: int = 0

    return Point, Node, Listed, Point3


MADE = {"dataclass": body(lambda slots: dataclass(frozen=True, slots=slots)),
        "frozen": body(lambda slots: frozen(slots=slots))}
for _kind, _classes in MADE.items():  # module-level names, as pickle finds classes
    for _cls in _classes:
        _cls.__qualname__ = f"{_kind}_{_cls.__name__}"
        globals()[_cls.__qualname__] = _cls


def instances(classes):
    Point, Node, Listed, Point3 = classes
    return [Point(1), Point(1, 2), Node("a"), Node("a", (1,), span="here", tag="u"), Listed(),
            Listed([1, 2], weight=2.0), Point3(1, 2, 3)]


def test_the_classes_are_dataclasses_with_the_same_fields_signature_and_doc():
    for old, new in zip(MADE["dataclass"], MADE["frozen"]):
        assert dataclasses.is_dataclass(new)
        assert [(f.name, f.type, f.default, f.init, f.repr, f.compare, f.hash, f.kw_only)
                for f in dataclasses.fields(old)] == [(f.name, f.type, f.default, f.init, f.repr, f.compare,
                                                       f.hash, f.kw_only) for f in dataclasses.fields(new)]
        assert str(inspect.signature(old)) == str(inspect.signature(new))
        assert old.__doc__ == new.__doc__
        assert old.__match_args__ == new.__match_args__
        assert old.__dict__.get("__slots__") == new.__dict__.get("__slots__")
        assert new.__dataclass_params__.frozen and new.__dataclass_params__.eq


def test_instances_compare_hash_and_show_as_the_dataclass_ones():
    olds, news = instances(MADE["dataclass"]), instances(MADE["frozen"])
    for old, new in zip(olds, news):
        assert repr(old).removeprefix("dataclass_") == repr(new).removeprefix("frozen_")
        assert hash(old) == hash(new)
        assert dataclasses.asdict(old) == dataclasses.asdict(new)
    for i, (a, b) in enumerate(zip(news, news[1:] + news[:1])):
        assert (a == b) == (olds[i] == olds[(i + 1) % len(olds)])
    Point, Node, Listed, Point3 = MADE["frozen"]
    assert Node("a", span=1) == Node("a", span=2)  # compare=False
    assert hash(Listed(weight=1.0)) == hash(Listed(weight=3.0))  # hash=False
    assert Point(1, 0) != Point3(1, 0, 0)  # another class: NotImplemented both ways
    assert Point(1).__eq__(object()) is NotImplemented
    assert Listed([1]).items == (1,)  # __post_init__ ran
    assert Listed().items is not Listed().items or Listed().items == ()


def test_assigning_or_deleting_a_field_raises_frozen_instance_error():
    for made in MADE.values():
        for obj in instances(made):
            with pytest.raises(FrozenInstanceError, match="cannot assign to field 'x'|cannot assign to field 'name'"
                               "|cannot assign to field 'items'"):
                setattr(obj, dataclasses.fields(obj)[0].name, 5)
            with pytest.raises(FrozenInstanceError, match="cannot delete field"):
                delattr(obj, dataclasses.fields(obj)[0].name)


def test_pickle_copy_and_replace_round_trip():
    for obj in instances(MADE["frozen"]):
        assert pickle.loads(pickle.dumps(obj)) == obj
        assert copy.deepcopy(obj) == obj and copy.copy(obj) == obj
        first = dataclasses.fields(obj)[0].name
        changed = dataclasses.replace(obj, **{first: getattr(obj, first)})
        assert changed == obj and changed is not obj


def test_a_wrong_call_is_the_same_type_error():
    for made in MADE.values():
        Point, Node, _, _ = made
        with pytest.raises(TypeError, match="missing 1 required positional argument: 'x'"):
            Point()
        with pytest.raises(TypeError, match="takes from 2 to 4 positional arguments but 5 were given"):
            Node("a", (), None, "u")


def test_a_class_writing_its_own_methods_is_made_by_dataclass():
    @frozen
    class Own:
        x: int

        def __repr__(self):
            return "own"

    assert repr(Own(1)) == "own" and Own(1) == Own(1)
    with pytest.raises(FrozenInstanceError):
        Own(1).x = 2


MUTABLE = {"dataclass": body(lambda slots: dataclass(slots=slots)), "record": body(lambda slots: record(slots=slots))}


def test_a_record_is_the_mutable_dataclass():
    for old, new in zip(MUTABLE["dataclass"], MUTABLE["record"]):
        assert str(inspect.signature(old)) == str(inspect.signature(new)) and old.__doc__ == new.__doc__
        assert new.__hash__ is None and not new.__dataclass_params__.frozen
        assert new.__dict__.get("__slots__") == old.__dict__.get("__slots__")
    olds, news = instances(MUTABLE["dataclass"]), instances(MUTABLE["record"])
    for i, (old, new) in enumerate(zip(olds, news)):
        assert repr(old) == repr(new) and dataclasses.asdict(old) == dataclasses.asdict(new)
        assert (new == news[i - 1]) == (old == olds[i - 1])
        with pytest.raises(TypeError, match="unhashable type"):
            hash(new)
        first = dataclasses.fields(new)[0].name
        setattr(new, first, 7)
        assert getattr(new, first) == 7
    Point, _, Listed, _ = MUTABLE["record"]
    assert Listed().items == () and Point(1) == Point(1, 0)


def test_a_frozen_class_below_a_record_is_refused_as_dataclass_refuses_it():
    Point = MUTABLE["record"][0]
    with pytest.raises(TypeError, match="cannot inherit frozen dataclass from a non-frozen one"):
        @frozen
        class Frozen(Point):
            z: int = 0
    with pytest.raises(TypeError, match="cannot inherit non-frozen dataclass from a frozen one"):
        @record
        class Mutable(MADE["frozen"][0]):
            z: int = 0


def fields_of_every_kind(decorate):
    """A class with non-init fields (a default, a factory), a KW_ONLY marker, a __post_init__,
    annotations that are classes rather than text, and a subclass that adds a field and gives
    an inherited one a default (with slots: its slot is the base's)."""
    class A:
        x: int
        y: list = field(default_factory=list, init=False, compare=False)
        z: int = field(default=3, init=False)
        _: KW_ONLY
        k: str = "k"

        def __post_init__(self):
            self.__class__.made += 1

    A.__annotations__ = {"x": int, "y": list, "z": int, "_": KW_ONLY, "k": str}
    A.made = 0
    A = decorate(A)

    class B(A):
        w: int = 5
        x: int = 9

    B.__annotations__ = {"w": int, "x": int}
    return A, decorate(B)


@pytest.mark.parametrize("slots", [False, True])
@pytest.mark.parametrize("kind", ["frozen", "record"])
def test_fields_of_every_kind_as_dataclass_makes_them(kind, slots):
    old = fields_of_every_kind(lambda c: dataclass(c, frozen=kind == "frozen", slots=slots))
    new = fields_of_every_kind(lambda c: (frozen if kind == "frozen" else record)(c, slots=slots))
    for c1, c2 in zip(old, new):
        assert str(inspect.signature(c1)) == str(inspect.signature(c2)) and c1.__doc__ == c2.__doc__
        assert c1.__match_args__ == c2.__match_args__
    (A1, B1), (A2, B2) = old, new
    for o1, o2 in ((A1(1, k="q"), A2(1, k="q")), (B1(2, w=1), B2(2, w=1)), (B1(), B2())):
        assert repr(o1) == repr(o2) and dataclasses.asdict(o1) == dataclasses.asdict(o2)
        assert (hash(o1) == hash(o2)) if kind == "frozen" else o2.__hash__ is None
    assert A2(1) == A2(1) and A2(1) != A2(2) and A2.made == 5  # (__post_init__ ran for each A)
