"""What the type checker hands to the scheduler: typed functions with their parameters sorted
by role, their bound constants and shape symbols.  Plain data."""
from __future__ import annotations

from dataclasses import field

from ..diagnostics import Span
from ..frozen import frozen
from ..parser import nodes as n
from .types import TensorType, Type


class NotOne:
    """The binding of a shape symbol specialized on being 1 (`CheckedFunction.ones`) whose size is
    not 1: the symbol stays a run-time size, and `SYMBOL == 1` is compiled as False."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "NOT_ONE"

    def __str__(self) -> str:  # how a cache key writes the binding (kernel._constants_key)
        return "not 1"


NOT_ONE = NotOne()


@frozen
class CheckedParam:
    """`role` is tensor, scalar, const or dtype; `value` the bound value of a const or dtype."""

    name: str
    role: str
    type: Type | None
    value: object = None
    has_default: bool = False
    span: Span | None = field(default=None, compare=False)


@frozen
class SymbolUse:
    param: str
    axis: int


@frozen
class CheckedFunction:
    """One function after checking.  `kind` is kernel, tile_op or device.  `body` is the typed
    AST (every expression has `ty`).  `constants` holds every compile-time value the body may
    read (const and dtype parameters, module constants) as bound for this check."""

    qualname: str
    name: str
    kind: str
    params: tuple[CheckedParam, ...]
    returns: Type | None
    body: tuple
    node: n.FunctionDef
    constants: dict = field(default_factory=dict, compare=False)
    shape_symbols: dict = field(default_factory=dict, compare=False)  # name -> (SymbolUse, ...)
    autotune: dict = field(default_factory=dict, compare=False)  # const name -> list of values
    fuse: bool = False
    module_path: str = ""
    # Specialization (LANGUAGE.md section 1): the constants a call binds from its arrays (name ->
    # SymbolUses: specialized shape symbols and const parameters standing as a dimension), the
    # shape symbols this check needed as constants but had no size for (name -> (span, what)),
    # and those it had one for (name -> size).
    from_arrays: dict = field(default_factory=dict, compare=False)
    to_specialize: dict = field(default_factory=dict, compare=False)
    specialized: dict = field(default_factory=dict, compare=False)
    # The shape symbols of from_arrays that the kernel only compares with 1 (`if A3 == 1:`),
    # specialized on that test alone: a call binds each to 1 where its size is 1, else to NOT_ONE
    # (a size given by name specializes it as any size does); and those bound to NOT_ONE here.
    ones: tuple = field(default=(), compare=False)
    not_one: tuple = field(default=(), compare=False)
    # alloc_global(...) workspaces: tensors the runtime allocates for each call, passed to every
    # grid after the parameters (LANGUAGE.md section 2)
    workspaces: tuple = field(default=(), compare=False)
    # per grid, the constants assigned at its top (`BLOCK = BM * 2`): each grid has its own
    grid_constants: tuple = field(default=(), compare=False)

    def param(self, name: str) -> CheckedParam | None:
        return next((p for p in self.params if p.name == name), None)

    @property
    def tensor_params(self) -> tuple[CheckedParam, ...]:
        return tuple(p for p in self.params if p.role == "tensor")

    @property
    def runtime_params(self) -> tuple[CheckedParam, ...]:
        """Arrays and scalars, in declaration order: what a caller passes positionally."""
        return tuple(p for p in self.params if p.role in ("tensor", "scalar"))


@frozen
class CheckedProgram:
    """A checked file and what it imports.  `names` maps the main module's visible names
    (its own functions and imported ones) to qualnames in `functions`."""

    path: str
    functions: dict
    names: dict
    sources: dict = field(default_factory=dict, compare=False)
    constants: dict = field(default_factory=dict, compare=False)  # module constants by name
    modules: object = field(default=None, compare=False, repr=False)  # the loader, for specialize()

    def function(self, name: str) -> CheckedFunction | None:
        q = self.names.get(name)
        return self.functions.get(q) if q else None

    def kernels(self) -> list[CheckedFunction]:
        return [self.functions[q] for q in self.names.values() if self.functions[q].kind == "kernel"]


def tensor_of(t) -> TensorType | None:
    return t if isinstance(t, TensorType) else None
