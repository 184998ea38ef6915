"""Names and what they denote: symbols, nested scopes, and one module's top-level names."""
from __future__ import annotations

from dataclasses import field

from ..diagnostics import Span
from ..frozen import record
from ..parser import nodes as n
from .builtins import is_language_name
from .types import Type

# Symbol kinds.  Locals, loop variables and block indices are per-thread scalars; buffers are
# shared/fragment/local allocations; shape symbols are dimensions bound at launch.
TENSOR, SCALAR, CONST, DTYPE, SHAPE, LOCAL, LOOP, BLOCK, BUFFER, FUNCTION = (
    "tensor parameter", "scalar parameter", "constant", "dtype", "shape symbol", "variable",
    "loop variable", "block index", "buffer", "function")


@record
class Symbol:
    name: str
    kind: str
    type: Type | None
    span: Span | None = None

    @property
    def assignable(self) -> bool:
        return self.kind == LOCAL


@record
class Scope:
    parent: "Scope | None" = None
    symbols: dict = field(default_factory=dict)

    def lookup(self, name: str) -> Symbol | None:
        s: Scope | None = self
        while s is not None:
            if name in s.symbols:
                return s.symbols[name]
            s = s.parent
        return None

    def define(self, sym: Symbol) -> None:
        self.symbols[sym.name] = sym

    def names(self) -> set[str]:
        out, s = set(), self
        while s is not None:
            out |= set(s.symbols)
            s = s.parent
        return out


@record
class ModuleEnv:
    """A checked module's top level: constants (with values), functions and imports."""

    path: str
    key: str
    constants: dict = field(default_factory=dict)  # name -> value (int/float/bool/DType)
    const_spans: dict = field(default_factory=dict)
    functions: dict = field(default_factory=dict)  # local name -> (qualname, kind, FunctionDef, env)
    ast: n.Module | None = None

    def callable_function(self, name: str):
        """The `functions` entry that `name` means inside code, or None.  A kernel or tile op
        named like a statement, builtin or dtype (`gemm`, `exp`, `f16`) leaves the name its
        language meaning: code cannot call a kernel, so that is the only call it can be."""
        entry = self.functions.get(name)
        if entry is not None and entry[1] in ("kernel", "tile_op") and is_language_name(name):
            return None
        return entry


def did_you_mean(name: str, candidates) -> str | None:
    import difflib  # here: only a program with an error asks (#15: a first call's imports)

    close = difflib.get_close_matches(name, sorted(candidates), n=1, cutoff=0.6)
    return f"did you mean '{close[0]}'?" if close else None
