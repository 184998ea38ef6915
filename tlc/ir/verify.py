"""The IR verifier: run between passes so that malformed IR stops before any C is written.

Owns the structural rules of the tile IR (names, ranks, shapes, scopes, dtypes, where control
flow may go).  A failure is the scheduler's bug, not the user's, so `IRVerifyError` names the
kernel and the rule in plain words, and carries the node's span when it has one.
"""
from __future__ import annotations

from ..diagnostics import Span, TlcError
from ..dtypes import BOOL, I32, DType, can_widen, gemm_operands_agree
from ..frozen import record
from .nodes import (ATOMIC_KINDS, BINARY_OPS, BIT_OPS, BUFFER_SCOPES, COMPARE_OPS,
                    LOGIC_OPS, LOOP_KINDS, MATH_FUNCS, REDUCE_KINDS, UNARY_OPS, Assign, Atomic,
                    BinOp, Break, BufferRef, Call, Cast, Const, Continue, Copy, Expr, Fill, For,
                    Gemm, If, Kernel, LetScalar, Load, Parallel, Print, Reduce, Region, Select,
                    Stmt, Store, Sync, UnaryOp, Var)
from .nodes import SCAN_KINDS, DimExpr, Scan
from .walk import variables


class IRVerifyError(TlcError):
    """Malformed tile IR: `str(e)` is `kernel 'NAME': MESSAGE`."""

    def __init__(self, kernel: str, message: str, span: Span | None = None):
        self.kernel, self.message, self.span = kernel, message, span
        super().__init__(f"kernel '{kernel}': {message}")


@record
class _Sym:
    kind: str  # tensor | scalar | shape | const | block | loop | parallel | let | buffer
    dtype: DType | None
    shape: tuple = ()
    scope: str = "global"  # memory scope of tensors and buffers
    parallel: object = None  # the Parallel a `let` or parallel var was declared in


_TILE_STMTS = {Copy: "copy", Gemm: "gemm", Fill: "fill", Reduce: "reduce", Scan: "cumsum", Sync: "sync"}


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {'indices' if word == 'index' else word + 's'}"


def _dims(shape) -> str:
    return "[" + ", ".join(str(d) for d in shape) + "]"


def _squeeze(shape) -> tuple:
    return tuple(d for d in shape if d != 1)


class _Verifier:
    def __init__(self, kernel: Kernel):
        self.k = kernel
        self.scopes: list[dict[str, _Sym]] = [{}]
        self.loops: list[str] = []  # innermost last: a loop kind or "parallel"
        self.parallel: Parallel | None = None
        # local buffer -> contexts (a Parallel or None for block level) that use / write it
        self.local_uses: dict[str, set[int]] = {}
        self.local_writes: dict[str, set[int]] = {}

    # ---- errors and names -------------------------------------------------------------------

    def fail(self, message: str, node=None):
        raise IRVerifyError(self.k.name, message, getattr(node, "span", None))

    def declare(self, name: str, sym: _Sym, node=None) -> None:
        if self.lookup(name) is not None:
            self.fail(f"'{name}' is declared twice", node)
        self.scopes[-1][name] = sym

    def lookup(self, name: str) -> _Sym | None:
        for scope in reversed(self.scopes):
            if name in scope:
                return scope[name]
        return None

    def resolve(self, name: str, node) -> _Sym:
        sym = self.lookup(name)
        if sym is None:
            self.fail(f"unknown name '{name}'", node)
        return sym

    def indexable(self, name: str, node, write: bool = False) -> _Sym:
        sym = self.resolve(name, node)
        if sym.kind not in ("tensor", "buffer"):
            self.fail(f"'{name}' is not a tensor or buffer", node)
        if sym.scope == "local":
            ctx = id(self.parallel) if self.parallel is not None else 0
            self.local_uses.setdefault(name, set()).add(ctx)
            if write:
                self.local_writes.setdefault(name, set()).add(ctx)
        return sym

    def buffer(self, name: str, role: str, scopes: tuple[str, ...], node, write=False) -> _Sym:
        sym = self.indexable(name, node, write)
        if sym.scope not in scopes:
            allowed = ", ".join(scopes[:-1]) + " or " + scopes[-1] if len(scopes) > 1 else scopes[0]
            self.fail(f"{role} '{name}' must be a {allowed} buffer, not {sym.scope}", node)
        return sym

    # ---- kernel header ----------------------------------------------------------------------

    def header(self) -> None:
        k = self.k
        if not 1 <= len(k.grid) <= 3:
            self.fail(f"grid has {len(k.grid)} dimensions; a kernel has 1 to 3")
        if len(k.block_vars) != len(k.grid):
            self.fail(f"grid has {_plural(len(k.grid), 'dimension')} but "
                      f"{_plural(len(k.block_vars), 'block variable')}")
        if k.threads <= 0:
            self.fail(f"threads must be positive, got {k.threads}")
        for name, value in k.constants:
            self.declare(name, _Sym("const", value if isinstance(value, DType) else None))
        for p in k.params:
            if p.kind == "scalar":
                if p.shape:
                    self.fail(f"scalar param '{p.name}' has a shape", p)
                self.declare(p.name, _Sym("scalar", p.dtype), p)
            elif p.kind == "tensor":
                self.declare(p.name, _Sym("tensor", p.dtype, p.shape), p)
            else:
                self.fail(f"param '{p.name}' has kind '{p.kind}'; expected 'tensor' or 'scalar'", p)
        expressions = []
        for p in k.params:
            for axis, d in enumerate(p.shape):
                if isinstance(d, str):
                    sym = self.lookup(d)
                    if sym is None:
                        self.declare(d, _Sym("shape", k.symbol_dtype(d)), p)
                    elif sym.kind != "shape":
                        self.fail(f"shape symbol '{d}' of '{p.name}' is also a {sym.kind}", p)
                elif isinstance(d, DimExpr):
                    expressions.append((p, axis, d))
                elif not isinstance(d, int) or isinstance(d, bool) or d <= 0:
                    self.fail(f"param '{p.name}' axis {axis} is {d!r}; expected a positive size "
                              "or a shape symbol", p)
        for p, axis, d in expressions:  # once every symbol is declared
            for v in variables(d.expr):
                if v.name not in k.shape_symbols():
                    self.fail(f"param '{p.name}' axis {axis} ({d}) reads '{v.name}', which is no shape symbol", p)
        for g in k.grid:
            self.expr(g)
            if not g.dtype.is_int:
                from .printer import expr as expr_text  # a message's text: the printer when one is said

                self.fail(f"grid extent {expr_text(g)} has dtype {g.dtype}, not an integer", g)
        for v in k.block_vars:
            self.declare(v, _Sym("block", I32))
        for b in k.buffers:
            if b.scope not in BUFFER_SCOPES:
                self.fail(f"buffer '{b.name}' has scope '{b.scope}'; expected shared, fragment "
                          "or local", b)
            for axis, d in enumerate(b.shape):
                if not isinstance(d, int) or isinstance(d, bool) or d <= 0:
                    self.fail(f"buffer '{b.name}' axis {axis} is {d!r}; expected a positive int", b)
            self.declare(b.name, _Sym("buffer", b.dtype, b.shape, b.scope), b)

    # ---- expressions ------------------------------------------------------------------------

    def expr(self, e: Expr) -> None:
        if isinstance(e, Const):
            return
        if isinstance(e, Var):
            sym = self.resolve(e.name, e)
            if sym.kind in ("tensor", "buffer"):
                self.fail(f"'{e.name}' is a {sym.kind}, not a scalar", e)
            if sym.kind == "const":
                if sym.dtype is not None:
                    self.fail(f"'{e.name}' is a dtype, not a scalar", e)
            elif sym.dtype != e.dtype:
                self.fail(f"'{e.name}' is {sym.dtype} but is used as {e.dtype}", e)
            return
        if isinstance(e, BinOp):
            self.expr(e.a)
            self.expr(e.b)
            self.binop(e)
            return
        if isinstance(e, UnaryOp):
            self.expr(e.x)
            if e.op not in UNARY_OPS:
                self.fail(f"unknown unary operator '{e.op}'", e)
            if e.op == "not" and e.dtype != BOOL:
                self.fail(f"'not' yields bool, not {e.dtype}", e)
            if e.op == "~" and not e.dtype.is_int:
                self.fail(f"'~' needs an integer operand, got {e.dtype}", e)
            if e.op == "-" and not can_widen(e.x.dtype, e.dtype):
                self.narrowing("-", e.x.dtype, e)
            return
        if isinstance(e, Call):
            for a in e.args:
                self.expr(a)
            if e.fn not in MATH_FUNCS:
                self.fail(f"unknown function '{e.fn}'", e)
            if len(e.args) != MATH_FUNCS[e.fn]:
                self.fail(f"'{e.fn}' takes {_plural(MATH_FUNCS[e.fn], 'argument')}, "
                          f"got {len(e.args)}", e)
            for a in e.args:
                if not can_widen(a.dtype, e.dtype) and e.fn != "bitcast":
                    self.narrowing(e.fn, a.dtype, e)
            return
        if isinstance(e, Cast):
            self.expr(e.x)
            return
        if isinstance(e, Select):
            for x in (e.cond, e.a, e.b):
                self.expr(x)
            if e.cond.dtype != BOOL:
                self.fail(f"condition of where has dtype {e.cond.dtype}, not bool", e)
            if not (e.a.dtype == e.b.dtype == e.dtype):
                self.fail(f"branches of where are {e.a.dtype} and {e.b.dtype} but the result "
                          f"is {e.dtype}", e)
            return
        if isinstance(e, Load):
            sym = self.indexable(e.name, e)
            self.indices(e.name, sym, e.indices, e)
            if sym.dtype != e.dtype:
                self.fail(f"load of '{e.name}' has dtype {e.dtype} but '{e.name}' is {sym.dtype}", e)
            return
        self.fail(f"unknown expression node {type(e).__name__}", e)

    def narrowing(self, op: str, src: DType, node) -> None:
        self.fail(f"operand of '{op}' is {src}, which does not convert to {node.dtype} "
                  "without a cast", node)

    def binop(self, e: BinOp) -> None:
        if e.op not in BINARY_OPS:
            self.fail(f"unknown binary operator '{e.op}'", e)
        if e.op in COMPARE_OPS or e.op in LOGIC_OPS:
            if e.dtype != BOOL:
                self.fail(f"'{e.op}' yields bool, not {e.dtype}", e)
            return
        if e.op in BIT_OPS:
            for x in (e.a, e.b):
                if not (x.dtype.is_int or (x.dtype.is_bool and e.op in "&|^")):
                    self.fail(f"'{e.op}' needs integer operands, got {x.dtype}", e)
        for x in (e.a, e.b):
            if not can_widen(x.dtype, e.dtype):
                self.narrowing(e.op, x.dtype, e)

    def indices(self, name: str, sym: _Sym, indices, node) -> None:
        if len(indices) != len(sym.shape):
            self.fail(f"'{name}' has rank {len(sym.shape)} but is indexed with "
                      f"{_plural(len(indices), 'index')}", node)
        for n, i in enumerate(indices):
            self.expr(i)
            if not i.dtype.is_int:
                self.fail(f"index {n} of '{name}' has dtype {i.dtype}, not an integer", node)

    # ---- statements -------------------------------------------------------------------------

    def block(self, body) -> None:
        self.scopes.append({})
        for s in body:
            self.stmt(s)
        self.scopes.pop()

    def stmt(self, s: Stmt) -> None:
        if self.parallel is not None and type(s) in _TILE_STMTS:
            self.fail(f"{_TILE_STMTS[type(s)]} inside parallel", s)
        method = getattr(self, "s_" + type(s).__name__, None)
        if method is None:
            self.fail(f"unknown statement node {type(s).__name__}", s)
        method(s)

    def operand(self, o, write: bool, node) -> tuple[_Sym, tuple]:
        """The symbol of one copy side and the extents it moves."""
        if isinstance(o, BufferRef):
            sym = self.indexable(o.name, node, write)
            if sym.kind == "tensor":
                self.fail(f"copy of the whole tensor '{o.name}' needs a region", node)
            return sym, sym.shape
        if not isinstance(o, Region):
            self.fail(f"copy operand must be a Region or a BufferRef, got {type(o).__name__}", node)
        sym = self.indexable(o.name, node, write)
        if o.dims is not None:  # a view of the tensor: its rank
            if sym.kind != "tensor" or len(o.offsets) != len(o.dims):
                self.fail(f"view region of '{o.name}' has {_plural(len(o.offsets), 'offset')} for "
                          f"{_plural(len(o.dims), 'dimension')}", node)
            for d in o.dims:
                self.expr(d)
        elif len(o.offsets) != len(sym.shape):
            self.fail(f"region of '{o.name}' has {_plural(len(o.offsets), 'offset')} but "
                      f"'{o.name}' has rank {len(sym.shape)}", node)
        if len(o.extents) != len(o.offsets):
            self.fail(f"region of '{o.name}' has {_plural(len(o.offsets), 'offset')} but "
                      f"{_plural(len(o.extents), 'extent')}", node)
        for n, off in enumerate(o.offsets):
            self.expr(off)
            if not off.dtype.is_int:
                self.fail(f"offset {n} of '{o.name}' has dtype {off.dtype}, not an integer", node)
        for x in o.extents:
            if not isinstance(x, int) or x <= 0:
                self.fail(f"region of '{o.name}' has extent {x!r}; expected a positive int", node)
        return sym, o.extents

    def s_Copy(self, s: Copy) -> None:
        src, src_ext = self.operand(s.src, False, s)
        dst, dst_ext = self.operand(s.dst, True, s)
        if src.kind == "tensor" and dst.kind == "tensor":
            self.fail(f"copy from '{s.src.name}' to '{s.dst.name}': both sides are global tensors", s)
        if _squeeze(src_ext) != _squeeze(dst_ext):
            self.fail(f"copy from '{s.src.name}' {_dims(src_ext)} to '{s.dst.name}' "
                      f"{_dims(dst_ext)}: shapes differ", s)

    def s_Gemm(self, s: Gemm) -> None:
        a = self.buffer(s.a, "gemm operand", ("shared", "fragment"), s)
        b = self.buffer(s.b, "gemm operand", ("shared", "fragment"), s)
        c = self.buffer(s.c, "gemm accumulator", ("fragment",), s, write=True)
        for name, sym in ((s.a, a), (s.b, b), (s.c, c)):
            if len(sym.shape) != 2:
                self.fail(f"gemm operand '{name}' must have rank 2, got {len(sym.shape)}", s)
        if not gemm_operands_agree(a.dtype, b.dtype):
            self.fail(f"gemm operands '{s.a}' ({a.dtype}) and '{s.b}' ({b.dtype}) differ in dtype", s)
        if s.precision not in ("ieee", "tf32") or (s.precision == "tf32" and a.dtype.name != "f32"):
            self.fail(f"gemm precision '{s.precision}' does not apply to {a.dtype} operands", s)
        m, ka = a.shape[::-1] if s.trans_a else a.shape
        kb, n = b.shape[::-1] if s.trans_b else b.shape
        if ka != kb or tuple(c.shape) != (m, n):
            ta, tb = (".T" if s.trans_a else ""), (".T" if s.trans_b else "")
            self.fail(f"gemm shapes disagree: '{s.a}'{ta} {_dims(a.shape)} @ '{s.b}'{tb} "
                      f"{_dims(b.shape)} into '{s.c}' {_dims(c.shape)}", s)

    def s_Fill(self, s: Fill) -> None:
        sym = self.buffer(s.buffer, "fill target", BUFFER_SCOPES, s, write=True)
        self.expr(s.value)
        if s.value.dtype != sym.dtype:
            self.fail(f"fill value is {s.value.dtype} but '{s.buffer}' is {sym.dtype}", s)

    def s_Reduce(self, s: Reduce) -> None:
        if s.kind not in REDUCE_KINDS:
            self.fail(f"unknown reduction '{s.kind}'", s)
        src = self.buffer(s.src, "reduce source", BUFFER_SCOPES, s)
        dst = self.buffer(s.dst, "reduce destination", BUFFER_SCOPES, s, write=True)
        if not 0 <= s.dim < len(src.shape):
            self.fail(f"reduce_{s.kind} dim {s.dim} is out of range for '{s.src}' of rank "
                      f"{len(src.shape)}", s)
        want = tuple(src.shape[:s.dim] + src.shape[s.dim + 1:])
        if tuple(dst.shape) != want and not (want == () and tuple(dst.shape) == (1,)):
            self.fail(f"reduce_{s.kind} of '{s.src}' {_dims(src.shape)} along dim {s.dim} gives "
                      f"{_dims(want)}, but '{s.dst}' is {_dims(dst.shape)}", s)

    def s_Scan(self, s: Scan) -> None:
        if s.kind not in SCAN_KINDS:
            self.fail(f"unknown scan '{s.kind}'", s)
        name = f"cum{s.kind}"
        src = self.buffer(s.src, f"{name} source", ("shared", "fragment"), s)
        dst = self.buffer(s.dst, f"{name} destination", ("shared", "fragment"), s, write=True)
        if "fragment" in (src.scope, dst.scope) and (s.src != s.dst or s.dim != len(dst.shape) - 1):
            self.fail(f"{name} of a fragment runs in place along its last dimension, not '{s.src}' into "
                      f"'{s.dst}' along dim {s.dim}", s)
        if not 0 <= s.dim < len(src.shape):
            self.fail(f"{name} dim {s.dim} is out of range for '{s.src}' of rank {len(src.shape)}", s)
        if tuple(src.shape) != tuple(dst.shape):
            self.fail(f"{name} of '{s.src}' {_dims(src.shape)} into '{s.dst}' {_dims(dst.shape)}: shapes differ", s)

    def s_Atomic(self, s: Atomic) -> None:
        if s.kind not in ATOMIC_KINDS:
            self.fail(f"unknown atomic '{s.kind}'", s)
        sym = self.indexable(s.name, s, write=True)
        if sym.scope not in ("global", "shared"):
            self.fail(f"atomic_{s.kind} target '{s.name}' must be a global tensor or a shared "
                      "buffer", s)
        self.indices(s.name, sym, s.indices, s)
        self.expr(s.value)
        if s.value.dtype != sym.dtype:
            self.fail(f"atomic_{s.kind} into '{s.name}' of dtype {sym.dtype} is given "
                      f"{s.value.dtype}; insert a cast", s)

    def s_Sync(self, s: Sync) -> None:
        pass

    def s_Print(self, s: Print) -> None:
        for a in s.args:
            self.expr(a)
        if s.per_thread and self.parallel is None:
            self.fail("print outside parallel cannot be per_thread", s)
        if not s.per_thread and self.parallel is not None:
            self.fail("print inside parallel must be per_thread", s)

    def s_Assert(self, s) -> None:
        self.s_Print(s)
        self.expr(s.cond)
        if s.cond.dtype != BOOL:
            self.fail(f"device_assert's condition is {s.cond.dtype}, not bool", s)

    def s_LetScalar(self, s: LetScalar) -> None:
        self.expr(s.value)
        if s.value.dtype != s.dtype:
            self.fail(f"value of '{s.name}' is {s.value.dtype} but '{s.name}' is declared "
                      f"{s.dtype}", s)
        self.declare(s.name, _Sym("let", s.dtype, parallel=self.parallel), s)

    def s_Assign(self, s: Assign) -> None:
        sym = self.resolve(s.name, s)
        if sym.kind != "let":
            self.fail(f"cannot assign to '{s.name}': only scalars declared by let can be assigned", s)
        if self.parallel is not None and sym.parallel is not self.parallel:
            self.fail(f"'{s.name}' is declared outside parallel and assigned inside it; "
                      "each index needs its own scalar", s)
        self.expr(s.value)
        if s.value.dtype != sym.dtype:
            self.fail(f"value of '{s.name}' is {s.value.dtype} but '{s.name}' is declared "
                      f"{sym.dtype}", s)

    def s_Store(self, s: Store) -> None:
        sym = self.indexable(s.name, s, write=True)
        self.indices(s.name, sym, s.indices, s)
        self.expr(s.value)
        if s.value.dtype != sym.dtype:
            self.fail(f"store into '{s.name}' of dtype {sym.dtype} is given {s.value.dtype}; "
                      "insert a cast", s)

    def s_For(self, s: For) -> None:
        if s.kind not in LOOP_KINDS:
            self.fail(f"unknown loop kind '{s.kind}'", s)
        for bound in (s.start, s.stop, s.step):
            self.expr(bound)
            if not bound.dtype.is_int:
                self.fail(f"bound of loop '{s.var}' has dtype {bound.dtype}, not an integer", s)
        if isinstance(s.step, Const) and s.step.value == 0:
            self.fail(f"loop '{s.var}' has step 0", s)
        if s.kind == "pipelined" and s.stages < 1:
            self.fail(f"pipelined loop '{s.var}' needs stages >= 1, got {s.stages}", s)
        self.scopes.append({})
        self.declare(s.var, _Sym("loop", s.start.dtype), s)
        self.loops.append(s.kind)
        self.block(s.body)
        self.loops.pop()
        self.scopes.pop()

    def s_Parallel(self, s: Parallel) -> None:
        if self.parallel is not None:
            self.fail("parallel nested inside parallel", s)
        if len(s.vars) != len(s.extents) or not s.vars:
            self.fail(f"parallel has {_plural(len(s.vars), 'variable')} but "
                      f"{_plural(len(s.extents), 'extent')}", s)
        for v, x in zip(s.vars, s.extents):
            if not isinstance(x, int) or x <= 0:
                self.fail(f"parallel extent of '{v}' must be positive, got {x!r}", s)
        self.scopes.append({})
        for v in s.vars:
            self.declare(v, _Sym("parallel", I32, parallel=s), s)
        self.parallel = s
        self.loops.append("parallel")
        self.block(s.body)
        self.loops.pop()
        self.parallel = None
        self.scopes.pop()

    def s_If(self, s: If) -> None:
        self.expr(s.cond)
        if s.cond.dtype != BOOL:
            self.fail(f"if condition has dtype {s.cond.dtype}, not bool", s)
        self.block(s.then)
        self.block(s.orelse)

    def jump(self, word: str, s) -> None:
        if not self.loops or self.loops[-1] not in ("serial", "unroll", "while"):
            self.fail(f"{word} outside a serial loop", s)

    def s_Break(self, s: Break) -> None:
        self.jump("break", s)

    def s_Continue(self, s: Continue) -> None:
        self.jump("continue", s)

    # ---- whole kernel -----------------------------------------------------------------------

    def run(self) -> None:
        self.header()
        self.block(self.k.body)
        for b in self.k.buffers:  # declaration order keeps the message deterministic
            # each run of a parallel body gets its own copy of a local buffer it writes, so the
            # writes are visible nowhere else
            writes = self.local_writes.get(b.name, set()) - {0}
            if writes and len(self.local_uses[b.name]) > 1:
                self.fail(f"local buffer '{b.name}' is written inside parallel and used outside it", b)


def verify(kernel: Kernel) -> Kernel:
    """Raise `IRVerifyError` on the first broken rule; return the kernel unchanged otherwise."""
    _Verifier(kernel).run()
    problem = None
    if kernel.warp_spec is not None:
        from .warpspec import warp_spec_problem  # the plan's module, imported by a kernel that has one

        problem = warp_spec_problem(kernel)
    if problem is not None:
        raise IRVerifyError(kernel.name, problem)
    return kernel
