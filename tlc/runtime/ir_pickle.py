"""The program cache's entries (a kernel's IR, its generated code and binary) as pickles that
can hold nothing but data.

Why not plain `pickle.loads`: an entry sits in `$TLC_CACHE_DIR`, and a plain unpickler calls any
function a file there names, so a planted entry would run as the user.  `loads` resolves only
classes that tlc itself defines and that are data (dataclasses and enums): building one runs
tlc's own constructor, never `os.system` or `builtins.eval`.  tlc's IR needs nothing else: its
entries are built with NEWOBJ and BUILD over those classes, and containers pickle as opcodes.
"""
from __future__ import annotations

import dataclasses
import enum
import importlib
import io
import pickle


class ForbiddenGlobal(pickle.UnpicklingError):
    """The entry names something other than a data class of tlc's."""


class _DataOnly(pickle.Unpickler):
    def find_class(self, module: str, name: str):
        if (module == "tlc" or module.startswith("tlc.")) and name.isidentifier():
            try:
                obj = getattr(importlib.import_module(module), name)
            except (ImportError, AttributeError):
                obj = None
            if isinstance(obj, type) and obj.__module__ == module and (
                    dataclasses.is_dataclass(obj) or issubclass(obj, enum.Enum)):
                return obj
        raise ForbiddenGlobal(f"{module}.{name} is not a data class of tlc's")


def dumps(value) -> bytes:
    return pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)


def loads(data: bytes):
    """The value of `data`; raises `pickle.UnpicklingError` (or what a damaged pickle raises)
    for anything beyond tlc's data classes and built-in containers."""
    return _DataOnly(io.BytesIO(data)).load()
