"""Fragments held in the 16-bit type their values have (a pass after layout inference, shown in
the tile IR as the fragment's dtype, with a note).

A plain kernel copies an f16 row into an f32 fragment (`row = fragment(f32[1, BN])`,
`copy(x[r, 0], row)`) so that its arithmetic is in f32, as docs/LANGUAGE.md teaches.  Held as
f32, the row takes twice the registers its values need, and a register-resident kernel's speed
is the rows in flight an SM holds (schedule/blocks_per_sm.py): bench/plain's rms_norm, its row
and weights in f32, fits 2 blocks an SM; held as f16, 4.  The pass holds a float fragment in the
16-bit float type `d` of the copies into it (f16; `HELD` says why not bf16) when that
changes no value anything reads:
- every copy into it is from a tensor or buffer of type `d`, every fill a constant `d` holds
  exactly, and every other store writes a value `d` holds exactly (its own elements, elements
  of `d` tensors or buffers, such constants, and `where`, negation, `min` and `max` of them);
- or a store's value is rounded to `d` anyway: the fragment is copied into a `d` tensor or
  buffer right after the loop that stores it and never read again (rms_norm's result in
  place: rounded once either way);
- a reduction may read it (16-bit values are summed in f32, as f32 ones), no gemm, scan or
  atomic takes it, and it is not a reduction's result;
- a thread holds more than one vector run of it (else it saves no register).
Reads convert each element to the declared type, so the arithmetic stays in f32.
On the H200 (bench/plain.py, (16384, 8192) f16, GPU queue batch 1): the plain rms_norm 132 us =
0.95 of copy bandwidth (178 us = 0.71 at 2 blocks before; the same 132 us at 3 blocks), std.nn's
154 us, torch 197 us.  The plain layer_norm gains nothing from its third block (207 us = 0.61,
203 us before; std.nn's 209, torch 223): its row's loads, then its weights', then its biases'
are issued one after another (each copy's conversions branch, and ptxas moves no load above a
branch), which a copy's loads issued before earlier copies' conversions would overlap.
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from .. import ir
from ..ir.walk import loads, mapped, named_buffers, statement_exprs, statements, stmts_mapped
from ..dtypes import F16
from .layout import vector_run

_WHOLE = (ir.Reduce, ir.Gemm, ir.Scan)
# The types a fragment may be held in.  Not bf16: its conversions take registers that f16's do
# not, and a bf16 row held in 16 bits spills at the blocks an SM its size asks for (ptxas -v,
# sm_90a: an rms norm of 2048 to 8192 at 128 threads, 12 to 60 bytes; f16, none).
HELD = (F16,)


def narrow_fragments(kernel: ir.Kernel) -> ir.Kernel:
    """`kernel` with each fragment that can be held in a 16-bit float type held in it."""
    held, recomputing = {}, []
    for b in kernel.buffers:
        if b.scope == "fragment" and b.dtype.is_float and b.dtype.bits > 16 and b.layout is not None \
                and b.layout.registers > vector_run(b.layout):
            # A thread holding one vector run or less computes on the whole run in f32 anyway,
            # so 16 bits would save no register: ptxas -v, sm_90a, bench/plain's layer_norm of
            # 256 to 2048 spills 12-24 bytes at the 6 blocks an SM its narrowed fragments would
            # ask for, and takes 47 registers at 5 held as f32.
            d = _held_type(kernel, b)
            if d is None:
                d, kernel = _recomputing(kernel, b)
                recomputing += [b.name] if d is not None else []
            if d is not None:
                held[b.name] = (b.dtype, d)
    if not held:
        return kernel
    buffers = tuple(replace(b, dtype=held[b.name][1]) if b.name in held else b for b in kernel.buffers)
    body = _rewrite(kernel.body, held)
    names = ", ".join(f"{name} ({wide} as {d})" for name, (wide, d) in held.items())
    note = (f"fragments held in 16 bits: {names}: they only hold values of that type, or values rounded "
            "to it when copied out, so their arithmetic in the declared type is unchanged")
    if recomputing:
        note += (f"; {', '.join(recomputing)} keep{'s' if len(recomputing) == 1 else ''} the copied values, "
                 "an element-wise update of them recomputed in the loops that read it (recompute.py)")
    return replace(kernel, buffers=buffers, body=body, notes=kernel.notes + (note,))


def _held_type(kernel: ir.Kernel, b: ir.Buffer):
    """The 16-bit type fragment `b` can be held in, or None."""
    dtypes = {p.name: p.dtype for p in kernel.params if p.kind == "tensor"} | {x.name: x.dtype for x in kernel.buffers}
    sources = {dtypes.get(s.src.name) for s in statements(kernel.body) if isinstance(s, ir.Copy) and s.dst.name == b.name}
    if len(sources) != 1:
        return None
    (d,) = sources
    if d is None or d not in HELD:
        return None
    terminal = _terminal_stores(kernel.body, b.name, d, dtypes)
    rounded = False
    for s in statements(kernel.body):
        if isinstance(s, ir.Reduce) and s.src == b.name and s.dst != b.name:
            continue  # a 16-bit source is summed in f32 as an f32 one is (tl/reduce.cuh, the interpreter)
        if isinstance(s, _WHOLE) and b.name in (getattr(s, f, None) for f in ("src", "dst", "a", "b", "c")):
            return None
        if isinstance(s, ir.Atomic) and s.name == b.name:
            return None
        if isinstance(s, ir.Fill) and s.buffer == b.name and not _exact(s.value, b.name, d, dtypes):
            return None
        if isinstance(s, ir.Store) and s.name == b.name and not _exact(s.value, b.name, d, dtypes):
            if id(s) not in terminal:
                return None
            rounded = True
    if rounded and any(isinstance(s, ir.Copy) and s.src.name == b.name and dtypes.get(s.dst.name) != d
                       for s in statements(kernel.body)):
        return None
    return d


def _recomputing(kernel: ir.Kernel, b: ir.Buffer):
    """(the 16-bit type, the kernel) where fragment `b` can be held in it once the one store
    that writes it a wider value is recomputed where read (recompute.py); else (None, kernel)."""
    from .recompute import recomputed

    dtypes = {p.name: p.dtype for p in kernel.params if p.kind == "tensor"} | {x.name: x.dtype for x in kernel.buffers}
    sources = {dtypes.get(s.src.name) for s in statements(kernel.body) if isinstance(s, ir.Copy) and s.dst.name == b.name}
    if len(sources) != 1 or next(iter(sources)) not in HELD:
        return None, kernel
    d = next(iter(sources))
    terminal = _terminal_stores(kernel.body, b.name, d, dtypes)
    wide = [s for s in statements(kernel.body) if isinstance(s, ir.Store) and s.name == b.name
            and not _exact(s.value, b.name, d, dtypes) and id(s) not in terminal]
    if len(wide) != 1:
        return None, kernel
    changed = recomputed(kernel, b.name, wide[0])
    if changed is None or _held_type(changed, b) is None:
        return None, kernel
    return d, changed


def _exact(e: ir.Expr, name: str, d, dtypes: dict) -> bool:
    """Whether `e`'s value is always one that type `d` holds exactly."""
    if isinstance(e, ir.Const):
        return e.dtype.is_float and _holds(d, e.value)
    if isinstance(e, ir.Load):
        return e.name == name or dtypes.get(e.name) == d
    if isinstance(e, ir.Cast):
        return e.x.dtype == d or (e.dtype.is_float and e.dtype.bits >= 16 and _exact(e.x, name, d, dtypes))
    if isinstance(e, ir.Select):
        return _exact(e.a, name, d, dtypes) and _exact(e.b, name, d, dtypes)
    if isinstance(e, ir.UnaryOp):
        return e.op == "-" and _exact(e.x, name, d, dtypes)
    if isinstance(e, ir.BinOp):
        return e.op in ("min", "max") and _exact(e.a, name, d, dtypes) and _exact(e.b, name, d, dtypes)
    return False


def _holds(d, value: float) -> bool:
    """Whether f16 (`d`) holds `value` exactly."""
    with np.errstate(over="ignore"):
        return bool(np.float32(np.float16(value)) == np.float32(value)) or bool(np.isnan(value))


def _terminal_stores(body, name: str, d, dtypes: dict) -> set:
    """ids of the stores into fragment `name` whose values are rounded to `d` anyway: in a
    parallel loop of the kernel's top level that no later statement of the loop reads `name`
    after, followed by a copy of `name` into a `d` tensor or buffer, the last use of `name`."""
    out = set()
    for body in own_bodies(body, name):
        out |= _terminal_in(body, name, d, dtypes)
    return out


def own_bodies(body, name: str):
    """`body`, and the body of each loop at its top that first copies fragment `name` whole, so
    that no value of it crosses the loop's iterations (pipeline_rows.py's walk over rows)."""
    yield body
    for s in body:
        if isinstance(s, ir.For):
            first = next((t for t in s.body if name in touched(t)), None)
            if isinstance(first, ir.Copy) and first.dst.name == name and first.src.name != name:
                yield s.body


def _terminal_in(body, name: str, d, dtypes: dict) -> set:
    out = set()
    for k, s in enumerate(body):
        if not isinstance(s, ir.Parallel):
            continue
        later = [t for t in body[k + 1:] if name in touched(t)]
        if not later or not (isinstance(later[0], ir.Copy) and later[0].src.name == name
                             and dtypes.get(later[0].dst.name) == d) or len(later) > 1:
            continue
        inner = list(statements(s.body))
        for i, t in enumerate(inner):
            if isinstance(t, ir.Store) and t.name == name and not any(name in touched(u, own=False) for u in inner[i + 1:]):
                out.add(id(t))
    return out


def touched(s, own: bool = True) -> set:
    """Names statement `s` (and what it nests, when `own`) reads or writes."""
    out = set()
    for t in (statements((s,)) if own else (s,)):
        out |= {x.name for e in statement_exprs(t) for x in loads(e)} | named_buffers(t)
    return out


# ---- the rewrite ---------------------------------------------------------------------------

def _rewrite(stmts, held: dict) -> tuple:
    def converted_store(s):
        target = getattr(s, "name", None) if isinstance(s, ir.Store) else getattr(s, "buffer", None) if isinstance(s, ir.Fill) else None
        return replace(s, value=_to(s.value, held[target][1])) if target in held else s
    return stmts_mapped(stmts, lambda e: _expr(e, held), converted_store)


def _to(e: ir.Expr, d) -> ir.Expr:
    """`e` converted to type `d`, a conversion back and forth dropped."""
    if isinstance(e, ir.Cast) and e.x.dtype == d:
        return e.x
    if isinstance(e, ir.Const):
        return ir.Const(e.value, d, span=e.span)
    return ir.Cast(e, d, span=getattr(e, "span", None))


def _expr(e: ir.Expr, held: dict) -> ir.Expr:
    def held_load(x: ir.Expr) -> ir.Expr:
        if isinstance(x, ir.Load) and x.name in held:
            wide, d = held[x.name]
            return ir.Cast(replace(x, dtype=d), wide, span=x.span)
        return x
    return mapped(e, held_load)
