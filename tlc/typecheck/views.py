"""TileLang's convolution constructs, checked: a view of a tensor parameter with another shape
(`view(x, f16[M * N])`, TileLang's `T.Tensor(shape, dtype, x.data)`) and `im2col` (the
unfolded input tile of a convolution, loaded into a buffer).

A view is the same memory read row-major with another shape: it has the tensor's element type
and exactly its element count, decided here as polynomials over the shape symbols (the names
assigned once before it replaced by their values), so that `view(out, f16[N * OH * OW, F])` of
an `out: f16[N, OH, OW, F]` is accepted whatever the sizes and a count that differs for some
sizes is refused.  Only a whole tensor parameter (or another view) is contiguous: a region of
one, or a buffer, is not viewed.  The view's type holds its dimensions with those names
replaced, built from constants and shape symbols alone, so the lowering (schedule/views.py)
needs nothing else.

Called from the checker's hooks as functions of the checker `c` (a `FunctionChecker`)."""
from __future__ import annotations

from ..parser import nodes as n
from ..parser.nodes import replace
from . import consteval, linear
from .env import SHAPE, TENSOR, Symbol
from .types import FRAGMENT, GLOBAL, SHARED, BuiltinRef, DTypeValue, TensorType, describe, format_dim, format_shape

VIEW = "tensor view"  # a Symbol's kind
IM2COL_ARGS = ("img", "col", "nhw_step", "c_step", "kernel", "stride", "dilation", "pad")


def is_view_call(c, e) -> bool:
    return isinstance(e, n.Call) and isinstance(e.func, n.Name) and e.func.id == "view" \
        and c.scope.lookup("view") is None and c.module.callable_function("view") is None


def misplaced_view(c, e: n.Call):
    """`view(...)` anywhere but as the value of an assignment."""
    c.error("E302", "view(...) names a tensor: assign it to a name, 'x_flat = view(x, f16[M * N])'", e.span)
    return e


def view_assignment(c, s: n.Assign):
    """`name = view(x, dtype[dims])`: defines `name` as a global tensor over x's memory."""
    call = s.value
    if c.kind != "kernel" or c.depth > 2 or (c.depth == 2 and not c.in_grid):
        c.error("E302", "a view is declared at the top of a kernel or of its grid block", call.span)
        return s
    if not isinstance(s.target, n.Name) or s.annotation is not None:
        c.error("E302", "assign view(...) to a plain name, without an annotation: 'x_flat = view(x, f16[M * N])'",
                s.target.span)
        return s
    if c.scope.lookup(s.target.id) is not None:
        c.error("E025", f"'{s.target.id}' is already defined as a {c.scope.lookup(s.target.id).kind}", s.target.span)
        return s
    if len(call.args) != 2 or call.keywords:
        c.error("E034", f"view() takes 2 arguments, the tensor and the view's type, {len(call.args)} given", call.span,
                "write view(x, f16[M * N])")
        return s
    source = _source(c, call.args[0])
    if source is None:
        return s
    spec = call.args[1]
    if not (isinstance(spec, n.Subscript) and isinstance(spec.value, n.Name)):
        c.error("E302", "view()'s second argument is the view's type, such as f16[M * N]", spec.span)
        return s
    dt = c.expr(spec.value)
    if not isinstance(dt.ty, DTypeValue):
        if dt.ty is not None:
            c.error("E302", f"'{spec.value.id}' is not a dtype; view()'s second argument is a type such as f16[M * N]",
                    spec.value.span)
        return s
    src_ty = source.ty
    if dt.ty.dtype != src_ty.dtype:
        c.error("E303", f"a view keeps the element type: '{source.id}' is {src_ty.dtype}, the view {dt.ty.dtype}",
                spec.value.span, f"TileLang's T.Tensor(shape, dtype, x.data) may read the bytes as another type; tlc "
                f"does not: view it as {src_ty.dtype}[...] and convert the elements (cast(), reinterpret())")
        return s
    dims = tuple(_dimension(c, d) for d in spec.indices)
    if any(d is None for d in dims):
        return s
    have, want = _count(src_ty.shape, c), _count(dims, c)
    if not linear.same(have, want, c.consts):
        c.error("E300", f"a view has as many elements as its tensor: '{source.id}' ({src_ty.dtype}"
                f"{format_shape(src_ty.shape)}) has {_text(have, c)}, the view ({dt.ty.dtype}"
                f"{format_shape(tuple(spec.indices))}) {_text(want, c)}", spec.span,
                "a view reads the same memory row-major with another shape; counts equal only for some sizes are "
                "not accepted")
        return s
    ty = TensorType(src_ty.dtype, dims, GLOBAL)
    c.scope.define(Symbol(s.target.id, VIEW, ty, s.target.span))
    spec = replace(spec, value=dt, indices=tuple(c.expr(d) for d in spec.indices), ty=ty)
    func = replace(call.func, ty=BuiltinRef("view"))
    return replace(s, target=replace(s.target, ty=ty), value=replace(call, func=func, args=(source, spec), ty=ty))


def _source(c, e):
    """The viewed tensor, typed, or None (reported)."""
    if isinstance(e, n.Subscript) and isinstance(e.value, n.Name):
        c.error("E301", f"a view is of a whole tensor; the region '{e.value.id}[...]' is not contiguous in memory",
                e.span, f"view '{e.value.id}' itself and index the view")
        return None
    if not isinstance(e, n.Name):
        c.error("E301", "view() takes a tensor parameter by name", e.span)
        return None
    t = c.expr(e)
    if t.ty is None:
        return None
    sym = c.scope.lookup(e.id)
    if not isinstance(t.ty, TensorType) or t.ty.scope != GLOBAL or sym is None or sym.kind not in (TENSOR, VIEW):
        what = describe(t.ty)
        hint = ("a buffer's layout is the compiler's, not row-major: allocate it with the shape you index"
                if isinstance(t.ty, TensorType) else None)
        c.error("E301", f"view() takes a tensor parameter, whose memory is row-major; '{e.id}' is {what}", e.span, hint)
        return None
    return t


def _dimension(c, d):
    """A view's dimension with the names assigned before it replaced by their values; it may
    read constants and shape symbols only (a view's shape is the kernel's, not a block's)."""
    full = c.expanded(d)
    names = [x for x in _names(full) if x.id not in c.consts]
    bad = [x for x in names if getattr(c.scope.lookup(x.id), "kind", None) != SHAPE]
    if bad:
        c.error("E304", f"a view's dimensions are built from constants and shape symbols; '{bad[0].id}' is "
                f"{_kind(c, bad[0].id)}", d.span)
        return None
    c.integer(d, "a view's dimension")
    try:
        v = consteval.evaluate(full, c.consts)
    except consteval.NotConstant:
        return full
    if not isinstance(v, int) or isinstance(v, bool) or v <= 0:
        c.error("E304", f"a view's dimension must be a positive integer, found {v!r}", d.span)
        return None
    return full


def _kind(c, name: str) -> str:
    sym = c.scope.lookup(name)
    if sym is None:
        return "not defined here"
    return f"a {sym.kind}"


def _names(e) -> list:
    if isinstance(e, n.Name):
        return [e]
    if isinstance(e, n.BinOp):
        return _names(e.left) + _names(e.right)
    if isinstance(e, n.UnaryOp):
        return _names(e.operand)
    if isinstance(e, n.Call):
        return [x for a in e.args for x in _names(a)]
    return []


def _count(dims, c):
    """The product of `dims` (the names assigned before replaced)."""
    out = None
    for d in dims:
        d = c.expanded(d)
        out = d if out is None else n.BinOp("*", out, d)
    return out if out is not None else n.Constant(1)


def _text(e, c) -> str:
    return format_dim(linear.to_expr(linear.simplify(e, c.consts)))


# ---- im2col -----------------------------------------------------------------------------------

def check_im2col(c, call: n.Call):
    """`im2col(img, col, nhw_step, c_step, kernel, stride, dilation, pad)`, TileLang's order
    and names: `img` an NHWC tensor in global memory, `col` a 2-D shared or fragment buffer of
    its dtype; `kernel` (the kernel's height and width), `stride`, `dilation` and `pad` are
    integers, the last three compile-time constants.  Returns the call with its 8 arguments in
    order, typed, or None (reported)."""
    args = _bind(c, call)
    if args is None:
        return None
    img, col = c.expr(args["img"]), c.expr(args["col"])
    if img.ty is None or col.ty is None:
        return None
    it, ct = img.ty, col.ty
    if not isinstance(args["img"], n.Name) or not isinstance(it, TensorType) or it.scope != GLOBAL or it.rank != 4:
        c.error("E305", f"im2col reads an image in global memory, (batch, height, width, channels); found {describe(it)}",
                args["img"].span, "pass the whole NHWC tensor parameter (or a 4-D view of one)")
        return None
    if not isinstance(args["col"], n.Name) or not isinstance(ct, TensorType) or ct.scope not in (SHARED, FRAGMENT) \
            or ct.rank != 2:
        c.error("E306", f"im2col writes a 2-D shared or fragment buffer (pixels x kernel-channels); found {describe(ct)}",
                args["col"].span)
        return None
    if it.dtype != ct.dtype:
        c.error("E307", f"im2col copies without converting: '{args['img'].id}' is {it.dtype}, '{args['col'].id}' "
                f"{ct.dtype}", call.span, f"allocate '{args['col'].id}' as {it.dtype}, then copy it into a buffer of "
                f"{ct.dtype}")
        return None
    out = [img, col, c.integer(args["nhw_step"], "im2col's nhw_step"), c.integer(args["c_step"], "im2col's c_step")]
    kernel = c.integer(args["kernel"], "im2col's kernel size")
    if not _at_least(c, kernel, 1, "kernel size", False):
        return None
    out.append(kernel)
    for name, least in (("stride", 1), ("dilation", 1), ("pad", 0)):
        e = c.integer(args[name], f"im2col's {name}")
        if not _at_least(c, e, least, name, True):
            return None
        out.append(e)
    if any(x.ty is None for x in out):
        return None
    return replace(call, args=tuple(out), keywords=())


def _bind(c, call: n.Call):
    args = dict(zip(IM2COL_ARGS, call.args))
    ok = len(call.args) <= len(IM2COL_ARGS)
    for k in call.keywords:
        if k.name not in IM2COL_ARGS or k.name in args:
            c.error("E034", f"im2col() has no argument '{k.name}'" if k.name not in IM2COL_ARGS else
                    f"im2col() is given '{k.name}' twice", k.span, f"it takes {', '.join(IM2COL_ARGS)}")
            ok = False
        args[k.name] = k.value
    if ok and len(args) != len(IM2COL_ARGS):
        c.error("E034", f"im2col() takes 8 arguments ({', '.join(IM2COL_ARGS)}), {len(args)} given", call.span)
        ok = False
    elif len(call.args) > len(IM2COL_ARGS):
        c.error("E034", f"im2col() takes 8 arguments ({', '.join(IM2COL_ARGS)}), {len(call.args)} given", call.span)
    return args if ok else None


def _at_least(c, e, least: int, what: str, constant: bool) -> bool:
    if e.ty is None:
        return False
    if constant:
        v = c.const_value(e, f"im2col's {what}")
        if v is None:
            return False
    else:
        try:
            v = consteval.evaluate(c.expanded(e), c.consts)
        except consteval.NotConstant:
            return True  # a size known at launch: a kernel size below 1 reads nothing but zeros
    if isinstance(v, bool) or not isinstance(v, int) or v < least:
        c.error("E308", f"im2col's {what} must be {'at least ' + str(least) if least else 'zero or more'}, found {v!r}",
                e.span)
        return False
    return True
