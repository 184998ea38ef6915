"""Expression checking: name lookup, operators, builtin and device-function calls, element
access.  Each `check_*` returns a new node with `ty` set (None where an error was reported,
so that one mistake does not cascade)."""
from __future__ import annotations

from ..dtypes import BOOL, F32, I32, lookup
from ..parser import nodes as n
from ..parser.nodes import replace  # dataclasses.replace, faster
from . import literals, rules
from .builtins import (BUILTIN_VALUES as _BUILTIN_VALUES, HINTS, MATH_FLOAT, MATH_SAME, PORTING_BUILTINS,
                       REDUCTIONS_TILE_OP, TILE_STATEMENTS, ALLOCATORS, LOOPS)
from .env import DTYPE, did_you_mean
from .types import (GLOBAL, VALUE, BuiltinRef, DTypeValue, FunctionRef, ScalarType,
                    StrType, TensorType, describe, format_shape)


class ExprChecker:

    # ---- names -------------------------------------------------------------------------------
    def check_Name(self, e: n.Name) -> n.Name:
        sym = self.scope.lookup(e.id)
        if sym is not None:
            if sym.kind == DTYPE:
                return replace(e, ty=DTypeValue(self.consts[e.id]))
            return replace(e, ty=sym.type)
        if e.id in self.module.constants:
            v = self.module.constants[e.id]
            if hasattr(v, "kind") and hasattr(v, "bits"):
                return replace(e, ty=DTypeValue(v))
            return replace(e, ty=replace(rules.literal_type(v), weak=False))
        entry = self.module.callable_function(e.id)
        if entry is not None:
            return replace(e, ty=FunctionRef(*entry[:2]))
        dt = lookup(e.id)
        if dt is not None:
            return replace(e, ty=DTypeValue(dt))
        if e.id in _BUILTIN_VALUES:
            return replace(e, ty=BuiltinRef(e.id))
        candidates = self.scope.names() | set(self.module.constants) | set(self.module.functions) | _BUILTIN_VALUES
        hint = (f"'{e.id}' is the variable of a loop above; a loop variable exists only inside its loop"
                if e.id in getattr(self, "ended_loops", ()) else did_you_mean(e.id, candidates))
        self.error("E020", f"unknown name '{e.id}'", e.span, hint)
        return e

    # ---- dispatch ----------------------------------------------------------------------------
    def expr(self, e):
        method = getattr(self, "check_" + type(e).__name__, None)
        if method is None:
            self.error("E032", "this expression is not allowed here", e.span)
            return e
        return method(e)

    def value(self, e, what: str = "a value"):
        """An expression used as a value: a scalar, or a tensor value inside a tile op."""
        e = self.expr(e)
        t = e.ty
        if t is None or isinstance(t, ScalarType):
            return e
        if isinstance(t, TensorType) and (self.kind == "tile_op" and t.scope in (VALUE, GLOBAL)):
            return e
        if isinstance(t, TensorType):
            self.error("E032", f"'{_text(e)}' is a {describe(t)}, not {what}", e.span,
                       "index its elements, e.g. inside a 'parallel' loop" if t.scope != GLOBAL or self.kind == "kernel"
                       else None)
        elif isinstance(t, DTypeValue):
            self.error("E032", f"'{_text(e)}' is a dtype, not {what}", e.span,
                       f"to convert, write 'cast(x, {_text(e)})'")
        elif isinstance(t, (FunctionRef, BuiltinRef)):
            self.error("E032", f"'{_text(e)}' is a function, not {what}", e.span, "call it")
        else:
            self.error("E032", f"expected {what}, found {describe(t)}", e.span)
        return replace(e, ty=None) if hasattr(e, "ty") else e

    def scalar(self, e, what: str = "a scalar"):
        e = self.value(e, what)
        if isinstance(e.ty, TensorType):
            self.error("E032", f"expected {what}, found {describe(e.ty)}", e.span)
            return replace(e, ty=None)
        return e

    def integer(self, e, what: str):
        e = self.scalar(e, what)
        if isinstance(e.ty, ScalarType) and not (e.ty.dtype.is_int or e.ty.dtype.is_bool):
            self.error("E035", f"{what} must be an integer, found {e.ty.dtype}", e.span)
        return e

    # ---- literals and operators --------------------------------------------------------------
    def check_Constant(self, e: n.Constant):
        if isinstance(e.value, str):
            return replace(e, ty=StrType())
        return replace(e, ty=rules.literal_type(e.value))

    def check_BinOp(self, e: n.BinOp):
        left, right = self.value(e.left), self.value(e.right)
        e = replace(e, left=left, right=right)
        a, b = left.ty, right.ty
        if a is None or b is None:
            return e
        if e.op == "@":
            return self._matmul(e, a, b)
        literals.check_operands(self, e.op, left, right)
        if isinstance(a, TensorType) or isinstance(b, TensorType):
            shape = self._broadcast(e, a, b)
            dt = rules.arithmetic(e.op, _elem(a), _elem(b))
            if dt is None:
                return self._bad_operands(e, a, b)
            return replace(e, ty=TensorType(dt, shape, VALUE)) if shape is not None else e
        dt = rules.arithmetic(e.op, a, b)
        if dt is None:
            return self._bad_operands(e, a, b)
        return replace(e, ty=ScalarType(dt, weak=a.weak and b.weak, const=a.const and b.const))

    def _bad_operands(self, e, a, b):
        self.error("E032", f"operator '{e.op}' is not defined for {describe(a)} and {describe(b)}", e.span,
                   "bit operations need integers" if e.op in ("&", "|", "^", "<<", ">>") else None)
        return e

    def _broadcast(self, e, a, b):
        sa = a.shape if isinstance(a, TensorType) else ()
        sb = b.shape if isinstance(b, TensorType) else ()
        shape = rules.broadcast(sa, sb)
        if shape is None:
            self.error("E057", f"shapes {format_shape(sa)} and {format_shape(sb)} do not broadcast", e.span,
                       "dimensions must be equal, or one of them 1")
        return shape

    def _matmul(self, e, a, b):
        if not (isinstance(a, TensorType) and isinstance(b, TensorType)):
            self.error("E032", "'@' multiplies two tensors", e.span)
            return e
        if a.rank < 2 or b.rank < 2:
            self.error("E058", f"'@' needs two matrices, found {a} and {b}", e.span)
            return e
        if a.shape[-1] != b.shape[-2] and not self._dims_may_agree(a.shape[-1], b.shape[-2]):
            self.error("E058", f"inner dimensions of '@' differ: {a} @ {b}", e.span,
                       "the columns of the left operand must match the rows of the right one; use '.T' to transpose"
                       + (" (.mT: the last two dimensions)" if max(a.rank, b.rank) > 2 else ""))
            return e
        # a stack of matrices, as NumPy's matmul: the leading dimensions broadcast
        lead = rules.broadcast(a.shape[:-2], b.shape[:-2])
        if lead is None:
            self.error("E057", f"the stacked dimensions of '@' do not broadcast: {a} @ {b}", e.span,
                       "the dimensions before the last two must be equal, or one of them 1")
            return e
        return replace(e, ty=TensorType(rules.matmul_dtype(a.dtype, b.dtype), (*lead, a.shape[-2], b.shape[-1]), VALUE))

    def check_UnaryOp(self, e: n.UnaryOp):
        operand = self.value(e.operand)
        e = replace(e, operand=operand)
        t = operand.ty
        if t is None:
            return e
        elem = _elem(t)
        if e.op == "not":
            dt = BOOL
        elif e.op == "~":
            if elem.dtype.is_float:
                self.error("E032", f"operator '~' is not defined for {describe(t)}", e.span, "bit operations need integers")
                return e
            dt = elem.dtype
        else:
            dt = elem.dtype if not elem.dtype.is_bool else I32
        if isinstance(t, TensorType):
            return replace(e, ty=TensorType(dt, t.shape, VALUE))
        return replace(e, ty=ScalarType(dt, weak=t.weak, const=t.const))

    def check_BoolOp(self, e: n.BoolOp):
        values = tuple(self.scalar(v, "a condition") for v in e.values)
        const = all(isinstance(v.ty, ScalarType) and v.ty.const for v in values)
        return replace(e, values=values, ty=ScalarType(BOOL, const=const))

    def check_Compare(self, e: n.Compare):
        operands = tuple(self.value(o) for o in e.operands)
        e = replace(e, operands=operands)
        if any(o.ty is None for o in operands):
            return e
        for (left, right), op in zip(zip(operands, operands[1:]), e.ops):
            literals.check_operands(self, op, left, right)
        if any(isinstance(o.ty, TensorType) for o in operands):
            shape = ()
            for o in operands:
                s = rules.broadcast(shape, o.ty.shape if isinstance(o.ty, TensorType) else ())
                if s is None:  # _broadcast reports it (and returns None)
                    self._broadcast(e, TensorType(F32, shape, VALUE), o.ty)
                    return e
                shape = s
            return replace(e, ty=TensorType(BOOL, shape, VALUE))
        self._compared_with_one(e)
        return replace(e, ty=ScalarType(BOOL, const=all(o.ty.const for o in operands)))

    def _compared_with_one(self, e: n.Compare) -> None:
        """A kernel's `SYMBOL == 1` or `!= 1` of a run-time shape symbol (std.broadcast's
        `if A3 == 1:`): the symbol is specialized on that test (CheckedFunction.ones)."""
        if self.kind != "kernel" or len(e.ops) != 1 or e.ops[0] not in ("==", "!="):
            return
        a, b = e.operands
        if isinstance(a, n.Constant):
            a, b = b, a
        if isinstance(a, n.Name) and isinstance(b, n.Constant) and type(b.value) is int and b.value == 1 \
                and self._is_symbol(a.id):
            self.ones.setdefault(a.id, a.span)

    def check_IfExp(self, e: n.IfExp):
        test = self.scalar(e.test, "a condition")
        body, orelse = self.value(e.body), self.value(e.orelse)
        e = replace(e, test=test, body=body, orelse=orelse)
        if body.ty is None or orelse.ty is None:
            return e
        if isinstance(body.ty, TensorType) or isinstance(orelse.ty, TensorType):
            self.error("E032", "a conditional expression chooses between scalars; use 'where(c, a, b)' for tensors", e.span)
            return e
        literals.check_arguments(self, "the other branch of the conditional expression", (body, orelse))
        dt = rules.combine(body.ty, orelse.ty)
        return replace(e, ty=ScalarType(dt, weak=body.ty.weak and orelse.ty.weak,
                                        const=body.ty.const and orelse.ty.const and test.ty is not None and test.ty.const))

    def check_TupleExpr(self, e):
        self.error("E032", "a tuple is not a value in .tl", e.span)
        return e

    def check_ListExpr(self, e):
        self.error("E032", "a list is only allowed in decorator arguments such as @autotune(BM=[64, 128])", e.span)
        return e

    def check_Slice(self, e):
        self.error("E039", "a slice is only allowed in a subscript", e.span)
        return e

    def check_Attribute(self, e: n.Attribute):
        value = self.expr(e.value)
        e = replace(e, value=value)
        t = value.ty
        if t is None:
            return e
        if e.attr == "dtype" and isinstance(t, (TensorType, ScalarType)):  # TileLang's `acc.dtype`: a dtype value
            return replace(e, ty=DTypeValue(t.dtype))
        if e.attr == "T" and isinstance(t, TensorType) and self.kind == "tile_op":
            if t.rank != 2:
                self.error("E058", f"'.T' transposes a matrix, found {t}", e.span)
                return e
            return replace(e, ty=TensorType(t.dtype, (t.shape[1], t.shape[0]), VALUE))
        if e.attr == "mT" and isinstance(t, TensorType) and self.kind == "tile_op":  # PyTorch's, NumPy's matrix_transpose
            if t.rank < 2:
                self.error("E058", f"'.mT' transposes the last two dimensions, found {t}", e.span)
                return e
            return replace(e, ty=TensorType(t.dtype, (*t.shape[:-2], t.shape[-1], t.shape[-2]), VALUE))
        if e.attr == "T":
            self.error("E032", "'.T' is available on tensors inside a @tile_op; in a kernel use gemm(..., trans_a=True)"
                       if self.kind != "tile_op" else f"'.T' needs a tensor, found {describe(t)}", e.span)
            return e
        self.error("E032", f"{describe(t)} has no attribute '{e.attr}'", e.span)
        return e

    # ---- element access ------------------------------------------------------------------------
    def check_Subscript(self, e: n.Subscript):
        base = self.expr(e.value)
        e = replace(e, value=base)
        t = base.ty
        if t is None:
            return e
        if isinstance(t, DTypeValue):
            self.error("E032", f"'{_text(e)}' is a type; buffers are allocated with shared(...), fragment(...) or local(...)", e.span)
            return e
        if not isinstance(t, TensorType):
            self.error("E039", f"'{_text(base)}' is {describe(t)} and cannot be indexed", e.span)
            return e
        if any(isinstance(i, n.Slice) for i in e.indices):
            self.error("E039", "slices select a region only in copy(...); here index single elements", e.span)
            return e
        if len(e.indices) != t.rank:
            self.error("E039", f"'{_text(base)}' has {t.rank} dimension{'s' * (t.rank != 1)} but is indexed with {len(e.indices)}",
                       e.span)
            return e
        # A fragment element read or written outside a parallel loop is layout inference's to judge:
        # every thread must hold it (schedule/layout_infer.py, E059/E260/E261).
        if t.scope == VALUE:
            self.error("E039", "a tensor value inside a tile op cannot be indexed", e.span)
            return e
        indices = tuple(self.integer(i, "an index") for i in e.indices)
        return replace(e, indices=indices, ty=ScalarType(t.dtype))

    # ---- calls ----------------------------------------------------------------------------------
    def check_Call(self, e: n.Call):
        func = self.expr(e.func) if isinstance(e.func, n.Name) else e.func
        if not isinstance(e.func, n.Name):
            self.error("E034", "only named functions can be called", e.span)
            return e
        e = replace(e, func=func)
        t = func.ty
        if t is None:
            return e
        if isinstance(t, DTypeValue):
            return self._cast(e, t.dtype, e.args, "cast")
        if isinstance(t, FunctionRef):
            return self._call_function(e, t)
        if isinstance(t, BuiltinRef):
            name = t.name
            if name in TILE_STATEMENTS or name in ALLOCATORS or name in LOOPS or name in HINTS or name == "grid":
                self.error("E034", f"{name}(...) is a statement and has no value", e.span,
                           _statement_hint(name))
                return e
            if name == "view":
                from .views import misplaced_view
                return misplaced_view(self, e)
            if name in PORTING_BUILTINS:
                return self.porting_builtin(e, name)  # porting.py
            return self._call_builtin(e, name)
        self.error("E034", f"'{_text(e.func)}' is {describe(t)}, not a function", e.func.span)
        return e

    def _arity(self, e, name, lo, hi=None, keywords=()):
        hi = lo if hi is None else hi
        ok = lo <= len(e.args) <= hi
        for k in e.keywords:
            if k.name not in keywords:
                self.error("E034", f"{name}() has no argument '{k.name}'", k.span,
                           f"it takes {', '.join(keywords)}" if keywords else None)
                ok = False
        if not lo <= len(e.args) <= hi:
            want = f"{lo}" if lo == hi else f"{lo} to {hi}" if hi < 99 else f"at least {lo}"
            self.error("E034", f"{name}() takes {want} argument{'s' * (want != '1')}, {len(e.args)} given", e.span)
        return ok

    def _cast(self, e, dtype, args, name):
        if len(args) != 1 or e.keywords:
            self.error("E034", f"{name}() converts one value", e.span)
            return e
        x = self.value(args[0])
        if x.ty is None:
            return e
        ty = TensorType(dtype, x.ty.shape, VALUE) if isinstance(x.ty, TensorType) else ScalarType(dtype, const=x.ty.const)
        return replace(e, args=(x,) + tuple(e.args[1:]), ty=ty)

    def _call_builtin(self, e, name):
        if name == "cast":
            if not self._arity(e, name, 2):
                return e
            dt = self.expr(e.args[1])
            if not isinstance(dt.ty, DTypeValue):
                if dt.ty is not None:
                    self.error("E035", f"the second argument of cast() must be a dtype, found {describe(dt.ty)}", dt.span)
                return e
            out = self._cast(replace(e, args=e.args[:1]), dt.ty.dtype, e.args[:1], name)
            return replace(out, args=out.args + (dt,))
        if name == "inf":
            if not self._arity(e, e.func.id, 1):
                return e
            dt = self.expr(e.args[0])
            if not isinstance(dt.ty, DTypeValue) or not dt.ty.dtype.is_float:
                self.error("E035", f"{e.func.id}() takes a floating-point dtype, such as {e.func.id}(f32)", e.args[0].span)
                return e
            return replace(e, args=(dt,), ty=ScalarType(dt.ty.dtype, const=True))
        if name in REDUCTIONS_TILE_OP or (name in ("max", "min") and self.kind == "tile_op" and len(e.args) == 1):
            return self._tile_reduction(e, name)
        if name == "tri":
            return self._tri(e)
        if name in MATH_FLOAT or name in MATH_SAME:
            if not self._arity(e, name, 1):
                return e
            x = self.value(e.args[0])
            if x.ty is None:
                return replace(e, args=(x,))
            elem = _elem(x.ty)
            dt = rules.math_result(elem) if name in MATH_FLOAT else (elem.dtype if name == "abs" or elem.dtype.is_float else elem.dtype)
            ty = TensorType(dt, x.ty.shape, VALUE) if isinstance(x.ty, TensorType) else ScalarType(dt, weak=elem.weak, const=elem.const)
            return replace(e, args=(x,), ty=ty)
        if name in ("min", "max", "clamp", "pow", "fmod", "atan2", "cdiv", "where"):
            lo, hi = {"min": (2, 99), "max": (2, 99), "clamp": (3, 3), "pow": (2, 2), "fmod": (2, 2), "atan2": (2, 2),
                      "cdiv": (2, 2), "where": (3, 3)}[name]
            if not self._arity(e, e.func.id, lo, hi):  # the name as written: ceildiv, if_then_else
                return e
            args = tuple(self.value(a) for a in e.args)
            e = replace(e, args=args)
            if any(a.ty is None for a in args):
                return e
            operands = args[1:] if name == "where" else args
            if name == "where":
                cond = args[0].ty
                if isinstance(cond, ScalarType) and not cond.dtype.is_bool:
                    pass  # any scalar converts to a condition
            if name == "cdiv" and any(_elem(a.ty).dtype.is_float for a in args):
                self.error("E035", f"{e.func.id}() divides integers, rounding up", e.span)
                return e
            shape = ()
            for a in args:
                if isinstance(a.ty, TensorType):
                    s = rules.broadcast(shape, a.ty.shape)
                    if s is None:
                        self._broadcast(e, TensorType(F32, shape, VALUE), a.ty)
                        return e
                    shape = s
            if name not in ("pow", "fmod", "atan2"):  # pow, fmod and atan2 compute in f32 (T7)
                literals.check_arguments(self, f"the other arguments of {e.func.id}()", operands)
            elem = _elem(operands[0].ty)
            for o in operands[1:]:
                elem = ScalarType(rules.combine(elem, _elem(o.ty)), weak=elem.weak and _elem(o.ty).weak,
                                  const=elem.const and _elem(o.ty).const)
            dt = rules.math_result(elem) if name in ("pow", "fmod", "atan2") else elem.dtype
            if any(isinstance(a.ty, TensorType) for a in args):
                return replace(e, ty=TensorType(dt, shape, VALUE))
            const = all(_elem(a.ty).const for a in args)
            return replace(e, ty=ScalarType(dt, weak=elem.weak, const=const))
        self.error("E034", f"'{name}' cannot be called here", e.span)
        return e

    def _tri(self, e):
        """`tri(N, M, k=0)`, NumPy's: the bool[N, M] tensor true where column j <= row i + k (a
        causal mask: `where(tri(S, SK, SK - S), s, -inf(f32))`).  N and M are sizes: a shape
        symbol or a constant; k any integer."""
        if self.kind != "tile_op":
            self.error("E034", "tri() builds a whole tensor inside a @tile_op", e.span,
                       "in a kernel, compare the indices: j <= i + k")
            return e
        if not self._arity(e, "tri", 2, 3, ("k",)):
            return e
        if len(e.args) == 3 and e.keywords:
            self.error("E034", "tri() takes k once", e.keywords[0].span)
            return e
        for d in e.args[:2]:
            if not (isinstance(d, n.Name) and self._is_symbol(d.id)) and \
                    not isinstance(self.const_value(d, "a size of tri()", required=False), int):
                self.error("E035", "a size of tri() is a shape symbol or an integer constant", d.span,
                           "tri(S, SK) of q: T[S, D] and k: T[SK, D]")
                return e
        k = e.args[2] if len(e.args) == 3 else e.keywords[0].value if e.keywords else n.Constant(0, e.span)
        args = tuple(self.integer(d, "a size of tri()") for d in e.args[:2]) + (self.integer(k, "tri()'s k"),)
        return replace(e, args=args, keywords=(), ty=TensorType(BOOL, e.args[:2], VALUE))

    def _tile_reduction(self, e, name):
        if self.kind != "tile_op":
            if name in ("max", "min"):
                self.error("E034", f"{name}() takes at least 2 arguments, {len(e.args)} given", e.span,
                           f"to reduce a tile in a kernel, use reduce_{name}(src, dst, dim=...)")
            else:
                self.error("E034", f"{name}() works on whole tensors inside a @tile_op", e.span,
                           "in a kernel, use reduce_sum(src, dst, dim=...)" if name in ("sum", "mean") else None)
            return e
        if not self._arity(e, name, 1, 1, ("axis", "keepdims") if name != "softmax" else ("axis",)):
            return e
        x = self.value(e.args[0])
        e = replace(e, args=(x,))
        if not isinstance(x.ty, TensorType):
            if x.ty is not None:
                self.error("E035", f"{name}() needs a tensor, found {describe(x.ty)}", x.span)
            return e
        kw = {k.name: k.value for k in e.keywords}
        axis = None
        if "axis" in kw:
            axis = self.const_value(kw["axis"], "the axis")
            if axis is None or not isinstance(axis, int) or not -x.ty.rank <= axis < x.ty.rank:
                if axis is not None:
                    self.error("E038", f"axis {axis} is out of range for {x.ty}", kw["axis"].span)
                return e
            axis %= x.ty.rank
        elif name == "softmax":
            axis = x.ty.rank - 1
        keep = bool(self.const_value(kw["keepdims"], "keepdims")) if "keepdims" in kw else False
        dt = x.ty.dtype
        if name in ("mean", "softmax") and not dt.is_float:
            dt = F32
        if name == "softmax":
            return replace(e, ty=TensorType(dt, x.ty.shape, VALUE))
        axes = range(x.ty.rank) if axis is None else [axis]
        one = n.Constant(1)
        shape = tuple(one if i in axes else d for i, d in enumerate(x.ty.shape) if keep or i not in axes)
        if not shape:
            self.error("E038", f"{name}() over every axis gives a scalar; a tile op returns tensors", e.span,
                       "give axis=")
            return e
        return replace(e, ty=TensorType(dt, shape, VALUE))

    def _call_function(self, e, ref: FunctionRef):
        if ref.kind is None:
            return e  # its unknown decorator is reported; what it is cannot be known
        if ref.kind != "device":
            self.error("E055", f"a {ref.kind.replace('_', ' ')} cannot be called from .tl code", e.span,
                       "kernels and tile ops are launched from Python or the CLI; share code through device functions")
            return e
        sig = self.signature(ref.qualname)
        if sig is None:
            return e
        params, ret = sig
        name = ref.qualname.split(":")[-1]
        if e.keywords:
            self.error("E034", f"device function '{name}' takes positional arguments only", e.keywords[0].span)
            return e
        if len(e.args) != len(params):
            self.error("E034", f"{name}() takes {len(params)} argument{'s' * (len(params) != 1)}, {len(e.args)} given", e.span)
            return e
        args = tuple(self.value(a) for a in e.args)
        shape = None
        for a, (pname, pty) in zip(args, params):
            if a.ty is None or pty is None:
                continue
            elem = _elem(a.ty)
            if isinstance(a.ty, TensorType):
                shape = rules.broadcast(shape or (), a.ty.shape) if shape is not None else a.ty.shape
            if not rules.assignable(elem, pty.dtype):
                self.error("E035", f"argument '{pname}' of {name}() is {pty.dtype}, but {elem.dtype} was given",
                           a.span, f"convert it with {pty.dtype}(...)")
            else:
                literals.check_store(self, a, pty.dtype, f"argument '{pname}' of {name}()")
        self.record_call(ref.qualname, e.span)
        ty = None
        if ret is not None:
            ty = TensorType(ret.dtype, shape, VALUE) if shape is not None else ScalarType(ret.dtype)
        return replace(e, args=args, ty=ty)

    def _dims_may_agree(self, a, b) -> bool:
        va, vb = self.dim_value(a), self.dim_value(b)
        return va is not None and va == vb


def _elem(t) -> ScalarType:
    return ScalarType(t.dtype) if isinstance(t, TensorType) else t


def _text(e) -> str:
    from .types import format_dim

    if isinstance(e, n.Name):
        return e.id
    if isinstance(e, n.Subscript):
        return f"{_text(e.value)}[...]"
    if isinstance(e, n.Call):
        return f"{_text(e.func)}(...)"
    if isinstance(e, n.Attribute):
        return f"{_text(e.value)}.{e.attr}"
    text = format_dim(e)
    return text if text != "?" else "this expression"


def _statement_hint(name: str) -> str | None:
    if name in ALLOCATORS:
        return f"allocate with 'buf = {name}(f32[...])'"
    if name in LOOPS:
        return f"use it as 'for i in {name}(...):'"
    if name == "grid":
        return "use it as 'with grid(...) as (bx, by):'"
    return None
