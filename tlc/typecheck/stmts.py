"""Statement checking: assignments, control flow, loops, the grid block, returns.  Tile
statements and allocations are in `tiles.py`."""
from __future__ import annotations

from dataclasses import fields

from ..dtypes import I32
from ..parser import nodes as n
from ..parser.nodes import replace  # dataclasses.replace, faster
from . import literals, rules, scalar_tiles
from .builtins import ALLOCATORS, HINTS, LOOPS, TILE_STATEMENTS
from .env import BLOCK, LOCAL, LOOP, Scope, Symbol
from .persistent import PersistentChecker
from .porting import PortingChecker
from .types import GLOBAL, VALUE, BuiltinRef, FunctionRef, LoopRange, ScalarType, TensorType, describe, format_dim

# `unroll(n)` is copied n times by nvcc: past a few thousand copies it compiles for minutes into
# more code than the instruction cache holds; no kernel unrolls anywhere near that.
MAX_UNROLL = 1024


class StmtChecker(PortingChecker, PersistentChecker):
    def block(self, stmts) -> tuple:
        """Check a statement list; `depth` is 1 for a function's body, 2 inside its grid."""
        self.depth += 1
        out = tuple(s for s in (self.stmt(st) for st in stmts) if s is not None)
        self.depth -= 1
        return out

    def stmt(self, s):
        method = getattr(self, "stmt_" + type(s).__name__)
        return method(s)

    def stmt_Pass(self, s):
        return s

    # ---- assignments ---------------------------------------------------------------------------
    def stmt_Assign(self, s: n.Assign):
        from . import views
        if views.is_view_call(self, s.value):  # x_flat = view(x, f16[M * N])
            return views.view_assignment(self, s)
        if isinstance(s.value, n.Call) and isinstance(s.value.func, n.Name) and s.value.func.id in ALLOCATORS \
                and self.scope.lookup(s.value.func.id) is None:
            return self.allocation(self.spec_of_dtype_attribute(s))  # fragment(acc.dtype[BM]): porting.py
        if self.kind == "tile_op" and not isinstance(s.target, n.Name):
            self.error("E043", "a tile op cannot write into tensor elements; name an intermediate result instead", s.target.span)
            return s
        value = self.value(s.value)
        if isinstance(s.target, n.Subscript):
            return self._store(s, value)
        name = s.target.id
        sym = self.scope.lookup(name)
        declared = self.annotation_dtype(s.annotation) if s.annotation is not None else None
        if sym is None:
            if s.annotation is not None and s.annotation.dims is not None:
                self.error("E030", "buffers are allocated with shared(...), fragment(...) or local(...)", s.annotation.span)
                return s
            ty = value.ty
            if isinstance(ty, TensorType):
                if self.kind != "tile_op":
                    return s  # value() reported it
                ty = TensorType(ty.dtype, ty.shape, VALUE)
            elif isinstance(ty, ScalarType):
                if declared is not None:
                    self._check_fits(value, declared, f"'{name}'")
                    ty = ScalarType(declared)
                else:
                    ty = ScalarType(ty.dtype)
            elif declared is not None:
                ty = ScalarType(declared)
            else:
                ty = None
            self.scope.define(Symbol(name, LOCAL, ty, s.target.span))
            self.per_thread_assignment(name, value)
            return replace(s, target=replace(s.target, ty=ty), value=value)
        if not sym.assignable:
            self.error("E048", f"cannot assign to the {sym.kind} '{name}'", s.target.span,
                       "assign to a new name instead" if sym.kind != LOOP else None)
            return s
        if s.annotation is not None:
            self.error("E025", f"'{name}' is already defined; a type annotation is only allowed where a variable is introduced",
                       s.annotation.span)
            return s
        if self.kind == "tile_op":
            self.error("E025", f"'{name}' is already defined; each intermediate of a tile op gets its own name", s.target.span)
            return s
        if not self._assignable_here(name, s.target.span):
            return s
        if isinstance(sym.type, ScalarType):
            self._check_fits(value, sym.type.dtype, f"'{name}'")
        self.per_thread_assignment(name, value)
        return replace(s, target=replace(s.target, ty=sym.type), value=value)

    def _assignable_here(self, name: str, span) -> bool:
        """A parallel loop's iterations run at once on different threads, each with its own copy
        of the scalars declared in its body; one declared outside is shared, and which index's
        value it would keep is undefined (the IR verifier refuses it)."""
        if not self.in_parallel:
            return True
        s = self.scope
        while s is not self.parallel_scope.parent:
            if name in s.symbols:
                return True
            s = s.parent
        self.error("E158", f"'{name}' is declared outside this parallel loop and cannot be assigned inside it: "
                   "its iterations run at once on different threads", span,
                   "give each index its own scalar, declared in the loop's body, or store the value "
                   "into a buffer element")
        return False

    def _check_fits(self, value, dtype, what: str):
        t = value.ty
        if isinstance(t, ScalarType) and not rules.assignable(t, dtype):
            self.error("E033", f"cannot store {t.dtype} into {what} of type {dtype} without a cast", value.span,
                       f"write {dtype}(...) or cast(..., {dtype}) to convert explicitly")
        elif isinstance(t, ScalarType):
            literals.check_store(self, value, dtype, what)
        elif isinstance(t, TensorType):
            self.error("E032", f"cannot store a {describe(t)} into {what}", value.span)

    def _store(self, s, value):
        target = self.expr(s.target)
        if target.ty is None:
            return s
        base = target.value.ty
        if isinstance(base, TensorType) and base.scope == GLOBAL and self.kind == "device":
            pass
        self._check_fits(value, target.ty.dtype, f"an element of '{s.target.value.id}'"
                         if isinstance(s.target.value, n.Name) else "this element")
        self.local_store_per_thread(target, value, s.span)
        scalar_tiles.fragment_store_per_thread(self, target, value, s.span)
        return replace(s, target=target, value=value)

    def stmt_AugAssign(self, s: n.AugAssign):
        if self.kind == "tile_op":
            self.error("E043", "a tile op body holds named intermediate results and one return", s.span)
            return s
        target = self.expr(s.target)
        value = self.value(s.value)
        if isinstance(s.target, n.Name):
            sym = self.scope.lookup(s.target.id)
            if sym is not None and not sym.assignable:
                self.error("E048", f"cannot assign to the {sym.kind} '{s.target.id}'", s.target.span)
                return s
            if sym is not None and not self._assignable_here(s.target.id, s.target.span):
                return s
        if target.ty is None or value.ty is None:
            return s
        if not isinstance(target.ty, ScalarType):
            self.error("E032", f"'{s.op}=' updates a scalar or an element, found {describe(target.ty)}", s.target.span)
            return s
        if not isinstance(value.ty, ScalarType):
            self.value(value)
            return s
        dt = rules.arithmetic(s.op, target.ty, value.ty)
        if dt is None:
            self.error("E032", f"operator '{s.op}' is not defined for {target.ty.dtype} and {value.ty.dtype}", s.span)
            return s
        literals.check_augmented(self, s.op, target, value)
        if isinstance(s.target, n.Name):
            self.per_thread_assignment(s.target.id, value)
        else:
            self.local_store_per_thread(target, value, s.span)
            scalar_tiles.fragment_store_per_thread(self, target, value, s.span)
        result = ScalarType(dt, weak=value.ty.weak and target.ty.weak)
        if not rules.assignable(result, target.ty.dtype) and not (value.ty.weak and not (value.ty.dtype.is_float and target.ty.dtype.is_int)):
            self.error("E033", f"'{s.op}=' computes {dt}, which does not fit back into {target.ty.dtype} without a cast",
                       s.span, f"write x = {target.ty.dtype}(x {s.op} ...)")
        return replace(s, target=target, value=value)

    # ---- expression statements ---------------------------------------------------------------
    def stmt_ExprStmt(self, s: n.ExprStmt):
        e = s.expr
        if isinstance(e, n.Call) and isinstance(e.func, n.Name) and self.scope.lookup(e.func.id) is None \
                and self.module.callable_function(e.func.id) is None:
            name = e.func.id
            if name in TILE_STATEMENTS or name in HINTS:
                handled = self.porting_statement(s, name)  # porting.py: tile atomics, hints, gemm policy=
                if handled is not None:
                    return handled
            if name in TILE_STATEMENTS:
                return self.tile_statement(s, name)
            if name in ALLOCATORS:
                self.error("E030", f"{name}(...) allocates a buffer; assign it to a name: 'buf = {name}(...)'", e.span)
                return s
        if self.kind == "tile_op":
            self.error("E043", "a tile op body holds named intermediate results and one return", s.span)
            return s
        checked = self.expr(e)
        if isinstance(e, n.Call) and isinstance(checked.func.ty if isinstance(checked, n.Call) else None, FunctionRef):
            return replace(s, expr=checked)
        if isinstance(e, n.Constant) and isinstance(e.value, str):
            return None  # a docstring-like string has no effect
        if checked.ty is not None or not isinstance(e, n.Call):
            self.error("E063", "this expression is computed and thrown away", s.span,
                       "assign it to a name, or remove it")
        return replace(s, expr=checked)

    # ---- control flow --------------------------------------------------------------------------
    def stmt_If(self, s: n.If):
        if self.kind == "tile_op":
            self.error("E043", "a tile op body holds named intermediate results and one return; use where(c, a, b)", s.span)
            return s
        test = self.scalar(s.test, "a condition")
        per_thread = self.thread_branch(test)
        out = replace(s, test=test, body=self.block(s.body), orelse=self.block(s.orelse))
        self.thread_control -= per_thread
        return out

    def stmt_While(self, s: n.While):
        """`while c:` runs in every thread, as range does; the interpreter stops one that runs
        too long (interp/machine.py), the GPU runs it as written."""
        if self.kind == "tile_op":
            self.error("E043", "a tile op body holds named intermediate results and one return", s.span)
            return s
        test = self.scalar(s.test, "a condition")
        per_thread = self.thread_branch(test)
        self.loops.append("while")
        body = self.block(s.body)
        self.loops.pop()
        self.thread_control -= per_thread
        return replace(s, test=test, body=body)

    def stmt_Break(self, s):
        return self._loop_exit(s, "break")

    def stmt_Continue(self, s):
        return self._loop_exit(s, "continue")

    def _loop_exit(self, s, word):
        if self.in_parallel and len(self.loops) <= self.parallel_loops:  # a loop inside it may be left
            self.error("E042", f"'{word}' cannot leave a 'parallel' loop: its iterations run at once on different threads", s.span)
        elif not self.loops:
            self.error("E042", f"'{word}' outside a loop", s.span)
        elif self.loops[-1] in ("pipelined", "unroll"):
            self.error("E042", f"'{word}' cannot leave a '{self.loops[-1]}' loop, whose trip count is fixed", s.span)
        return s

    def stmt_Return(self, s: n.Return):
        if self.kind == "kernel":
            self.error("E041", "a kernel cannot return a value; write results into a tensor parameter"
                       if s.value is not None else "'return' is not allowed in a kernel", s.span)
            return s
        if s.value is None:
            if self.returns is not None:
                self.error("E040", f"this function must return a {describe(self.returns)}", s.span)
            return s
        value = self.value(s.value)
        self.return_value(s, value)
        return replace(s, value=value)

    # ---- loops -----------------------------------------------------------------------------------
    def stmt_For(self, s: n.For):
        if self.kind == "tile_op":
            self.error("E043", "a tile op body holds named intermediate results and one return", s.span)
            return s
        it = s.iter
        if not (isinstance(it, n.Call) and isinstance(it.func, n.Name) and it.func.id in LOOPS
                and self.scope.lookup(it.func.id) is None):
            self.error("E047", "a for loop runs over range(...), unroll(...), pipelined(...), parallel(...) or persistent(...)", it.span)
            return s
        kind = it.func.id
        if kind == "parallel":
            return self.parallel_loop(s)
        if kind == "persistent":
            return self.persistent_loop(s)  # persistent.py
        if len(s.targets) != 1:
            self.error("E047", f"{kind}(...) gives one index; found {len(s.targets)} names", s.span)
            return s
        if kind in ("pipelined",) and not self.in_grid:
            self.error("E060", "pipelined(...) loops belong inside a kernel's grid block", it.span)
        if self.in_parallel and kind == "pipelined":
            self.error("E047", "a pipelined loop cannot be inside a parallel loop", it.span)
        it = self._loop_args(it, kind)
        if kind in ("range", "pipelined") and isinstance(s.targets[0], n.Name):
            self._counted_in_i32(it, s.targets[0].id)
        if kind == "pipelined":
            self.tile_under_thread("a pipelined loop", it, it.span)
        per_thread = self.thread_branch(it)
        var = s.targets[0]
        # A loop variable lives only inside its loop (unlike Python's): the generated C
        # declares it in the loop, and a value read after the loop would be a stale index.
        previous = self.scope.symbols.get(var.id)
        self._define_loop_var(var)
        self.loops.append(kind)
        body = self.block(s.body)
        self.loops.pop()
        self.thread_control -= per_thread
        if previous is None:
            self.scope.symbols.pop(var.id, None)
            self.ended_loops.add(var.id)
        else:
            self.scope.symbols[var.id] = previous
        it = replace(self.statement_call(it), ty=LoopRange(kind))
        return replace(s, iter=it, targets=(replace(var, ty=ScalarType(I32)),), body=body)

    def _define_loop_var(self, var: n.Name):
        sym = self.scope.lookup(var.id)
        if sym is not None and sym.kind not in (LOOP,):
            self.error("E025", f"the loop variable '{var.id}' would hide the {sym.kind} '{var.id}'", var.span,
                       "choose another name")
            return
        self.scope.define(Symbol(var.id, LOOP, ScalarType(I32), var.span))

    def _counted_in_i32(self, it: n.Call, var: str) -> None:
        """A constant bound of a range or pipelined loop beyond i32, the loop variable's dtype:
        the variable could not count there (the code wrapped 2**40 to 0 and ran no iteration)."""
        values = []
        for a in it.args:
            v = self.const_value(a, "a loop bound", required=False)
            if isinstance(v, int) and not isinstance(v, bool) and not -2**31 <= v < 2**31:
                text = format_dim(a)
                name = str(v) if text in (str(v), "?") else f"{text} = {v}"
                self.error("E157", f"the loop bound {name} does not fit i32, the type of the loop variable '{var}'",
                           a.span, "a loop counts in i32: nest two loops for a longer one")
                return
            values.append(v if isinstance(v, int) and not isinstance(v, bool) else None)
        if it.func.id != "range" or len(values) != 3 or None in values or values[2] == 0:
            return
        start, stop, step = values  # the variable steps past the stop once: that value must fit too
        past = start + -(-(stop - start) // step) * step if (stop - start) * step > 0 else start
        if not -2**31 <= past < 2**31:
            self.error("E157", f"range({start}, {stop}, {step}) steps the loop variable '{var}' to {past} after its "
                       "last iteration, which does not fit i32: the loop would not end", it.span,
                       "a loop counts in i32: keep its last value plus the step within i32")

    def _loop_args(self, it: n.Call, kind: str) -> n.Call:
        if kind == "range":
            ok = self._arity(it, "range", 1, 3)
            args = tuple(self.integer(a, "a range bound") for a in it.args)
            if ok and len(it.args) == 3:
                step = self.const_value(it.args[2], "the step of range()", required=False)
                if step == 0:
                    self.error("E031", "the step of range() cannot be 0", it.args[2].span)
            return replace(it, args=args)
        if kind == "unroll":
            if self._arity(it, "unroll", 1):
                count = self.const_value(it.args[0], "the trip count of unroll()")
                if count is not None and (not isinstance(count, int) or count < 0):
                    self.error("E031", f"unroll() needs a non-negative integer count, found {count!r}", it.args[0].span)
                elif count is not None and count > MAX_UNROLL:
                    self.error("E154", f"unroll({count}) copies its body {count} times, more than the {MAX_UNROLL} "
                               "the compiler allows", it.args[0].span, "use range() for a long loop")
            return replace(it, args=tuple(self.integer(a, "a count") for a in it.args))
        # pipelined
        # pipelined(n) or TileLang's pipelined(start, stop); num_stages= is TileLang's stages=
        if self._arity(it, "pipelined", 1, 2, ("stages", "num_stages")):
            for k in it.keywords:
                stages = self.const_value(k.value, "stages")
                # 0 and 1 run the loop without prefetch (TileLang's num_stages=0); 8 bounds the ring
                if stages is not None and (not isinstance(stages, int) or isinstance(stages, bool) or not 0 <= stages <= 8):
                    self.error("E031", f"stages must be an integer from 0 to 8, found {stages!r}", k.value.span,
                               "0 or 1 runs the loop without prefetching")
        return replace(it, args=tuple(self.integer(a, "a trip count") for a in it.args))

    def parallel_loop(self, s: n.For):
        it = s.iter
        if not self.in_grid:
            self.error("E060", "parallel(...) loops spread work over a block's threads and belong inside a kernel's grid block", it.span)
            return s
        if self.in_parallel:
            self.error("E047", "parallel loops cannot be nested; write one parallel(M, N) over both dimensions", it.span)
            return s
        if not self._arity(it, "parallel", 1, 4):
            return s
        if self.tile_under_thread("a parallel loop", None, it.span):
            return s
        if len(s.targets) != len(it.args):
            self.error("E047", f"parallel(...) over {len(it.args)} dimension{'s' * (len(it.args) != 1)} gives "
                       f"{len(it.args)} indices; found {len(s.targets)} name{'s' * (len(s.targets) != 1)}", s.span)
            return s
        for a in it.args:
            v = self.const_value(a, "the extent of a parallel loop")
            if v is not None and (not isinstance(v, int) or v <= 0):
                self.error("E031", f"the extent of a parallel loop must be a positive integer, found {v!r}", a.span)
        outer = self.scope
        self.scope = self.parallel_scope = Scope(outer)
        self.in_parallel = True
        self.parallel_loops = len(self.loops)
        for var in s.targets:
            self._define_loop_var(var)
        body = self.block(s.body)
        self.parallel_reads_thread(body)
        self.in_parallel = False
        self.scope = outer
        targets = tuple(replace(v, ty=ScalarType(I32)) for v in s.targets)
        it = replace(self.statement_call(replace(it, args=tuple(self.expr(a) for a in it.args))), ty=LoopRange("parallel"))
        return replace(s, iter=it, targets=targets, body=body)

    # ---- the grid --------------------------------------------------------------------------------
    def stmt_With(self, s: n.With):
        ctx = s.context
        if not (isinstance(ctx, n.Call) and isinstance(ctx.func, n.Name) and ctx.func.id == "grid"):
            self.error("E049", "'with' only opens a grid: 'with grid(gx, gy, threads=128) as (bx, by):'", ctx.span)
            self.grid_seen = True  # reported; do not also report a missing grid
            return s
        if self.kind != "kernel":
            self.error("E029", "a grid belongs to a @kernel; device functions and tile ops run inside one", ctx.span)
            return s
        if self.grid_seen or self.depth > 1:
            self.error("E029", "a kernel has exactly one grid, at the top of its body", ctx.span)
            return s
        self.grid_seen = True
        args = tuple(self.integer(a, "a grid dimension") for a in ctx.args)
        if not 1 <= len(ctx.args) <= 3:
            self.error("E050", f"grid(...) takes 1 to 3 dimensions, {len(ctx.args)} given", ctx.span)
        from ..schedule.sm_limits import MAX_GRID  # here: the scheduler's package imports this one

        for axis, a, most in zip("xyz", ctx.args, MAX_GRID):
            self.grid_dimension(a, axis, most)
        threads = [k for k in ctx.keywords if k.name == "threads"]
        for k in ctx.keywords:
            if k.name not in ("threads", "blocks_per_sm", "dequant_ring", "persistent_tiles"):
                self.error("E050", f"grid() has no argument '{k.name}'", k.span,
                           "it takes the grid dimensions, threads=, blocks_per_sm=, dequant_ring= and persistent_tiles=")
            elif k.name in ("dequant_ring", "persistent_tiles"):
                d = self.const_value(k.value, k.name)
                if d is not None and not isinstance(d, bool):
                    self.error("E050", f"{k.name} must be True or False, found {d!r}", k.value.span)
            elif k.name == "blocks_per_sm":
                b = self.const_value(k.value, "blocks_per_sm")
                if b is not None and (not isinstance(b, int) or isinstance(b, bool) or not 0 <= b <= 32):
                    self.error("E050", f"blocks_per_sm must be an integer from 0 to 32, found {b!r}", k.value.span,
                               "0 lets the compiler choose")
        if threads:  # without it, TileLang's default: 128 threads (lower.py)
            t = self.const_value(threads[0].value, "threads")
            if t is not None and (not isinstance(t, int) or not 1 <= t <= 1024):
                self.error("E050", f"threads must be an integer from 1 to 1024, found {t!r}", threads[0].value.span)
        if ctx.args and len(s.targets) != len(ctx.args) and 1 <= len(ctx.args) <= 3:
            self.error("E050", f"the grid has {len(ctx.args)} dimension{'s' * (len(ctx.args) != 1)} but {len(s.targets)} "
                       f"block ind{'ices' if len(s.targets) != 1 else 'ex'} {'are' if len(s.targets) != 1 else 'is'} named",
                       s.span)
        for t in s.targets:
            if self.scope.lookup(t.id) is not None:
                self.error("E025", f"the block index '{t.id}' would hide the {self.scope.lookup(t.id).kind} '{t.id}'", t.span)
            self.scope.define(Symbol(t.id, BLOCK, ScalarType(I32), t.span))
        self.in_grid = True
        body = self.block(s.body)
        self.in_grid = False
        targets = tuple(replace(t, ty=ScalarType(I32)) for t in s.targets)
        ctx = replace(self.statement_call(replace(ctx, args=args)), ty=BuiltinRef("grid"))
        return replace(s, context=ctx, targets=targets, body=body)

    def grid_dimension(self, e, axis: str, most: int) -> None:
        """E130: a constant grid dimension that no GPU launches; E131: one that divides by a
        constant zero (the launch would fail on every call)."""
        v = self.const_value(e, "a grid dimension", required=False)
        if isinstance(v, int) and not isinstance(v, bool):
            if not 1 <= v <= most:
                self.error("E130", f"grid dimension {axis} is {v}; the GPU launches 1 to {most} blocks in it", e.span)
            return
        stack = [e]
        while stack:  # no recursion: a grid dimension can be a long expression
            x = stack.pop()
            if isinstance(x, n.BinOp) and x.op in ("/", "//", "%"):
                divisor = x.right
            elif isinstance(x, n.Call) and isinstance(x.func, n.Name) and x.func.id in ("cdiv", "ceildiv") and len(x.args) == 2:
                divisor = x.args[1]
            else:
                divisor = None
            if divisor is not None and self.const_value(divisor, "a divisor", required=False) == 0:
                self.error("E131", f"grid dimension {axis} divides by zero", divisor.span)
                return
            for f in fields(x):
                if f.name not in ("span", "ty"):
                    v = getattr(x, f.name)
                    stack.extend(c for c in (v if isinstance(v, tuple) else (v,)) if hasattr(c, "span"))
