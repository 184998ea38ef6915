"""Readable, deterministic text of the tile IR (`tlc build --emit ir`, snapshot tests).

Owns the text form only; nothing parses it back.  One statement per line, two spaces of
indentation per body.  Constants print bare when their dtype is the default one of their kind
(i32, f32, bool) and as `VALUE:DTYPE` otherwise, so a snapshot shows every precision choice.
"""
from __future__ import annotations

from ..dtypes import DType
from .print_warpspec import header_lines, statement_notes
from .nodes import (Assign, Atomic, BinOp, Break, Buffer, BufferRef, Call, Cast, Const, Continue,
                    Copy, Expr, Fill, For, Gemm, If, Kernel, LetScalar, Load, Param, Parallel,
                    Print, Reduce, Region, Scan, Select, Stmt, Store, Sync, UnaryOp, Var)

# Python's precedence, loosest first; `min`/`max` print as calls
_PREC = {"or": 1, "and": 2, "==": 4, "!=": 4, "<": 4, "<=": 4, ">": 4, ">=": 4, "|": 5, "^": 6,
         "&": 7, "<<": 8, ">>": 8, "+": 9, "-": 9, "*": 10, "/": 10, "//": 10, "%": 10, "**": 12}
_NOT_PREC, _UNARY_PREC, _ATOM = 3, 11, 13


def _const(c: Const) -> str:
    text = repr(c.value)
    default = {"int": "i32", "float": "f32", "bool": "bool"}.get(c.dtype.kind)
    return text if c.dtype.name == default else f"{text}:{c.dtype.name}"


def _prec(e: Expr) -> int:
    if isinstance(e, BinOp) and e.op in _PREC:
        return _PREC[e.op]
    if isinstance(e, UnaryOp):
        return _NOT_PREC if e.op == "not" else _UNARY_PREC
    if isinstance(e, Const) and isinstance(e.value, (int, float)) and e.value < 0:
        return _UNARY_PREC
    return _ATOM


def _wrap(e: Expr, need: int) -> str:
    text = expr(e)
    return f"({text})" if _prec(e) < need else text


def expr(e: Expr) -> str:
    """The text of one expression, parenthesized only where Python's precedence needs it."""
    if isinstance(e, Const):
        return _const(e)
    if isinstance(e, Var):
        return e.name
    if isinstance(e, BinOp):
        if e.op not in _PREC:  # min, max
            return f"{e.op}({expr(e.a)}, {expr(e.b)})"
        p = _PREC[e.op]
        # left-associative except `**`; comparisons never chain, so both sides need more
        right_assoc = e.op == "**"
        chain = p == 4
        left = _wrap(e.a, p + 1 if (right_assoc or chain) else p)
        right = _wrap(e.b, p if right_assoc else p + 1)
        return f"{left} {e.op} {right}"
    if isinstance(e, UnaryOp):
        if e.op == "not":
            return f"not {_wrap(e.x, _NOT_PREC)}"
        return f"{e.op}{_wrap(e.x, _UNARY_PREC)}"
    if isinstance(e, Call):
        return f"{e.fn}({', '.join(expr(a) for a in e.args)})"
    if isinstance(e, Cast):
        return f"{e.dtype.name}({expr(e.x)})"
    if isinstance(e, Select):
        return f"where({expr(e.cond)}, {expr(e.a)}, {expr(e.b)})"
    if isinstance(e, Load):
        return f"{e.name}[{', '.join(expr(i) for i in e.indices)}]"
    raise TypeError(f"printer: unknown expression node {type(e).__name__}")


def _operand(o) -> str:
    if isinstance(o, BufferRef):
        return o.name
    if isinstance(o, Region):
        offs = ", ".join(expr(i) for i in o.offsets)
        seen = "" if o.dims is None else f" as [{', '.join(expr(d) for d in o.dims)}]"  # a view's shape
        return f"{o.name}{seen}[{offs}]<{', '.join(map(str, o.extents))}>"
    raise TypeError(f"printer: unknown copy operand {type(o).__name__}")


def _shape(dtype, shape) -> str:
    return f"{dtype.name}[{', '.join(str(d) for d in shape)}]"


def _simple(s: Stmt) -> str:
    """The one-line text of a statement without a body."""
    if isinstance(s, Copy):
        return (f"copy {_operand(s.src)} -> {_operand(s.dst)}" + (f" (load batch {s.batch})" if s.batch else "")
                + (" (L2 evict_last)" if s.keep_l2 else ""))
    if isinstance(s, Gemm):
        a = f"{s.a}.T" if s.trans_a else s.a
        b = f"{s.b}.T" if s.trans_b else s.b
        return f"gemm {s.c} += {a} @ {b}" + (f" (precision {s.precision})" if s.precision != "ieee" else "")
    if isinstance(s, Fill):
        return f"fill {s.buffer} = {expr(s.value)}" + (
            " (by its carried gemm's first iteration in the ring, scale-d 0)" if s.scale_d == 3 else
            f" (by its gemm's scale-d 0, {'reading' if s.scale_d == 1 else 'only writing'} the registers)" if s.scale_d else "")
    if isinstance(s, Reduce):
        mode = "" if s.clear else " accumulate"
        return f"reduce_{s.kind} {s.src} -> {s.dst} dim={s.dim}{mode}"
    if isinstance(s, Scan):
        return f"cum{s.kind} {s.src} -> {s.dst} dim={s.dim}" + (" reverse" if s.reverse else "")
    if isinstance(s, Atomic) and s.kind.startswith("turn_"):
        idx = ", ".join(expr(i) for i in s.indices)
        return (f"wait until {s.name}[{idx}] >= {expr(s.value)} (acquire)" if s.kind == "turn_wait"
                else f"after the block's updates, {s.name}[{idx}] += 1 (release)")
    if isinstance(s, Atomic):
        idx = ", ".join(expr(i) for i in s.indices)
        return f"atomic_{s.kind} {s.name}[{idx}], {expr(s.value)}" + (" (grouped by address in a warp)" if s.grouped else "")
    if isinstance(s, Sync):
        return "sync"
    if isinstance(s, Print) and getattr(s, "cond", None) is not None:  # an ir.Assert
        args = "".join(f", {expr(a)}" for a in s.args)
        return f"device_assert{'[per thread]' if s.per_thread else ''} {expr(s.cond)}, {s.fmt!r}{args}"
    if isinstance(s, Print):
        args = "".join(f", {expr(a)}" for a in s.args)
        return f"print{'[per thread]' if s.per_thread else ''} {s.fmt!r}{args}"
    if isinstance(s, LetScalar):
        return f"let {s.name}: {s.dtype.name} = {expr(s.value)}"
    if isinstance(s, Assign):
        return f"{s.name} = {expr(s.value)}"
    if isinstance(s, Store):
        return f"{s.name}[{', '.join(expr(i) for i in s.indices)}] = {expr(s.value)}"
    if isinstance(s, Break):
        return "break"
    if isinstance(s, Continue):
        return "continue"
    raise TypeError(f"printer: unknown statement node {type(s).__name__}")


def _exchange(s: Stmt, layouts: dict) -> str | None:
    """The line that explains an exchange through shared memory the statement forces: a
    parallel loop reading fragments in another layout than theirs, or a copy between two
    fragments of different layouts."""
    if isinstance(s, Parallel) and s.exchange:
        held = "; ".join(f"other threads hold {_first_access(s, name)} ({name}: {layouts.get(name)})" for name, _ in s.exchange)
        names = ", ".join(name for name, _ in s.exchange)
        return f"exchange {names} through shared memory: this loop runs in {s.layout}; {held}"
    if isinstance(s, Copy) and isinstance(s.src, BufferRef) and isinstance(s.dst, BufferRef):
        a, b = layouts.get(s.src.name), layouts.get(s.dst.name)
        if a is not None and b is not None and a != b:
            return f"exchange {s.src.name} -> {s.dst.name} through shared memory: {a} -> {b}"
    return None


def _first_access(p: Parallel, name: str) -> str:
    """The text of the loop's first access to `name` (what the exchange is for)."""
    from .walk import loads, statement_exprs, statements

    for s in statements(p.body):
        found = [x for e in statement_exprs(s) for x in loads(e) if x.name == name]
        if isinstance(s, Store) and s.name == name:
            return f"{name}[{', '.join(expr(i) for i in s.indices)}]"
        if found:
            return expr(found[0])
    return name


def _stmts(body, depth: int, out: list[str], layouts: dict | None = None, roles: dict | None = None) -> None:
    pad = "  " * depth
    layouts, roles = layouts or {}, roles or {}
    for s in body:
        why = _exchange(s, layouts)
        if why:
            out.append(f"{pad}# {why}")
        if id(s) in roles:
            out.append(f"{pad}# {roles[id(s)]}")
        if isinstance(s, For):
            stages = f", stages={s.stages}" if s.kind == "pipelined" else ""
            rng = f"{expr(s.start)}, {expr(s.stop)}, {expr(s.step)}"
            kind = "range" if s.kind == "serial" else s.kind
            kept = f"  # after it {', '.join(s.keep_last_stage)}: the last stage" if s.keep_last_stage else ""
            out.append(f"{pad}for {s.var} in {kind}({rng}{stages}):{kept}")
            _stmts(s.body, depth + 1, out, layouts, roles)
        elif isinstance(s, Parallel):
            out.append(f"{pad}for {', '.join(s.vars)} in parallel({', '.join(map(str, s.extents))}):")
            _stmts(s.body, depth + 1, out, layouts, roles)
            out.extend(f"{pad}{_simple(c)}  # folded into the loop above: a run at a time, as it finishes each"
                       for c in s.stores)
        elif isinstance(s, If):
            out.append(f"{pad}if {expr(s.cond)}:")
            _stmts(s.then, depth + 1, out, layouts, roles)
            if s.orelse:
                out.append(f"{pad}else:")
                _stmts(s.orelse, depth + 1, out, layouts, roles)
        else:
            out.append(pad + _simple(s))


def _param(p: Param) -> str:
    if p.kind != "tensor":
        return f"{p.name}: {p.dtype.name}"
    # a dimension the launch computes and passes (schedule/host_dims.py): `HK * (H // HK) = tl_dim0`
    dims = (f"{d} = {d.arg}" if getattr(d, "arg", "") else str(d) for d in p.shape)
    return f"{p.name}: {p.dtype.name}[{', '.join(dims)}]"


def _buffer(b: Buffer, threads: int) -> str:
    text = f"{b.scope} {b.name}: {_shape(b.dtype, b.shape)}"
    if b.smem_offset is not None:
        text += f" @{b.smem_offset}"
    if b.layout is not None:
        text += f" layout={b.layout}"
        held = getattr(b.layout, "base", b.layout)  # (a replica's holders: its base's)
        if b.scope == "fragment" and isinstance(getattr(held, "threads", None), int) and 0 < held.threads < threads \
                and type(held).__name__ == "MmaAccumulator":
            text += f" on threads 0..{held.threads - 1} alone"  # (one warpgroup's: schedule/one_warpgroup.py)
    return text


def _constant(name: str, value) -> str:
    return f"{name}={value.name if isinstance(value, DType) else repr(value)}"


def print_kernel(k: Kernel) -> str:
    """The whole kernel: signature, constants, launch shape, buffers, then the body."""
    out = [f"kernel {k.name}({', '.join(_param(p) for p in k.params)}):"]
    if k.constants:
        out.append("  const " + ", ".join(_constant(n, v) for n, v in k.constants))
    if k.specialized or k.not_one:
        out.append("  specialized " + ", ".join([f"{n}={v}" for n, v in k.specialized] + [f"{n}!=1" for n in k.not_one]))
    if k.grid_of:
        out.append(f"  launch {k.grid_of[1] + 1} of {k.grid_of[2]} of {k.grid_of[0]}")
    if k.workspaces:
        out.append(f"  workspace {', '.join(k.workspaces)} (global memory allocated for each call)")
    out.extend(f"  # note: {note}" for note in k.notes)
    grid = ", ".join(expr(g) for g in k.grid)
    launch = f"  grid ({', '.join(k.block_vars)}) in ({grid}) threads={k.threads}"
    out.append(launch + (f" smem={k.smem_bytes}" if k.smem_bytes else "")
               + (f", {k.block_vars[0]} launched in reverse (its loop grows with it: the longest blocks first)"
                  if k.heavy_first else ""))
    if k.warp_spec is not None:
        out.extend("  " + line for line in header_lines(k))
    out.extend("  " + _buffer(b, k.threads) for b in k.buffers)
    _stmts(k.body, 1, out, {b.name: b.layout for b in k.buffers if b.scope == "fragment" and b.layout is not None},
           statement_notes(k))
    return "\n".join(out) + "\n"
