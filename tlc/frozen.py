"""`frozen` and `record`: `dataclass(frozen=True)` and `dataclass()` at a third of their cost to
define (#15, first calls).

The compiler's nodes (the AST, the tile IR, the checker's types, dtypes) and its other data
classes are ~150 dataclasses defined in every new process that compiles: Python 3.11's
`dataclass` compiles up to six functions from text for each (`__init__`, `__repr__`, `__eq__`,
`__hash__`, `__setattr__`, `__delattr__`), each text on its own, and asks `inspect.signature` for
the docstring of one that has none: ~0.4 ms a class.  These compile the ones that run hot
(`__init__`, `__eq__` and a frozen class's `__hash__`) from one text, as `dataclass` writes them
(`__eq__` compares the `compare` fields as tuples when the other is of the same class, else
NotImplemented; `__hash__` hashes that tuple; a frozen slotted class's `__init__` sets its
fields through the slots' descriptors), and make the rest as closures over the fields' names:
`__repr__` is `Cls(a=..., b=...)` of the `repr` fields; in a frozen class, assigning or deleting
a field raises `dataclasses.FrozenInstanceError`; a record's `__hash__` is None.  The class is a
dataclass (`dataclass` itself processes the fields, making none of the methods: `fields`,
`replace`, `asdict`, `is_dataclass` and `__dataclass_params__` say what they say of
`dataclass`'s), with slots where asked, which pickle and copy as `dataclass`'s do; its signature
and docstring are `dataclass`'s.  A class these would not make the same way (one writing any of
those methods itself, with ClassVar or InitVar annotations, a field named like a method's own
parameter, or a frozen class below a mutable dataclass or the other way round, which
`dataclass` refuses) is made by `dataclass` itself.
"""
from __future__ import annotations

import dataclasses
import inspect  # (imported by dataclasses anyway)
import reprlib
import threading
from dataclasses import MISSING, FrozenInstanceError
from types import MemberDescriptorType

# methods a class may write itself, which `dataclass`'s rules then keep or refuse
_OWN = ("__init__", "__repr__", "__eq__", "__hash__", "__setattr__", "__delattr__", "__getstate__", "__setstate__")


class _Factory:
    """The default of a parameter whose field has a `default_factory` (shown as `<factory>`, as
    `dataclass` shows it)."""

    def __repr__(self) -> str:
        return "<factory>"


_FACTORY = _Factory()
# held while a base's `__dataclass_params__.frozen` says otherwise (`_make`), so that a class made
# on another thread (an import on the NVRTC warm-up's) never reads it so
_BASES = threading.Lock()


def frozen(cls=None, /, *, slots: bool = False):
    """`@frozen` / `@frozen(slots=True)`: `@dataclass(frozen=True)` / `(frozen=True, slots=True)`."""
    def wrap(cls):
        return _make(cls, slots, True)
    return wrap if cls is None else wrap(cls)


def record(cls=None, /, *, slots: bool = False):
    """`@record` / `@record(slots=True)`: `@dataclass` / `@dataclass(slots=True)`, a class whose
    fields may be assigned (its `__hash__` None, as `dataclass` leaves an `eq` class's)."""
    def wrap(cls):
        return _make(cls, slots, False)
    return wrap if cls is None else wrap(cls)


def _plain(cls) -> bool:
    annotations = cls.__dict__.get("__annotations__", {})
    return not any(name in cls.__dict__ for name in _OWN) and not any(
        "ClassVar" in str(t) or "InitVar" in str(t) for t in annotations.values()) and not any(
        name in ("self", "other") or name.startswith("__") for name in annotations)  # (the methods' own names)


def _make(cls, slots: bool, is_frozen: bool):
    with _BASES:
        bases = [b.__dataclass_params__ for b in cls.__mro__[1:-1] if "__dataclass_params__" in b.__dict__]
        if not _plain(cls) or any(params.frozen != is_frozen for params in bases):
            # (`dataclass` refuses a frozen class below a mutable one and the other way round)
            return dataclasses.dataclass(cls, frozen=is_frozen, slots=slots)
        undocumented = not cls.__dict__.get("__doc__")
        if undocumented:
            cls.__doc__ = "-"  # written below; `dataclass` would ask inspect.signature for an empty one
        # `dataclass` makes no method here; it refuses a non-frozen class below a frozen one, so
        # the frozen bases (made here, and recorded frozen below) say otherwise for the moment
        for params in bases:
            params.frozen = False
        try:
            cls = dataclasses.dataclass(cls, init=False, repr=False, eq=False, frozen=False, slots=slots)
        finally:
            for params in bases:
                params.frozen = is_frozen
    fields = dataclasses.fields(cls)
    signature = _compiled(cls, fields, slots, is_frozen)
    if undocumented:
        cls.__doc__ = f"{cls.__name__}({signature})"
    shown = tuple(f.name for f in fields if f.repr)

    @reprlib.recursive_repr()
    def __repr__(self):
        return f"{self.__class__.__qualname__}({', '.join([f'{n}={getattr(self, n)!r}' for n in shown])})"

    methods = [__repr__]
    if is_frozen:
        methods += _frozen_methods(cls, frozenset(f.name for f in fields), slots)
    for method in methods:
        method.__qualname__ = f"{cls.__qualname__}.{method.__name__}"
        setattr(cls, method.__name__, method)
    params = cls.__dataclass_params__  # what the class now is, as `dataclass` would record it
    params.init = params.repr = params.eq = True
    params.frozen = is_frozen
    return cls


def _frozen_methods(cls, names: frozenset, slots: bool) -> list:
    def __setattr__(self, name, value):
        if type(self) is cls or name in names:
            raise FrozenInstanceError(f"cannot assign to field {name!r}")
        super(cls, self).__setattr__(name, value)

    def __delattr__(self, name):
        if type(self) is cls or name in names:
            raise FrozenInstanceError(f"cannot delete field {name!r}")
        super(cls, self).__delattr__(name)

    methods = [__setattr__, __delattr__]
    if slots:  # as `dataclass`'s frozen slotted classes: state through the fields, set past __setattr__
        def __getstate__(self):
            return [getattr(self, f.name) for f in dataclasses.fields(self)]

        def __setstate__(self, state):
            for f, value in zip(dataclasses.fields(self), state):
                object.__setattr__(self, f.name, value)
        methods += [__getstate__, __setstate__]
    return methods


def _compiled(cls, fields, slots: bool, is_frozen: bool) -> str:
    """`cls.__init__`, `__eq__` and `__hash__`, compiled from one text as `dataclass` compiles
    each (the hot ones: attribute loads in the function itself); returns the parameters' text."""
    ns: dict = {"__set": object.__setattr__, "__FACTORY": _FACTORY}
    params, kw_only, shown, shown_kw, body = [], [], [], [], []
    for f in fields:
        value = f.name
        if f.default_factory is not MISSING:
            ns[f"__factory_{f.name}"] = f.default_factory
            value = f"__factory_{f.name}()" if not f.init else \
                f"__factory_{f.name}() if {f.name} is __FACTORY else {f.name}"
            default = "__FACTORY"
        elif f.default is not MISSING:
            ns[f"__default_{f.name}"] = f.default
            value = f.name if f.init else f"__default_{f.name}"
            default = f"__default_{f.name}"
        elif not f.init:
            continue
        else:
            default = None
        if f.init:
            param = f.name if default is None else f"{f.name}={default}"
            (kw_only if f.kw_only else params).append(param)
            (shown_kw if f.kw_only else shown).append(
                f"{f.name}: {inspect.formatannotation(f.type)}" + ("" if default is None else f" = {ns[default]!r}"))
        if not is_frozen:
            body.append(f"  self.{f.name} = {value}")
        elif slots and isinstance(slot := _slot(cls, f.name), MemberDescriptorType):
            # through the slot's descriptor: the fastest way past the frozen __setattr__
            ns[f"__set_{f.name}"] = slot.__set__
            body.append(f"  __set_{f.name}(self, {value})")
        else:
            body.append(f"  __set(self, {f.name!r}, {value})")
    if hasattr(cls, "__post_init__"):
        body.append("  self.__post_init__()")
    compared = "".join(f"self.{f.name}," for f in fields if f.compare)
    hashed = "".join(f"self.{f.name}," for f in fields if (f.compare if f.hash is None else f.hash))
    text = ", ".join(["self", *params, *(["*", *kw_only] if kw_only else [])])
    src = (f"def __init__({text}):\n" + ("\n".join(body) or "  pass") + "\n"
           "def __eq__(self, other):\n"
           "  if other.__class__ is self.__class__:\n"
           f"    return ({compared}) == ({compared.replace('self.', 'other.')})\n"
           "  return NotImplemented\n"
           + (f"def __hash__(self):\n  return hash(({hashed}))\n" if is_frozen else ""))
    exec(src, ns)  # noqa: S102 - as dataclasses makes them
    ns["__init__"].__annotations__ = {**{f.name: f.type for f in fields if f.init}, "return": None}
    ns["__hash__"] = ns.get("__hash__")  # None: an eq class that may change is not hashable
    for name in ("__init__", "__eq__", "__hash__"):
        if ns[name] is not None:
            ns[name].__qualname__ = f"{cls.__qualname__}.{name}"
        setattr(cls, name, ns[name])
    return ", ".join(shown + (["*", *shown_kw] if shown_kw else []))


def _slot(cls, name: str):
    """What `cls` or the nearest class above it holds under `name` (a field's slot: a base's,
    for a field the class inherits)."""
    return next((c.__dict__[name] for c in cls.__mro__ if name in c.__dict__), None)
