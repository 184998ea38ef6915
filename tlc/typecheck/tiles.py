"""Tile statements (copy, gemm, fill, clear, reduce_*, atomic_*, sync, print) and buffer
allocations: memory scopes, operand shapes, and where each may appear."""
from __future__ import annotations

from .. import device_assert, print_format
from ..parser import nodes as n
from ..parser.nodes import replace  # dataclasses.replace, faster
from . import copy_global, linear, literals, reduce_args, rules
from .env import BUFFER, Symbol
from .types import FRAGMENT, GLOBAL, LOCAL, SHARED, BuiltinRef, DTypeValue, VoidType, ScalarType, StrType, TensorType, describe, format_dim, format_shape

_SCOPE_OF = {"shared": SHARED, "fragment": FRAGMENT, "local": LOCAL}


class TileChecker:
    # ---- allocations -------------------------------------------------------------------------------
    def allocation(self, s: n.Assign):
        call = s.value
        kind = call.func.id
        result = self._allocate(s, call, kind)
        if result is None and isinstance(s.target, n.Name) and self.scope.lookup(s.target.id) is None:
            # Reported already; later uses of the name should not be reported again as unknown.
            self.scope.define(Symbol(s.target.id, BUFFER, None, s.target.span))
        return result or s

    def _allocate(self, s: n.Assign, call: n.Call, kind: str):
        if not self.allocation_placed(call, kind):  # anywhere in the grid block, hoisted (placement.py)
            return None
        if not isinstance(s.target, n.Name):
            self.error("E030", f"assign {kind}(...) to a plain name", s.target.span)
            return None
        if not self._arity(call, kind, 1):
            return None
        spec = call.args[0]
        if not (isinstance(spec, n.Subscript) and isinstance(spec.value, n.Name)):
            self.error("E030", f"{kind}(...) takes a tensor type such as {kind}(f32[128, 64])", spec.span)
            return None
        dt = self.expr(spec.value)
        if not isinstance(dt.ty, DTypeValue):
            if dt.ty is not None:
                self.error("E021", f"'{spec.value.id}' is not a dtype", spec.value.span)
            return None
        dims = []
        for d in spec.indices:
            v = self.const_value(d, "a buffer dimension")
            if v is None:
                return None
            if not isinstance(v, int) or isinstance(v, bool) or v <= 0:
                self.error("E061", f"a buffer dimension must be a positive integer, found {v!r}", d.span)
                return None
            dims.append(d)
        name = s.target.id
        ty = TensorType(dt.ty.dtype, tuple(dims), _SCOPE_OF[kind])
        if not self.reallocation(name, ty, s.target.span):  # the same name and type: the same buffer
            return None
        if s.annotation is not None:
            self.error("E030", "the buffer's type is the argument of its allocation; drop the annotation", s.annotation.span)
        self.record_allocation(name, ty, s.target.span)
        self.scope.define(Symbol(name, BUFFER, ty, s.target.span))
        spec = replace(spec, value=dt, indices=tuple(self.expr(d) for d in spec.indices), ty=ty)
        return replace(s, target=replace(s.target, ty=ty), value=self.statement_call(replace(call, args=(spec,), ty=ty)))

    # ---- statements ----------------------------------------------------------------------------------
    def tile_statement(self, s: n.ExprStmt, name: str):
        call = s.expr
        if self.kind != "kernel" or not self.in_grid:
            where = "a kernel's grid block"
            self.error("E060", f"{name}(...) is only allowed inside {where}", call.span)
            return s
        if self.in_parallel and name not in ("print", "device_assert", "atomic_add", "atomic_max", "atomic_min"):
            self.error("E060", f"{name}(...) works on whole tiles and cannot be inside a 'parallel' loop", call.span,
                       "inside a parallel loop, read and write single elements")
            return s
        from . import scalar_tiles  # (clear and fill of a scalar: TileLang's T.alloc_var)
        if name in ("clear", "fill") and call.args and scalar_tiles.scalar_variable(self, call.args[0]):
            return scalar_tiles.set_scalar(self, s, name)
        method = getattr(self, "_" + name.split("_")[0] if name.startswith(("reduce_", "atomic_")) else "_" + name)
        checked = method(call, name)
        if checked is None:
            return s
        return replace(s, expr=self.statement_call(checked))

    def statement_call(self, call: n.Call) -> n.Call:
        """Type the parts of a statement-like call that its checker did not: the builtin's
        name, keyword values (constants), and the call itself (no value)."""
        keywords = tuple(replace(k, value=self.expr(k.value) if getattr(k.value, "ty", None) is None else k.value)
                         for k in call.keywords)
        return replace(call, func=replace(call.func, ty=BuiltinRef(call.func.id)), keywords=keywords,
                       ty=call.ty or VoidType())

    def _operand(self, e, role: str):
        """A tile operand: a buffer, a region of a global tensor `A[r, c]` / `A[r:r+BM, c:c+BK]`,
        or a slice of a buffer.  Returns the typed node (its ty a TensorType) or None."""
        if isinstance(e, n.Name):
            t = self.expr(e)
            if t.ty is None:
                return None
            if not isinstance(t.ty, TensorType):
                self.error("E036", f"the {role} must be a tensor or buffer, found {describe(t.ty)}", e.span)
                return None
            return t
        if isinstance(e, n.Subscript) and isinstance(e.value, n.Name):
            base = self.expr(e.value)
            if base.ty is None:
                return None
            bt = base.ty
            if not isinstance(bt, TensorType):
                self.error("E036", f"the {role} must be a tensor or buffer, found {describe(bt)}", e.span)
                return None
            if len(e.indices) != bt.rank:
                self.error("E039", f"'{e.value.id}' has {bt.rank} dimension{'s' * (bt.rank != 1)} but the region gives {len(e.indices)}",
                           e.span)
                return None
            indices, shape = [], []
            for i, (idx, dim) in enumerate(zip(e.indices, bt.shape)):
                if isinstance(idx, n.Slice):
                    sl, extent = self._slice(idx, dim, bt.scope)
                    if sl is None:
                        return None
                    indices.append(sl)
                    shape.append(extent)
                else:
                    indices.append(self.integer(idx, "a region origin"))
                    shape.append(None)  # extent taken from the other side
            return replace(e, value=base, indices=tuple(indices), ty=TensorType(bt.dtype, tuple(shape), bt.scope))
        t = self.expr(e)
        if t.ty is not None:
            self.error("E036", f"the {role} must be a tensor, a buffer or a region such as A[r, c]", e.span)
        return None

    def _slice(self, sl: n.Slice, dim, scope):
        if sl.step is not None:
            self.error("E039", "a region cannot have a step", sl.step.span)
            return None, None
        lower = self.integer(sl.lower, "a slice bound") if sl.lower is not None else None
        upper = self.integer(sl.upper, "a slice bound") if sl.upper is not None else None
        out = replace(sl, lower=lower, upper=upper)
        if sl.upper is None and sl.lower is not None and scope == GLOBAL:
            self.error("E039", "give the end of a region of a global tensor: A[r:r+BM, ...]", sl.span)
            return None, None
        lo = sl.lower if sl.lower is not None else n.Constant(0)
        up = sl.upper if sl.upper is not None else dim
        if sl.lower is None:
            extent = up  # ':' or ':e'
        elif isinstance(up, n.BinOp) and up.op == "+" and up.left == lo:
            extent = up.right
        elif isinstance(up, n.BinOp) and up.op == "+" and up.right == lo:
            extent = up.left
        else:
            extent = n.BinOp("-", up, lo)
        v = self.dim_value(extent)
        if v is None:  # by * BM:(by + 1) * BM, as TileLang writes it: the extent is BM whatever by is
            v = linear.difference(self.expanded(up), self.expanded(lo), self.consts)  # kv_start:kv_end
            if v is None and self._specializes(linear.to_expr(linear.simplify(n.BinOp("-", up, lo), self.consts)),
                                               "the extent of a region", sl.span):
                return out, extent  # `0:N`, `:` over N: N is compiled in, and the extent known then
            if v is None:
                left = format_dim(linear.to_expr(linear.simplify(n.BinOp("-", up, lo), self.consts)))
                self.error("E031", f"the extent of a region must be a compile-time constant; this one is {left}", sl.span,
                           "write the region as r:r+BM or by * BM:(by + 1) * BM, with BM a constant"
                           + (" (':' spans a size known only at launch)" if sl.upper is None else ""))
                return None, None
            extent = n.Constant(v, span=sl.span)
        if v <= 0:
            self.error("E061", f"this region is empty ({v} elements)", sl.span)
            return None, None
        return out, extent

    def _im2col(self, call, name):
        from .views import check_im2col
        return check_im2col(self, call)

    def _copy(self, call, name):
        if not self._arity(call, "copy", 2):
            return None
        src = self._operand(call.args[0], "source of copy")
        dst = self._operand(call.args[1], "destination of copy")
        if src is None or dst is None:
            return None
        s, d = src.ty, dst.ty
        if s.scope == GLOBAL and d.scope == GLOBAL and not copy_global.check_sized(self, src, dst, call):
            return None
        src, dst = self._drop_single_indices(src, dst, call)
        if src is None:
            return None
        ts, td = _tile_dims(src), _tile_dims(dst)
        for a, b in zip(ts, td) if len(ts) == len(td) else ():  # else they agree but for 1s
            if a is None or b is None:
                continue
            va, vb = self.dim_value(a), self.dim_value(b)
            if va is not None and vb is not None and va != vb:
                self.error("E036", f"copy between tiles of different shapes: {_dims_text(ts)} and {_dims_text(td)}", call.span)
                return None
        return replace(call, args=(src, dst))

    def _drop_single_indices(self, src, dst, call):
        """Decide which single indices of a region pick a dimension the tile does not have
        (NumPy's `Q[b, r:r+BM, h, :]` is a [BM, D] tile) and which give only an origin whose
        extent comes from the other side (`A[r, c]`).  A dropped dimension's extent becomes
        the constant 1 in the operand's type; the lowering reads it from there."""
        singles = [_single_indices(x) for x in (src, dst)]
        if not singles[0] and not singles[1]:
            if src.ty.rank != dst.ty.rank:
                self._rank_error(call, src, dst)
                return None, None
            return src, dst
        if singles[0] and singles[1]:
            with_slices = [len(x) < x_op.ty.rank for x, x_op in zip(singles, (src, dst))]
            if not any(with_slices):
                self.error("E036", "both sides of copy are regions; one side must be a buffer that gives the tile's shape",
                           call.span)
                return None, None
            # a side with slices is NumPy's view: its single indices drop their dimensions
            src = _dropped(src, singles[0]) if with_slices[0] else src
            dst = _dropped(dst, singles[1]) if with_slices[1] else dst
            if all(with_slices):
                if len(_tile_dims(src)) != len(_tile_dims(dst)):
                    self._rank_error(call, src, dst)
                    return None, None
                return src, dst
        # one side has single indices still to place, the other gives the tile's rank
        region_is_src = bool(_single_indices(src))
        region, other = (src, dst) if region_is_src else (dst, src)
        rank = len(_tile_dims(other))
        picked = _single_indices(region)
        extra = region.ty.rank - rank
        numpy = _dropped(region, picked)
        if extra == len(picked):
            region = numpy
        elif 0 <= extra < len(picked) and (self._agree(_dropped(region, picked[:extra]), other)
                                           or not self._same_but_ones(numpy, other)):
            region = _dropped(region, picked[:extra])  # A[b, r, c]: b picks, r and c are the origin
        elif len(picked) < region.ty.rank and self._same_but_ones(numpy, other):
            region = numpy  # G[b, rows, h] into a [1, BS] tile: the shapes agree but for 1s, as TileLang allows
        else:
            self._rank_error(call, src, dst)
            return None, None
        return (region, other) if region_is_src else (other, region)

    def _same_but_ones(self, a, b) -> bool:
        """Whether two copy sides' tiles agree once their dimensions of 1 are left out."""
        dims = [[self.dim_value(d) for d in _tile_dims(x)] for x in (a, b)]
        if None in dims[0] or None in dims[1]:
            return False
        return [d for d in dims[0] if d != 1] == [d for d in dims[1] if d != 1]

    def _agree(self, a, b) -> bool:
        """Whether two copy sides' tiles have one rank and no two known dimensions that differ."""
        ta, tb = _tile_dims(a), _tile_dims(b)
        return len(ta) == len(tb) and all(x is None or y is None or self.dim_value(x) is None or
                                          self.dim_value(y) is None or self.dim_value(x) == self.dim_value(y)
                                          for x, y in zip(ta, tb))

    def _rank_error(self, call, src, dst):
        a, b = _shown_dims(src), _shown_dims(dst)
        self.error("E036", f"copy between {len(a)}-D and {len(b)}-D tiles: {_dims_text(a)} and {_dims_text(b)}",
                   call.span, "a single index drops its dimension, as in NumPy: Q[b, r:r+BM, h, :] is a [BM, D] tile; "
                   "a region given only by single indices, A[r, c], is an origin with the other side's shape")

    def _gemm(self, call, name):
        if not self._arity(call, "gemm", 3, 3, ("trans_a", "trans_b", "precision")):
            return None
        ops = []
        for e, role, scopes in zip(call.args, ("a", "b", "c"), ((SHARED, FRAGMENT), (SHARED, FRAGMENT), (FRAGMENT,))):
            t = self.expr(e)
            if t.ty is None:
                return None
            if not isinstance(t.ty, TensorType) or t.ty.scope not in scopes or not isinstance(e, n.Name):
                where = " or ".join(scopes)
                self.error("E037", f"gemm operand {role} must be a {where} buffer, found {describe(t.ty)}", e.span,
                           "copy global tiles into shared(...) first" if isinstance(t.ty, TensorType) and t.ty.scope == GLOBAL else None)
                return None
            if t.ty.rank != 2:
                self.error("E037", f"gemm operand {role} must be 2-D, found {t.ty}", e.span)
                return None
            ops.append(t)
        flags = {}
        precision = None
        for k in call.keywords:
            if k.name == "precision":
                precision = self._gemm_precision(k.value)
                if precision is None:
                    return None
                continue
            v = self.const_value(k.value, k.name)
            if v is None:
                return None
            if not isinstance(v, bool):
                self.error("E037", f"{k.name} must be True or False, found {v!r}", k.value.span)
                return None
            flags[k.name] = v
        a, b, c = (o.ty for o in ops)
        m, k1 = (a.shape[1], a.shape[0]) if flags.get("trans_a") else a.shape
        k2, nn = (b.shape[1], b.shape[0]) if flags.get("trans_b") else b.shape
        dims = [self.dim_value(x) for x in (m, k1, k2, nn, c.shape[0], c.shape[1])]
        if None not in dims:
            vm, vk1, vk2, vn, cm, cn = dims
            if vk1 != vk2:
                self.error("E037", f"gemm inner dimensions differ: a is {_oriented(a, flags.get('trans_a'))} and b is "
                           f"{_oriented(b, flags.get('trans_b'))}", call.span,
                           "a is [M, K] and b is [K, N]; pass trans_a=True or trans_b=True for transposed operands")
                return None
            if (vm, vn) != (cm, cn):
                self.error("E037", f"gemm accumulator c is {c}, but a @ b is [{vm}, {vn}]", call.span)
                return None
        if not rules.gemm_operands_agree(a.dtype, b.dtype):
            self.error("E037", f"gemm operands have different dtypes: {a.dtype} and {b.dtype}", call.span,
                       "only the two f8 formats mix (f8e4m3 with f8e5m2), and i8 with u8")
            return None
        if a.dtype.is_float and not c.dtype.is_float or a.dtype.is_int and c.dtype.name != "i32":
            self.error("E037", f"gemm accumulator c is {c.dtype}; {a.dtype} inputs accumulate in "
                       f"{'f32' if a.dtype.is_float else 'i32'}", call.args[2].span)
            return None
        if precision == "tf32" and a.dtype.name != "f32":
            self.error("E037", f'gemm precision="tf32" is a mode of f32 operands, but a and b are {a.dtype}',
                       call.span, 'drop precision=: f16, bf16, f8 and integer operands multiply exactly')
            return None
        return replace(call, args=tuple(ops))

    def _gemm_precision(self, e):
        """`precision="tf32"` (f32 operands rounded to tf32 on tensor cores) or "ieee" (exact
        f32 products, the default): a string literal."""
        if isinstance(e, n.Constant) and isinstance(e.value, str) and e.value in rules.GEMM_PRECISIONS:
            return e.value
        found = (repr(e.value).replace("'", '"') if isinstance(e, n.Constant) else
                 f"the name '{e.id}'" if isinstance(e, n.Name) else "an expression")
        self.error("E037", f'gemm precision must be "ieee" or "tf32", found {found}', e.span,
                   '"tf32" multiplies f32 operands on tensor cores with 10-bit mantissas; "ieee" is exact')
        return None

    def _fill(self, call, name):
        if not self._arity(call, name, 2 if name == "fill" else 1):
            return None
        t = self._buffer_arg(call.args[0], name)
        if t is None:
            return None
        if name == "clear":
            return replace(call, args=(t,))
        v = self.scalar(call.args[1], "a fill value")
        if isinstance(v.ty, ScalarType) and not rules.assignable(v.ty, t.ty.dtype):
            self.error("E033", f"cannot fill a {t.ty.dtype} buffer with {v.ty.dtype} without a cast", v.span,
                       f"write {t.ty.dtype}(...)")
        elif isinstance(v.ty, ScalarType):
            literals.check_store(self, v, t.ty.dtype, "the buffer's elements")
        return replace(call, args=(t, v))

    _clear = _fill

    def _buffer_arg(self, e, name):
        t = self.expr(e)
        if t.ty is None:
            return None
        if not isinstance(t.ty, TensorType) or t.ty.scope == GLOBAL or not isinstance(e, n.Name):
            self.error("E036", f"{name}() sets a shared, fragment or local buffer, found {describe(t.ty)}", e.span)
            return None
        return t

    def _reduce(self, call, name):
        if not self._arity(call, name, 2, 4, reduce_args.OPTIONS):
            return None
        src = self._buffer_arg(call.args[0], name)
        dst = self._buffer_arg(call.args[1], name)
        options = reduce_args.reduce_options(self, call, name)  # dim and clear, by position or by name
        if src is None or dst is None or options is None:
            return None
        call, values = options
        dim = values["dim"]
        s, d = src.ty, dst.ty
        if not -s.rank <= dim < s.rank:
            self.error("E038", f"dim={dim!r} is out of range for the {s.rank}-D tile {s}",
                       next((k.value.span for k in call.keywords if k.name == "dim"), call.span))
            return None
        dim %= s.rank
        want = tuple(x for i, x in enumerate(s.shape) if i != dim)
        got = [self.dim_value(x) for x in d.shape]
        if len(want) != d.rank or got != [self.dim_value(x) for x in want]:
            self.error("E038", f"{name} of {s} along dim {dim} gives {format_shape(want) if want else 'a scalar'}, "
                       f"but the destination is {d}", call.span)
            return None
        if not rules.assignable(ScalarType(s.dtype), d.dtype):
            self.error("E033", f"{name} of {s.dtype} values cannot be stored into {d.dtype} without losing precision",
                       call.args[1].span)
            return None
        return replace(call, args=(src, dst))

    def _atomic(self, call, name):
        if not self._arity(call, name, 2):
            return None
        target = call.args[0]
        if not isinstance(target, n.Subscript) or any(isinstance(i, n.Slice) for i in target.indices):
            self.error("E054", f"{name} updates one element: {name}(C[i, j], v)", target.span)
            return None
        t = self.expr(target)
        if t.ty is None:
            return None
        base = t.value.ty
        if base.scope not in (GLOBAL, SHARED):
            self.error("E054", f"{name} updates an element of a global or shared tensor, not of a {base.scope} buffer", target.span)
            return None
        v = self.scalar(call.args[1], "an atomic operand")
        if isinstance(v.ty, ScalarType) and not rules.assignable(v.ty, t.ty.dtype):
            self.error("E033", f"cannot {name.split('_')[1]} {v.ty.dtype} into a {t.ty.dtype} element without a cast", v.span,
                       f"write {t.ty.dtype}(...)")
        elif isinstance(v.ty, ScalarType):
            literals.check_store(self, v, t.ty.dtype, "the element updated")
        return replace(call, args=(t, v))

    def _sync(self, call, name):
        self._arity(call, "sync", 0)
        return call

    def _print(self, call, name):
        if not call.args or not (isinstance(call.args[0], n.Constant) and isinstance(call.args[0].value, str)):
            self.error("E053", "print() takes a format string first: print(\"x = %f\", x)", call.span)
            return None
        for k in call.keywords:
            self.error("E034", f"print() has no argument '{k.name}'", k.span)
        if len(call.args) - 1 > print_format.MAX_VALUES:  # CUDA's printf ignores the rest; the interpreter printed them
            self.error("E053", f"print() prints at most {print_format.MAX_VALUES} values, as the device's printf "
                       f"does; {len(call.args) - 1} are given", call.args[1 + print_format.MAX_VALUES].span)
            return None
        args = self._format_values(call, call.args[0], call.args[1:], "print")
        return None if args is None else replace(call, args=(replace(call.args[0], ty=StrType()),) + args)

    def _device_assert(self, call, name):
        """device_assert(cond, "message %d", values...): the message is checked as print()'s format."""
        if len(call.args) < 2 or not (isinstance(call.args[1], n.Constant) and isinstance(call.args[1].value, str)):
            self.error("E380", "device_assert() takes a condition and then a message: "
                       "device_assert(i < n, \"i = %d is out of range\", i)", call.span)
            return None
        for k in call.keywords:
            self.error("E034", f"device_assert() has no argument '{k.name}'", k.span)
        cond = self.scalar(call.args[0], "a condition")
        if isinstance(cond.ty, ScalarType) and not cond.ty.dtype.is_bool:
            self.error("E381", f"device_assert()'s condition must be a bool, found {cond.ty.dtype}", cond.span,
                       "compare it: device_assert(x != 0, ...)")
        if len(call.args) - 2 > device_assert.MAX_VALUES:
            self.error("E382", f"device_assert() reports at most {device_assert.MAX_VALUES} values, "
                       f"{len(call.args) - 2} are given", call.args[2 + device_assert.MAX_VALUES].span)
            return None
        args = self._format_values(call, call.args[1], call.args[2:], "device_assert")
        return None if args is None else replace(call, args=(cond, replace(call.args[1], ty=StrType())) + args)

    def _format_values(self, call, fmt, values, what: str):
        """The values of print() or device_assert() checked against the format string `fmt`
        (tlc.print_format), or None after reporting why they do not fit."""
        args = tuple(self.scalar(a, f"a value to {'print' if what == 'print' else 'report'}") for a in values)
        try:
            convs = print_format.conversions(fmt.value)
        except print_format.FormatError as e:
            self.error(e.code, e.message.replace("print()", what + "()"), fmt.span, e.hint)
            return None
        if len(convs) != len(args):
            self.error("E053", f"the format has {len(convs)} placeholder{'s' * (len(convs) != 1)} but {len(args)} value"
                       f"{'s are' if len(args) != 1 else ' is'} given", call.span)
            return None
        for conv, a in zip(convs, args):
            why = print_format.mismatch(conv, a.ty.dtype) if isinstance(a.ty, ScalarType) else None
            if why:  # the device's printf would read the wrong number of bytes
                self.error("E175", why, a.span, f"write {'%f' if a.ty.dtype.is_float else '%d'} for {a.ty.dtype} values, "
                           f"or convert the value: {'i32' if a.ty.dtype.is_float else 'f32'}(...)")
        return args


def _single_indices(operand) -> list[int]:
    """The dimensions a region picks with a single index (not yet known to be dropped)."""
    if not isinstance(operand, n.Subscript):
        return []
    return [i for i, (x, d) in enumerate(zip(operand.indices, operand.ty.shape)) if not isinstance(x, n.Slice) and d is None]


def _dropped(operand, axes):
    """The region with the single indices at `axes` dropping their dimensions (extent 1)."""
    shape = tuple(n.Constant(1) if i in axes else d for i, d in enumerate(operand.ty.shape))
    return replace(operand, ty=replace(operand.ty, shape=shape))


def _tile_dims(operand) -> tuple:
    """The dimensions a copy side moves: a region's dropped dimensions left out, None where
    the extent comes from the other side."""
    if not isinstance(operand, n.Subscript):
        return operand.ty.shape
    return tuple(d for x, d in zip(operand.indices, operand.ty.shape) if isinstance(x, n.Slice) or d is None)


def _shown_dims(operand) -> tuple:
    """The tile of a copy side as a message shows it: a region with slices as NumPy reads it."""
    if isinstance(operand, n.Subscript) and any(isinstance(x, n.Slice) for x in operand.indices):
        return tuple(d for x, d in zip(operand.indices, operand.ty.shape) if isinstance(x, n.Slice))
    return _tile_dims(operand)


def _dims_text(dims) -> str:
    return "[" + ", ".join("?" if d is None else format_shape((d,))[1:-1] for d in dims) + "]"


def _oriented(t: TensorType, trans: bool) -> str:
    return format_shape(tuple(reversed(t.shape))) + " (transposed)" if trans else format_shape(t.shape)
