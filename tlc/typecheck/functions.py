"""One function: its decorators, its parameters (tensors with shape symbols, scalars,
constants, dtypes), its body, and what it returns."""
from __future__ import annotations

from ..dtypes import ALIASES, DTYPES, DType, F32, lookup
from ..parser import nodes as n
from ..parser.nodes import replace  # dataclasses.replace, faster
from . import consteval, dims, rules
from .builtins import DECORATORS
from .env import BLOCK, CONST, DTYPE, LOCAL, LOOP, SCALAR, SHAPE, TENSOR, ModuleEnv, Scope, Symbol, did_you_mean
from .exprs import ExprChecker
from .program import NOT_ONE, CheckedFunction, CheckedParam, SymbolUse
from .stmts import StmtChecker
from .placement import PlacementChecker
from .scan import ScanChecker
from .tiles import TileChecker
from .types import GLOBAL, VALUE, ScalarType, TensorType, describe, format_shape


def function_kind(fn: n.FunctionDef, bag) -> str | None:
    """kernel, tile_op or device, from the decorators; reports misuse of decorators.  None when
    a decorator is unknown: the function's role is then unknown and its body is not checked,
    so that one misspelt decorator does not cascade."""
    seen = set()
    unknown = False
    for d in fn.decorators:
        if d.name not in DECORATORS:
            bag.error("E022", f"unknown decorator '@{d.name}'", d.span,
                      did_you_mean(d.name, DECORATORS) or "the decorators are @kernel, @tile_op, @fuse and @autotune(...)")
            unknown = True
            continue
        if d.name in seen:
            bag.error("E023", f"'@{d.name}' is given twice", d.span)
        seen.add(d.name)
        if d.name != "autotune" and (d.args or d.keywords):
            bag.error("E024", f"'@{d.name}' takes no arguments", d.span)
    if "kernel" in seen and "tile_op" in seen:
        bag.error("E023", f"'{fn.name}' cannot be both a @kernel and a @tile_op", fn.name_span)
        unknown = True
    if "fuse" in seen and "tile_op" not in seen:
        bag.error("E023", "'@fuse' applies to a @tile_op", next(d.span for d in fn.decorators if d.name == "fuse"),
                  "add @tile_op below @fuse")
    if "autotune" in seen and not ({"kernel", "tile_op"} & seen):
        bag.error("E023", "'@autotune' applies to a @kernel or a @tile_op",
                  next(d.span for d in fn.decorators if d.name == "autotune"))
    if unknown:
        return None
    return "kernel" if "kernel" in seen else "tile_op" if "tile_op" in seen else "device"


class FunctionChecker(ExprChecker, StmtChecker, TileChecker, PlacementChecker, ScanChecker):
    """Checks one function with its constants bound (`overrides`, else the defaults)."""

    def __init__(self, fn: n.FunctionDef, kind: str, module: ModuleEnv, program, bag, overrides=None):
        self.fn, self.kind, self.module, self.program, self.bag = fn, kind, module, program, bag
        self.overrides = dict(overrides or {})
        self.scope = Scope()
        self.consts: dict = dict(module.constants)
        self.in_grid = self.in_parallel = self.grid_seen = False
        self.parallel_scope: Scope | None = None  # the innermost parallel loop's body, while in_parallel
        self.depth = 0
        self.loops: list[str] = []
        self.ended_loops: set[str] = set()  # loop variables whose loop is over (for a hint)
        self.returns = None
        self.calls: list = []
        # shape symbols of a kernel that something needs as a constant (name -> (span, what)):
        # each is specialized, bound from the arrays at a call; and those bound here (name -> size)
        self.to_specialize: dict = {}
        self.specialized: dict = {}
        # shape symbols the kernel compares with 1 (name -> span of the first comparison): each is
        # specialized on that test (CheckedFunction.ones); and those bound to NOT_ONE here
        self.ones: dict = {}
        self.not_one: list = []
        # a kernel's names assigned once, at the top of its body or of a grid: an integer value
        # built from constants is a constant (LANGUAGE.md section 2); one built from constants
        # and shape symbols is kept here (name -> its value) in case a constant is needed of it
        self.assigned_once = _assigned_once(fn.body) if kind == "kernel" else {}
        self.derived: dict = {}
        self.grid_constants: list = []  # per grid, the constants assigned in it (name -> value)
        self.earlier_grids: set = set()  # the names of the grids above (for E020's hint)
        # a kernel's variables assigned once, from values that cannot change while they live
        # (constants, sizes, scalar parameters, block indices, loop variables): name -> value, so
        # that a region kv_start:kv_end with kv_end = kv_start + BN has the constant extent BN
        self.assignment_counts = _assignments(fn.body) if kind == "kernel" else {}
        self.named_values: dict = {}
        self.workspaces: list = []  # alloc_global(...): tensors in global memory the runtime allocates per call

    # ---- services for the mixins -------------------------------------------------------------
    def error(self, code, message, span, hint=None):
        self.bag.error(code, message, span, hint)

    def const_value(self, e, what: str, required: bool = True):
        try:
            v = consteval.evaluate(e, self.consts)
        except consteval.TooLarge as err:
            consteval.report_too_large(self.bag, err)
            return None
        except consteval.NotConstant as nc:
            if required and self._specializes(e, what):
                return 1  # a stand-in: the value is checked again once the symbols are bound
            if required:
                bad = nc.node
                detail = consteval.not_constant_detail(nc)
                hint = None if isinstance(nc, consteval.DividesByZero) else \
                    "use a literal, a module constant or a 'const' parameter"
                if isinstance(bad, n.Name) and self.kind == "kernel" and getattr(self.scope.lookup(bad.id), "kind", None) == LOCAL:
                    hint = (f"a name assigned once from constants, at the top of the kernel or of its grid, is a "
                            f"constant; '{bad.id}' is assigned elsewhere, more than once, or from a run-time value")
                self.error("E031", f"{what} must be a compile-time constant; {detail}", bad.span, hint)
            return None
        if isinstance(v, DType):
            if required:
                self.error("E031", f"{what} must be a number, found the dtype {v}", e.span)
            return None
        return v

    def _specializes(self, e, what: str, span=None) -> bool:
        """Whether `e` is constant but for a kernel's shape symbols, which are then recorded to
        be specialized (compiled in, one kernel per size, bound from the arrays at a call), at
        `span` or their own."""
        if self.kind != "kernel":
            return False
        free = [x for x in self._free_names(e) if x.id not in self.consts and x.id not in ("True", "False")]
        symbols = [x for x in free if self._is_symbol(x.id)]
        if not symbols or len(symbols) != len(free):
            return False
        for x in symbols:
            self.to_specialize.setdefault(x.id, (span or x.span, what))
        return True

    def _free_names(self, e) -> list:
        """The names `e` reads, with a derived value's name replaced by the names it reads."""
        out, seen = [], set()
        stack = _names(e)[::-1]
        while stack:
            x = stack.pop()
            if x.id in self.derived and x.id not in seen:
                seen.add(x.id)
                stack.extend(_names(self.derived[x.id])[::-1])
            elif x.id not in self.derived:
                out.append(x)
        return out

    def stmt_Assign(self, s: n.Assign):
        """`BLOCK = BM * 2` or `n_iters = cdiv(K, BK)`, assigned once at the top of a kernel or
        its grid: an integer built from constants is a constant itself, and the statement goes."""
        if isinstance(s.target, n.Name) and s.annotation is None and self.assignment_counts.get(s.target.id) == 1 \
                and all(self._unchanging(x.id) for x in _names(s.value)):
            self.named_values[s.target.id] = s.value
        if isinstance(s.value, n.Call) and isinstance(s.value.func, n.Name) and s.value.func.id == "alloc_global" \
                and self.scope.lookup("alloc_global") is None and self.kind == "kernel":
            return self._workspace(s)
        if id(s) in self.assigned_once and self.scope.lookup(s.target.id) is None and s.target.id not in self.consts:
            try:
                v = consteval.evaluate(s.value, self.consts)
            except consteval.NotConstant:
                v = None
            if isinstance(v, int):  # bools too
                self.expr(s.value)  # its diagnostics, if any
                self.consts[s.target.id] = v
                self.scope.define(Symbol(s.target.id, CONST, replace(rules.literal_type(v), weak=False), s.target.span))
                return n.Pass(span=s.span)
            if v is None and self._constant_but_for_symbols(s.value):
                self.derived[s.target.id] = s.value
        return super().stmt_Assign(s)

    def stmt_With(self, s: n.With):
        """A kernel's grids, at the top of its body, run as launches one after another (LANGUAGE.md
        section 2); each has its own names.  A grid inside another statement is E029."""
        if self.kind != "kernel" or not (isinstance(s.context, n.Call) and isinstance(s.context.func, n.Name)
                                         and s.context.func.id == "grid"):
            return super().stmt_With(s)
        if self.depth > 1:
            self.error("E029", "a grid opens at the top of a kernel's body, not inside another block", s.context.span,
                       "a kernel's grids run one after another: write them one below the other")
            return s
        self.grid_seen = False
        outer, self.scope = self.scope, Scope(self.scope)
        consts, derived = dict(self.consts), dict(self.derived)  # a grid's own constants end with it
        try:
            return super().stmt_With(s)
        finally:
            self.grid_constants.append({k: v for k, v in self.consts.items() if k not in consts})
            self.earlier_grids |= set(self.scope.symbols)
            self.scope, self.consts, self.derived = outer, consts, derived

    def check_Name(self, e: n.Name) -> n.Name:
        if e.id in self.earlier_grids and self.scope.lookup(e.id) is None and e.id not in self.module.constants:
            self.error("E020", f"unknown name '{e.id}'", e.span,
                       f"'{e.id}' is a name of a grid above; grids share only global memory: pass it through a "
                       "tensor parameter or an alloc_global workspace")
            return e
        return super().check_Name(e)

    def _workspace(self, s: n.Assign):
        """`ws = alloc_global(f32[B, H, S])` at the top of a kernel: a tensor in global memory that
        the runtime allocates for each call (the C launcher's caller passes the memory), read and
        written by the grids like a tensor parameter.  Its dimensions are constants or shape
        symbols of the tensor parameters, so that a call can size it."""
        call = s.value
        if self.depth != 1:
            self.error("E243", "alloc_global(...) allocates a workspace for the whole call: write it at the top of the "
                       "kernel, before the grids that use it", call.span)
            return s
        spec = call.args[0] if len(call.args) == 1 and not call.keywords else None
        if not isinstance(s.target, n.Name) or not (isinstance(spec, n.Subscript) and isinstance(spec.value, n.Name)):
            self.error("E243", "a workspace is 'NAME = alloc_global(DTYPE[D0, D1, ...])'", s.span)
            return s
        dt = self.annotation_dtype(n.TypeExpr(spec.value.id, None, spec.value.span))
        dims = []
        for d in spec.indices:
            if isinstance(d, n.Name) and self._is_symbol(d.id):
                dims.append(d)
                continue
            v = self.const_value(d, "a workspace dimension", required=False)
            if not isinstance(v, int) or isinstance(v, bool) or v <= 0:
                self.error("E244", "a workspace dimension is a positive constant or a shape symbol of the tensor "
                           "parameters", d.span, "the call sizes the workspace from its arrays and constants")
                return s
            dims.append(d)
        if self.scope.lookup(s.target.id) is not None or s.target.id in self.consts:
            self.error("E025", f"'{s.target.id}' is already defined", s.target.span)
            return s
        if dt is None:
            return s
        ty = TensorType(dt, tuple(dims), GLOBAL)
        self.scope.define(Symbol(s.target.id, TENSOR, ty, s.target.span))
        self.workspaces.append(CheckedParam(s.target.id, "tensor", ty, span=s.span))
        return n.Pass(span=s.span)

    def _unchanging(self, name: str) -> bool:
        if name in self.consts or name in self.named_values:
            return True
        sym = self.scope.lookup(name)
        return sym is not None and sym.kind in (SHAPE, SCALAR, BLOCK, LOOP, CONST)

    def expanded(self, e):
        """`e` with the variables of `named_values` replaced by their values (a region's bounds
        before their difference is taken)."""
        if isinstance(e, n.Name) and e.id in self.named_values and self.scope.lookup(e.id) is not None:
            return self.expanded(self.named_values[e.id])
        if isinstance(e, n.BinOp):
            return replace(e, left=self.expanded(e.left), right=self.expanded(e.right))
        if isinstance(e, n.UnaryOp):
            return replace(e, operand=self.expanded(e.operand))
        if isinstance(e, n.Call):
            return replace(e, args=tuple(self.expanded(a) for a in e.args))
        return e

    def _constant_but_for_symbols(self, e) -> bool:
        """Whether `e` is constant once its shape symbols are (any size stands in for them)."""
        env = {**self.consts, **{x.id: 1 for x in self._free_names(e) if self._is_symbol(x.id)}}
        for name, value in self.derived.items():  # in the order they were assigned
            try:
                env[name] = consteval.evaluate(value, env)
            except consteval.NotConstant:  # one of symbols `e` does not read
                continue
        try:
            consteval.evaluate(e, env)
        except consteval.NotConstant:
            return False
        return True

    def _is_symbol(self, name: str) -> bool:
        sym = self.scope.lookup(name)
        return sym is not None and sym.kind == SHAPE

    def dim_value(self, d):
        try:
            v = consteval.evaluate(d, self.consts)
        except consteval.NotConstant:
            return None
        return v if isinstance(v, int) and not isinstance(v, bool) else None

    def annotation_dtype(self, t: n.TypeExpr) -> DType | None:
        if t.name in self.consts and isinstance(self.consts[t.name], DType):
            return self.consts[t.name]
        sym = self.scope.lookup(t.name)
        if sym is not None and sym.kind == DTYPE:
            return self.consts.get(t.name)
        dt = lookup(t.name)
        if dt is None:
            known = {name for name, v in self.consts.items() if isinstance(v, DType)} | set(DTYPES) | set(ALIASES) \
                | {"const", "dtype"}
            self.error("E021", f"unknown type '{t.name}'", t.span, did_you_mean(t.name, known))
        return dt

    def signature(self, qualname):
        return self.program.signature(qualname)

    def record_call(self, qualname, span):
        self.calls.append((qualname, span))

    def return_value(self, s, value):
        if self.returns is None:
            self.error("E040", f"'{self.fn.name}' declares no return type, so it cannot return a value", s.span,
                       f"declare it: def {self.fn.name}(...) -> f32:")
            return
        t = value.ty
        if t is None:
            return
        want = self.returns
        if isinstance(want, TensorType):
            if not isinstance(t, TensorType):
                self.error("E043", f"a tile op returns a tensor; this is {describe(t)}", value.span)
                return
            if not rules.assignable(ScalarType(t.dtype), want.dtype):
                self.error("E043", f"'{self.fn.name}' returns {want.dtype} but this is {t.dtype}; narrowing needs a cast",
                           value.span, f"write {want.dtype}(...)")
            if len(t.shape) != len(want.shape) or any(
                    a != b and (self.dim_value(a) is None or self.dim_value(a) != self.dim_value(b))
                    for a, b in zip(t.shape, want.shape)):
                self.error("E043", f"'{self.fn.name}' returns {want.dtype}{format_shape(want.shape)} but this has shape "
                           f"{format_shape(t.shape)}", value.span)
            return
        if isinstance(t, TensorType):
            self.error("E040", f"a device function returns a scalar; this is {describe(t)}", value.span)
        elif isinstance(t, ScalarType) and not rules.assignable(t, want.dtype):
            self.error("E040", f"'{self.fn.name}' returns {want.dtype} but this is {t.dtype}", value.span,
                       f"write {want.dtype}(...) to convert")

    # ---- the function ---------------------------------------------------------------------------
    def check(self, autotune: dict) -> CheckedFunction:
        params = self._params()
        if self.fn.returns is not None:
            self.returns = self._return_type(self.fn.returns)
        elif self.kind == "tile_op":
            self.error("E043", f"a tile op declares what it returns: def {self.fn.name}(...) -> f16[M, N]:", self.fn.name_span)
        body = self.block(self.fn.body)
        if self.kind == "kernel" and not self.grid_seen:
            self.error("E029", f"the kernel '{self.fn.name}' has no grid", self.fn.name_span,
                       "its body is one 'with grid(...) as (bx, by):' block")
        if self.kind == "kernel" and self.grid_seen:
            for s in body:  # values assigned before the grid are computed at the top of it
                if not isinstance(s, (n.With, n.Pass)) and not (isinstance(s, n.ExprStmt) and isinstance(s.expr, n.Constant)) \
                        and not (isinstance(s, n.Assign) and isinstance(s.target, n.Name)):
                    self.error("E029", "statements of a kernel go inside its 'with grid(...)' block", s.span)
        if self.kind != "kernel" and self.returns is not None and not _always_returns(self.fn.body):
            self.error("E040", f"'{self.fn.name}' can reach its end without returning a value", self.fn.name_span)
        consts = {k: v for k, v in self.consts.items()}
        shape_symbols = {}
        for p in params:
            if p.role == "tensor" and p.type is not None:
                for axis, d in enumerate(p.type.shape):
                    if isinstance(d, n.Name) and self.scope.lookup(d.id) is not None and self.scope.lookup(d.id).kind == SHAPE:
                        shape_symbols.setdefault(d.id, []).append(SymbolUse(p.name, axis))
        return CheckedFunction(
            qualname=f"{self.module.key}:{self.fn.name}", name=self.fn.name, kind=self.kind, params=tuple(params),
            returns=self.returns, body=body, node=self.fn, constants=consts,
            shape_symbols={k: tuple(v) for k, v in shape_symbols.items()}, autotune=autotune,
            fuse=self.fn.has_decorator("fuse"), module_path=self.module.path,
            from_arrays=self._from_arrays(params), to_specialize=dict(self.to_specialize),
            specialized=dict(self.specialized), ones=tuple(x for x in self.ones if x in self._ones()),
            not_one=tuple(self.not_one),
            workspaces=tuple(self.workspaces),
            grid_constants=tuple(self.grid_constants))

    def _from_arrays(self, params) -> dict:
        """The constants a call binds from its arrays (name -> uses): the shape symbols that are
        specialized (on their size, or on being 1), and the `const` parameters that stand as a whole dimension of a tensor
        parameter (`x: f32[N]` with `N: const`), which are the same thing spelt out."""
        consts = {p.name for p in params if p.role == "const"}
        wanted = set(self.to_specialize) | set(self.specialized) | consts | self._ones()
        out: dict = {}
        for p in params:
            if p.role == "tensor" and p.type is not None:
                for axis, d in enumerate(p.type.shape):
                    if isinstance(d, n.Name) and d.id in wanted:
                        out.setdefault(d.id, []).append(SymbolUse(p.name, axis))
        return {k: tuple(v) for k, v in out.items()}

    def _ones(self) -> set:
        """The shape symbols specialized on being 1: those compared with 1 that nothing needs
        as a constant and no binding has decided."""
        return set(self.ones) - set(self.to_specialize) - set(self.specialized) - set(self.not_one)

    def _params(self) -> list[CheckedParam]:
        seen: dict = {}
        for p in self.fn.params:
            if p.name in seen:
                self.error("E025", f"parameter '{p.name}' is given twice", p.span)
            seen[p.name] = p
        # Constants and dtypes first: tensor shapes and defaults may name them.
        out: dict[str, CheckedParam] = {}
        for p in self.fn.params:
            if p.annotation.name == "const" and p.annotation.dims is None:
                out[p.name] = self._const_param(p)
            elif p.annotation.name == "dtype" and p.annotation.dims is None:
                out[p.name] = self._dtype_param(p)
        for p in self.fn.params:
            if p.name not in out:
                out[p.name] = self._value_param(p)
        dims.check_deferred(self)
        for p in self.fn.params:
            cp = out[p.name]
            if cp.role == "dtype" and cp.value is None:
                bound = any(q.annotation.name == p.name and q.annotation.dims is not None for q in self.fn.params)
                if not bound:
                    self.error("E045", f"the dtype parameter '{p.name}' has no default and no tensor parameter binds it",
                               p.span, f"give it a default: {p.name}: dtype = f16")
                self.consts[p.name] = F32
                out[p.name] = replace(cp, value=F32)
        return [out[p.name] for p in self.fn.params]

    def _const_param(self, p: n.Param) -> CheckedParam:
        if self.kind == "device":
            self.error("E062", "device function parameters are scalars; constants belong to kernels and tile ops", p.span)
        if p.default is None and p.name not in self.overrides and self.kind == "kernel" and _is_dimension(self.fn, p.name):
            # a size with no default, bound from the arrays at a call: a specialized shape symbol
            self.scope.define(Symbol(p.name, SHAPE, ScalarType(rules.I32), p.span))
            self.to_specialize.setdefault(p.name, (p.span, None))
            return CheckedParam(p.name, "const", None, span=p.span)
        if p.default is None and p.name not in self.overrides:
            self.error("E051", f"the constant '{p.name}' needs a default value", p.span, f"write {p.name}: const = 128")
            self.scope.define(Symbol(p.name, CONST, ScalarType(rules.I32, const=True), p.span))
            return CheckedParam(p.name, "const", None, span=p.span)
        value = self.overrides.get(p.name)
        if value is None:
            value = self.const_value(p.default, f"the default of '{p.name}'")
        if value is None:
            value = 0
        if isinstance(value, list):
            self.error("E051", f"the constant '{p.name}' must be a number or a bool", p.default.span)
            value = 0
        ty = replace(rules.literal_type(value), weak=False)
        self.consts[p.name] = value
        self.scope.define(Symbol(p.name, CONST, ty, p.span))
        return CheckedParam(p.name, "const", ty, value, p.default is not None, span=p.span)

    def _dtype_param(self, p: n.Param) -> CheckedParam:
        if self.kind == "device":
            self.error("E062", "device function parameters are scalars; dtype parameters belong to kernels and tile ops", p.span)
        value = self.overrides.get(p.name)
        if value is None and p.default is not None:
            if isinstance(p.default, n.Name) and (lookup(p.default.id) or isinstance(self.module.constants.get(p.default.id), DType)):
                value = lookup(p.default.id) or self.module.constants[p.default.id]
            else:
                self.error("E045", f"the default of the dtype parameter '{p.name}' must be a dtype such as f16",
                           p.default.span)
        if value is not None:
            self.consts[p.name] = value
        self.scope.define(Symbol(p.name, DTYPE, None, p.span))
        return CheckedParam(p.name, "dtype", None, value, p.default is not None, span=p.span)

    def _value_param(self, p: n.Param) -> CheckedParam:
        a = p.annotation
        if p.default is not None and a.dims is not None:
            self.error("E024", f"the tensor parameter '{p.name}' cannot have a default", p.default.span)
        dt = self.annotation_dtype(a)
        if a.dims is None:
            if p.name in self.consts:
                self.error("E025", f"the parameter '{p.name}' hides the module constant '{p.name}'", p.span)
            ty = ScalarType(dt) if dt is not None else None
            self.scope.define(Symbol(p.name, SCALAR, ty, p.span))
            value = None
            if p.default is not None and ty is not None:
                d = self.expr(p.default)
                if isinstance(d.ty, ScalarType) and not rules.assignable(d.ty, dt):
                    self.error("E033", f"the default of '{p.name}' is {d.ty.dtype}, not {dt}", p.default.span)
                else:  # what a call that leaves it out passes (kernel.Kernel.bind)
                    sizes = set(self.to_specialize)
                    value = self.const_value(p.default, f"the default of '{p.name}'")
                    for name in set(self.to_specialize) - sizes:  # a size is known at the call only
                        del self.to_specialize[name]
                        self.error("E159", f"the default of '{p.name}' reads the shape symbol '{name}', whose "
                                   "size only a call gives", p.default.span,
                                   f"pass '{p.name}' at the call, or make it a 'const'")
            return CheckedParam(p.name, "scalar", ty, value, p.default is not None, span=p.span)
        if self.kind == "device":
            self.error("E062", "device function parameters are scalars; pass elements, not tensors", p.span)
        dims = tuple(self._dim(d, p.name) for d in a.dims)
        ty = TensorType(dt, dims, GLOBAL) if dt is not None else None
        self.scope.define(Symbol(p.name, TENSOR, ty, p.span))
        return CheckedParam(p.name, "tensor", ty, None, False, span=p.span)

    def _dim(self, d, param: str):
        """A dimension of a parameter's type: a literal, a constant expression, or a shape symbol."""
        clash = isinstance(d, n.Name) and next(
            (q for q in self.fn.params if q.name == d.id and q.annotation.name != "const"), None)
        if clash:  # `A: f32[A, K]`, `X: f32[n], n: i32`: a size is not that parameter
            kind = "tensor" if clash.annotation.dims is not None else \
                "dtype" if clash.annotation.name == "dtype" else "scalar"
            self.error("E044", f"the dimension '{d.id}' is the {kind} parameter '{d.id}'", d.span,
                       "a dimension is a literal, a constant expression or a shape symbol")
            return d
        if isinstance(d, n.Name) and d.id not in self.consts:
            sym = self.scope.lookup(d.id)
            if sym is None:
                if lookup(d.id) is not None:
                    self.error("E044", f"'{d.id}' is a dtype, not a dimension", d.span)
                if self.kind == "kernel" and isinstance(self.overrides.get(d.id), int):
                    return self._bind_symbol(d)
                if self.kind == "kernel" and self.overrides.get(d.id) is NOT_ONE:
                    self.not_one.append(d.id)  # a run-time size, known not to be 1
                self.scope.define(Symbol(d.id, SHAPE, ScalarType(rules.I32), d.span))
            elif sym.kind != SHAPE:
                self.error("E044", f"the dimension '{d.id}' is the {sym.kind} '{d.id}'", d.span,
                           "a dimension is a literal, a constant expression or a shape symbol")
            return d
        try:
            v = consteval.evaluate(d, self.consts)
        except consteval.TooLarge as err:
            consteval.report_too_large(self.bag, err)
            return d
        except consteval.NotConstant as nc:
            if dims.defer(self, d, param):  # K // 2: checked once every parameter is known
                return d
            bad = nc.node
            if isinstance(bad, n.Name):
                self.error("E044", f"'{bad.id}' is not a constant, so it cannot be part of a dimension expression", bad.span,
                           "a tile op's shape symbol stands alone as a whole dimension; a kernel's may be part of an "
                           "expression (K // 2)")
            else:
                self.error("E044", "a dimension is a literal, a constant expression or a shape symbol", d.span)
            return d
        if v is not None and (not isinstance(v, int) or isinstance(v, bool) or v <= 0):
            self.error("E061", f"a dimension must be a positive integer, found {v!r}", d.span)
        return d

    def _bind_symbol(self, d: n.Name):
        """A specialized shape symbol with its size: a constant from here on (an i32, as the
        symbol is when it stays dynamic)."""
        value = self.overrides[d.id]
        self.consts[d.id] = value
        self.specialized[d.id] = value
        self.scope.define(Symbol(d.id, CONST, ScalarType(rules.I32, const=True), d.span))
        return d

    def _return_type(self, t: n.TypeExpr):
        dt = self.annotation_dtype(t)
        if dt is None:
            return None
        if self.kind == "kernel":
            self.error("E041", "a kernel returns nothing; write results into a tensor parameter", t.span)
            return None
        if self.kind == "device":
            if t.dims is not None:
                self.error("E040", "a device function returns a scalar", t.span)
                return None
            return ScalarType(dt)
        if t.dims is None:
            self.error("E043", f"a tile op returns a tensor such as {dt}[M, N]", t.span)
            return None
        dims = []
        for d in t.dims:
            if isinstance(d, n.Name) and d.id not in self.consts:
                sym = self.scope.lookup(d.id)
                if sym is None or sym.kind != SHAPE:
                    self.error("E044", f"the dimension '{d.id}' of the result is not a shape symbol of a parameter", d.span)
            else:
                self.const_value(d, "a dimension of the result")
            dims.append(d)
        return TensorType(dt, tuple(dims), VALUE)


def _assigned_once(body) -> set:
    """The ids of the assignments `NAME = value` at the top of `body` or of a grid in it whose
    name no other statement assigns (nor a loop takes as its variable) where that name is seen:
    outside the grids, or in that grid (each grid has its own names)."""
    grids = [w for w in body if isinstance(w, n.With)]
    outside = _assignments([s for s in body if not isinstance(s, n.With)])
    inside = [_assignments(w.body) for w in grids]
    everywhere = {name: c + sum(g.get(name, 0) for g in inside) for name, c in outside.items()}
    once = [(s, everywhere) for s in body] + [(s, {**counts, **{k: v + counts.get(k, 0) for k, v in outside.items()}})
                                              for w, counts in zip(grids, inside) for s in w.body]
    return {id(s) for s, counts in once if isinstance(s, n.Assign) and isinstance(s.target, n.Name)
            and s.annotation is None and counts.get(s.target.id) == 1}


def _assignments(stmts) -> dict:
    """How many statements in `stmts`, at any depth, assign each name (a loop its variable)."""
    counts: dict = {}
    stack = list(stmts)
    while stack:
        s = stack.pop()
        targets = [s.target] if isinstance(s, (n.Assign, n.AugAssign)) else list(s.targets) if isinstance(s, n.For) else []
        for t in targets:
            if isinstance(t, n.Name):
                counts[t.id] = counts.get(t.id, 0) + 1
        for f in ("body", "orelse"):
            stack.extend(getattr(s, f, None) or ())
    return counts


def _is_dimension(fn: n.FunctionDef, name: str) -> bool:
    """Whether `name` stands as a whole dimension of a tensor parameter's type."""
    return any(isinstance(d, n.Name) and d.id == name for p in fn.params if p.annotation.dims for d in p.annotation.dims)


def _names(e) -> list:
    """The names read by the expression `e`, in order."""
    out, stack = [], [e]
    while stack:
        x = stack.pop()
        if isinstance(x, n.Name):
            out.append(x)
            continue
        if isinstance(x, n.Call):  # the function's name is not a value
            stack.extend(reversed(x.args + tuple(k.value for k in x.keywords)))
            continue
        for f in getattr(type(x), "__dataclass_fields__", {}):
            if f not in ("span", "ty"):
                v = getattr(x, f)
                stack.extend(reversed(v) if isinstance(v, tuple) else (v,))
    return out


def _always_returns(body) -> bool:
    for s in body:
        if isinstance(s, n.Return):
            return True
        if isinstance(s, n.If) and s.orelse and _always_returns(s.body) and _always_returns(s.orelse):
            return True
    return False


def check_autotune(fn: n.FunctionDef, module: ModuleEnv, bag) -> dict:
    out = {}
    consts = {p.name for p in fn.params if p.annotation.name == "const" and p.annotation.dims is None}
    for d in fn.decorators:
        if d.name != "autotune":
            continue
        if d.args is None or (not d.args and not d.keywords):
            bag.error("E024", "@autotune(...) lists the values to try: @autotune(BM=[64, 128])", d.span)
            continue
        for a in d.args:
            bag.error("E024", "@autotune takes keyword arguments: NAME=[values]", a.span)
        for k in d.keywords:
            if k.name not in consts:
                bag.error("E024", f"@autotune names '{k.name}', which is not a 'const' parameter of '{fn.name}'", k.span,
                          did_you_mean(k.name, consts))
                continue
            try:
                values = consteval.evaluate(k.value, module.constants)
            except consteval.NotConstant:
                values = None
            if not isinstance(values, list) or not values or any(isinstance(v, (list, DType)) for v in values):
                bag.error("E024", f"@autotune's '{k.name}' must be a non-empty list of constants, e.g. [64, 128]", k.value.span)
                continue
            out[k.name] = values
    return out
