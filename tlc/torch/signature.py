"""What a PyTorch operator made of a tlc kernel or tile op looks like, worked out from the
kernel's tl signature alone (no PyTorch needed, so it is tested anywhere).

Owns: which parameters the operator takes (arrays and scalars in declaration order; a kernel's
outputs named in `outputs` become results instead), which it mutates (the tensors the scheduled
kernel writes: `ir.walk.written_names`), its `torch.library` schema, and the results' shapes and
dtypes from the inputs' (shape symbols bound from the input that carries them, dimension
expressions such as `D // 2` evaluated by the checker's constant evaluator, dtype parameters
bound from the inputs' dtypes).  The fake (meta) implementation, the CPU path and the backward's
plan all read this object; `register.py` owns everything that touches PyTorch.
"""
from __future__ import annotations

from .. import device_assert
from ..diagnostics import TlcError
from ..dtypes import DTYPES, DType
from ..frozen import frozen
from ..ir.walk import written_names
from ..parser import nodes as n
from ..typecheck.consteval import NotConstant, evaluate
from ..typecheck.types import format_dim

# a shape symbol compiled into a kernel is given this size to find which tensors the kernel
# writes (which does not depend on sizes) when the caller did not name them (`mutates=`)
PROBE_SIZE = 32


class OpError(TlcError):
    """A kernel or tile op that cannot become the PyTorch operator asked for: the message says
    which parameter and what to pass instead."""


@frozen
class OpArg:
    """One argument of the operator: a tensor (`mutated` when the kernel writes it) or a scalar
    (its tl dtype, and its default when it has one)."""

    name: str
    kind: str  # "tensor" | "scalar"
    dtype: DType | None = None
    mutated: bool = False
    has_default: bool = False
    default: object = None

    def schema(self, alias: str) -> str:
        if self.kind == "tensor":
            return f"Tensor({alias}!) {self.name}" if self.mutated else f"Tensor {self.name}"
        text = f"{_schema_scalar(self.dtype)} {self.name}"
        return f"{text}={_schema_default(self.dtype, self.default)}" if self.has_default else text


@frozen
class OpResult:
    """A tensor the operator returns: a tile op's result, or a kernel output named in
    `outputs` (allocated by the operator).  `dims` are the tl dimensions (AST expressions);
    `dtype` a DType, or the name of the dtype parameter that the inputs bind."""

    name: str
    dims: tuple
    dtype: DType | str


class OpSignature:
    """The operator's view of one `tlc.Kernel` or `tlc.TileOp` (`kernel`) with `constants`
    fixed; `outputs` names kernel parameters the operator allocates and returns, `mutates`
    (optional) the tensors a kernel writes when the scheduler cannot be asked."""

    def __init__(self, kernel, outputs=(), constants: dict | None = None, mutates=None):
        fn = kernel.fn
        self.kernel, self.fn = kernel, fn
        self.constants = dict(constants or {})
        self.tile_op = fn.kind == "tile_op"
        outputs = (outputs,) if isinstance(outputs, str) else tuple(outputs)
        for k in self.constants:
            p = fn.param(k)
            if p is None and k not in fn.from_arrays:
                raise OpError(f"constants: '{kernel.name}' has no constant '{k}'; its constants are "
                              f"{_names(q.name for q in fn.params if q.role in ('const', 'dtype'))}")
            if p is not None and p.role in ("tensor", "scalar"):
                raise OpError(f"constants: '{k}' is {'an array' if p.role == 'tensor' else 'a scalar'} parameter "
                              f"of '{kernel.name}', passed at each call, not a constant")
        tensors = {p.name for p in fn.tensor_params}
        if self.tile_op:
            if len(outputs) > 1:
                raise OpError(f"outputs: the tile op '{kernel.name}' returns one tensor; name it with one name")
            if outputs and outputs[0] in tensors:
                raise OpError(f"outputs: '{outputs[0]}' is an input of the tile op '{kernel.name}'; "
                              "a tile op's result gets a name of its own (default 'y')")
        else:
            for o in outputs:
                if o not in tensors:
                    raise OpError(f"outputs: '{kernel.name}' has no array parameter '{o}'; "
                                  f"its arrays are {_names(tensors)}")
        self.asserts = False  # a kernel with device_asserts synchronizes after each launch
        written = self._written(mutates, outputs)
        for o in outputs if not self.tile_op else ():
            if o not in written:
                raise OpError(f"outputs: '{kernel.name}' never writes '{o}', so it is not an output")
        self.args = tuple(self._arg(p, written) for p in fn.runtime_params if p.name not in outputs or self.tile_op)
        self.mutated = tuple(a.name for a in self.args if a.mutated)
        if self.tile_op:
            ret = fn.node.returns
            name = outputs[0] if outputs else "y"
            self.results = (OpResult(name, tuple(fn.returns.shape), self._result_dtype(ret.name, fn.returns.dtype)),)
        else:
            self.results = tuple(OpResult(o, tuple(fn.param(o).type.shape),
                                          self._result_dtype(_annotation(fn, o), fn.param(o).type.dtype))
                                 for o in outputs)
        inputs = {a.name for a in self.args if a.kind == "tensor"}
        # shape symbol (or const parameter standing as a dimension) -> (input, axis) that gives
        # its size; dtype parameter -> inputs that bind it
        self.symbol_sources = {}
        for sym, uses in {**fn.from_arrays, **fn.shape_symbols}.items():
            use = next((u for u in uses if u.param in inputs), None)
            if use is not None:
                self.symbol_sources[sym] = (use.param, use.axis)
        self.dtype_sources = {p.name: tuple(t.name for t in fn.tensor_params
                                            if t.name in inputs and _annotation(fn, t.name) == p.name)
                              for p in fn.params if p.role == "dtype"}
        self.env = {**fn.constants, **{k: _as_dtype(v) for k, v in self.constants.items()}}
        for r in self.results:
            self._check_result(r)

    # ---- what the schema says --------------------------------------------------------------------
    def schema(self) -> str:
        aliases = iter("abcdefghijklmnopqrstuvwxyz")
        args = ", ".join(a.schema(next(aliases) if a.mutated else "") for a in self.args)
        if not self.results:
            returns = "()"
        elif len(self.results) == 1:
            returns = "Tensor"
        else:
            returns = "(" + ", ".join("Tensor" for _ in self.results) + ")"
        return f"({args}) -> {returns}"

    def bind(self, args: tuple, kwargs: dict) -> dict:
        """The operator's arguments by name, defaults filled in (PyTorch passes only those the
        caller gave)."""
        values = dict(zip((a.name for a in self.args), args))
        values.update(kwargs)
        for a in self.args:
            if a.name not in values and a.has_default:
                values[a.name] = a.default
        return values

    # ---- results from the inputs -----------------------------------------------------------------
    def result_specs(self, shapes: dict, dtypes: dict) -> list:
        """[(shape, DType)] of each result, given the input tensors' `shapes` (name -> tuple of
        ints or symbolic sizes) and tl `dtypes` (name -> DType)."""
        env = dict(self.env)
        for sym, (param, axis) in self.symbol_sources.items():
            env[sym] = shapes[param][axis]
        for name, sources in self.dtype_sources.items():
            found = next((dtypes[s] for s in sources if dtypes.get(s) is not None), None)
            if found is not None and name not in self.constants:
                env[name] = found
        out = []
        for r in self.results:
            shape = tuple(d if isinstance(d, int) else evaluate(d, env) for d in r.dims)
            out.append((shape, env[r.dtype] if isinstance(r.dtype, str) else r.dtype))
        return out

    def symbol_checks(self):
        """(symbol, (input, axis), [(input, axis), ...]): every further input axis that must
        have the size the first one gives (the fake implementation asserts them, so that
        torch.compile rejects a wrong shape as the call would)."""
        inputs = {a.name for a in self.args if a.kind == "tensor"}
        for sym, uses in self.fn.shape_symbols.items():
            here = [(u.param, u.axis) for u in uses if u.param in inputs]
            if len(here) > 1:
                yield sym, here[0], here[1:]

    # ---- internals --------------------------------------------------------------------------------
    def _written(self, mutates, outputs) -> set:
        tensors = {p.name for p in self.fn.tensor_params}
        if self.tile_op:
            return set()  # a tile op writes only the result it allocates
        if mutates is not None:
            mutates = {mutates} if isinstance(mutates, str) else set(mutates)
            for m in mutates:
                if m not in tensors:
                    raise OpError(f"mutates: '{self.kernel.name}' has no array parameter '{m}'")
            return mutates | set(outputs)
        probe = {k: v for k, v in self.constants.items()}
        for sym in self.fn.from_arrays:
            probe.setdefault(sym, PROBE_SIZE)
        try:
            grids = self.kernel.scheduled_grids(probe, "sm_80")
        except TlcError as e:
            raise OpError(f"cannot tell which arrays '{self.kernel.name}' writes without scheduling it, which "
                          f"failed: {str(e).splitlines()[0]}; name them: mutates=('y', ...)") from None
        written = set()
        for g in grids:
            written |= written_names(g.body)
            self.asserts = self.asserts or bool(device_assert.sites(g.body))
        return written & tensors

    def _arg(self, p, written: set) -> OpArg:
        if p.role == "tensor":
            return OpArg(p.name, "tensor", mutated=p.name in written)
        return OpArg(p.name, "scalar", p.type.dtype, has_default=p.has_default, default=p.value)

    def _result_dtype(self, annotation: str | None, checked: DType) -> DType | str:
        p = self.fn.param(annotation) if annotation else None
        if p is not None and p.role == "dtype":
            return annotation
        return checked

    def _check_result(self, r: OpResult) -> None:
        what = "the result" if self.tile_op else f"the output '{r.name}'"
        if isinstance(r.dtype, str) and r.dtype not in self.constants and not self.dtype_sources.get(r.dtype):
            raise OpError(f"the dtype of {what} of '{self.kernel.name}' is '{r.dtype}', which no input binds; "
                          f"fix it: constants={{'{r.dtype}': 'f32'}}")
        known = set(self.env) | set(self.symbol_sources)
        for d in r.dims:
            if isinstance(d, int):
                continue
            try:
                evaluate(d, {k: 1 for k in known})
            except NotConstant as e:
                bad = e.node.id if isinstance(e.node, n.Name) else format_dim(d)
                raise OpError(f"{what} of '{self.kernel.name}' has the dimension {format_dim(d)}, but '{bad}' is "
                              "the size of no input; an operator allocates its outputs from its inputs' sizes: "
                              "leave it out of outputs= and pass it as an argument") from None


def _annotation(fn, param: str) -> str | None:
    p = next((q for q in fn.node.params if q.name == param), None)
    return p.annotation.name if p is not None else None


def _as_dtype(v):
    return DTYPES[v] if isinstance(v, str) and v in DTYPES else v


def _names(names) -> str:
    names = sorted(names)
    return ", ".join(f"'{x}'" for x in names) if names else "none"


def _schema_scalar(dt: DType) -> str:
    return "bool" if dt.is_bool else "int" if dt.is_int else "float"


def _schema_default(dt: DType, value) -> str:
    if dt.is_bool:
        return "True" if value else "False"
    if dt.is_int:
        return str(int(value))
    return repr(float(value))
