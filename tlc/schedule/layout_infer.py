"""Layout inference: the pass that gives every fragment its layout and every parallel loop the
layout it runs in (DESIGN.md, "The hard part: fragment layouts").

Layouts flow from the statements that fix them (gemm accumulators and operands, copies with
their vector width, reductions) through parallel loops to the fragments they touch
(`layout_flow.assign_layouts`); a loop runs in the layout of the fragment that needs the fewest
exchanges through shared memory.  Around that, this pass:

- lifts a loop written over a fragment's non-unit dimensions (`for j in parallel(BN)` over
  `row[0, j]` of a fragment [1, BN]) to the fragment's whole shape, so that it runs in the
  fragment's own layout instead of one of its own (`lift_unit_loops`);
- holds whole in every thread a one-element fragment that no gemm or reduction fixes, and a
  small one-dimensional one used as a scalar outside parallel loops (fragment_scalars.py), so
  that it reads and writes as a scalar anywhere in the block;
- records on each parallel loop its layout and the fragments it must exchange (the IR printer
  shows them, the code generators follow them);
- checks the fragment elements read and written outside parallel loops: every thread must hold
  the element in the same register (a reduction's result, a fragment held whole), else E059,
  E260 or E261 says which layout the fragment has and what to write instead.
"""
from __future__ import annotations

from dataclasses import fields, is_dataclass, replace

from .. import ir
from ..dtypes import I32
from ..ir.walk import loads, statement_exprs, statements
from . import fragment_scalars
from .layout import parallel_layout, register_in_loop
from .layout_flow import accesses, assign_layouts, thread_local_notes


def infer_layouts(kernel: ir.Kernel, target: str = "sm_80", sources: dict | None = None, adjust=None) -> ir.Kernel:
    """The kernel with a layout on every fragment and every parallel loop; `adjust` (kernel ->
    kernel) may change the fragments' layouts before the loops are annotated (tile ops use it)."""
    kernel = lift_unit_loops(kernel)
    laid = assign_layouts(kernel, target)
    whole = fragment_scalars.replicas(laid)
    kernel = replace(assign_layouts(kernel, target, whole), notes=laid.notes + fragment_scalars.notes(laid, whole)) \
        if whole else laid
    if adjust is not None:
        kernel = adjust(kernel)
    kernel = thread_local_notes(annotate_loops(kernel))
    fragment_scalars.check_scalar_uses(kernel, sources)
    return kernel


# ---- loops over a fragment's non-unit dimensions ---------------------------------------------

def lift_unit_loops(kernel: ir.Kernel) -> ir.Kernel:
    """Each parallel loop that indexes a fragment by its variables and zeros at the fragment's
    size-1 dimensions (`row[0, j]`, row [1, BN], in `parallel(BN)`) runs over the fragment's
    whole shape instead (`parallel(1, BN)`, a new variable for each size-1 dimension, always
    0), and its zero indices of size-1 dimensions become those variables where they line up
    (`mx[0]` -> `mx[u]`).  Nothing reads differently: the new variables are 0.  The loop then
    runs in the fragment's layout, and reductions over it are read in their own slots."""
    frags = {b.name: b for b in kernel.buffers if b.scope == "fragment"}
    taken = taken_names(kernel)
    body = _map_stmts(kernel.body, lambda p: _lift(p, frags, taken))
    return replace(kernel, body=body)


def _lift(p: ir.Parallel, frags: dict, taken: set) -> ir.Parallel:
    pattern = None
    for name, idx in accesses(p.body):
        if name in frags and len(idx) > len(p.vars) and _unit_pattern(frags[name].shape, idx, p) is not None:
            pattern = _unit_pattern(frags[name].shape, idx, p)
            break
    if pattern is None:
        return p
    new_vars, extents, it = [], [], iter(zip(p.vars, p.extents))
    for unit in pattern:
        if unit:
            name = _fresh("u", taken)
            new_vars.append(name)
            extents.append(1)
        else:
            v, n = next(it)
            new_vars.append(v)
            extents.append(n)
    units = [d for d, unit in enumerate(pattern) if unit]

    def index(e):
        if isinstance(e, ir.Load) and e.name in frags:
            return replace(e, indices=_aligned(e.indices, frags[e.name].shape, new_vars, units))
        return e

    def stmt(s):
        if isinstance(s, ir.Store) and s.name in frags:
            return replace(s, indices=_aligned(s.indices, frags[s.name].shape, new_vars, units))
        return s

    body = _map_body(p.body, index, stmt)
    return replace(p, vars=tuple(new_vars), extents=tuple(extents), body=body)


def _unit_pattern(shape, idx, p: ir.Parallel):
    """For each dimension of the fragment, whether it is a size-1 one indexed by 0, when the
    others are the loop's variables in order over extents equal to the loop's; else None."""
    pattern, rest = [], []
    for e, d in zip(idx, shape):
        if isinstance(e, ir.Const) and e.value == 0 and d == 1:
            pattern.append(True)
        elif isinstance(e, ir.Var):
            pattern.append(False)
            rest.append((e.name, d))
        else:
            return None
    if rest != list(zip(p.vars, p.extents)) or not any(pattern):
        return None
    return pattern


def _aligned(indices, shape, loop_vars, units) -> tuple:
    """`indices` with each 0 at a size-1 dimension replaced by the lifted loop's size-1
    variable it lines up with (in order, between the variables around it); unchanged where
    nothing lines up."""
    out, last = list(indices), -1
    for k, e in enumerate(indices):
        if isinstance(e, ir.Var):
            if e.name not in loop_vars or loop_vars.index(e.name) <= last:
                return tuple(indices)
            last = loop_vars.index(e.name)
        elif isinstance(e, ir.Const) and e.value == 0 and shape[k] == 1:
            nxt = next((loop_vars.index(x.name) for x in indices[k + 1:] if isinstance(x, ir.Var)
                        and x.name in loop_vars), len(loop_vars))
            free = [d for d in units if last < d < nxt]
            if not free:
                return tuple(indices)
            last = free[0]
            out[k] = ir.Var(loop_vars[last], I32, span=e.span)  # a loop variable, as lowered
        else:
            return tuple(indices)
    return tuple(out)


# ---- loops: their layout and exchanges -------------------------------------------------------

def annotate_loops(kernel: ir.Kernel) -> ir.Kernel:
    """Every parallel loop with the layout it runs in and the fragments it must exchange
    through shared memory (those it indexes in another thread's registers)."""
    frags = {b.name: b for b in kernel.buffers if b.scope == "fragment"}

    def annotate(p: ir.Parallel) -> ir.Parallel:
        p = replace(p, layout=None, exchange=())
        layout = parallel_layout(p, kernel)
        plan: dict[str, bool] = {}
        for s in statements(p.body):
            accesses = [(x.name, x.indices, False) for e in statement_exprs(s) for x in loads(e)]
            if isinstance(s, ir.Store):
                accesses.append((s.name, s.indices, True))
            for name, idx, write in accesses:
                if name in frags and register_in_loop(frags[name].layout, idx, layout, p.vars, p.extents,
                                                      write) is None:
                    plan[name] = plan.get(name, False) or write
        return replace(p, layout=layout, exchange=tuple(plan.items()))

    return replace(kernel, body=_map_stmts(kernel.body, annotate))


# ---- walking and rebuilding ------------------------------------------------------------------

def _map_stmts(stmts, on_parallel) -> tuple:
    """`stmts` with every parallel loop (at any depth) replaced by on_parallel(loop)."""
    out = []
    for s in stmts:
        if isinstance(s, ir.Parallel):
            out.append(on_parallel(s))
            continue
        changes = {f: _map_stmts(getattr(s, f), on_parallel) for f in ("body", "then", "orelse")
                   if isinstance(getattr(s, f, None), tuple)}
        out.append(replace(s, **changes) if changes else s)
    return tuple(out)


def _map_body(stmts, on_expr, on_stmt) -> tuple:
    """`stmts` rebuilt bottom-up: every expression through on_expr, every statement through
    on_stmt."""
    return tuple(on_stmt(_rebuild(s, on_expr, lambda b: _map_body(b, on_expr, on_stmt))) for s in stmts)


def _rebuild(node, on_expr, on_body):
    changes = {}
    for f in fields(node):
        v = getattr(node, f.name)
        if f.name in ("body", "then", "orelse") and isinstance(v, tuple):
            changes[f.name] = on_body(v)
        elif isinstance(v, ir.Expr):
            changes[f.name] = _map_expr(v, on_expr)
        elif isinstance(v, tuple) and v and all(isinstance(x, ir.Expr) for x in v):
            changes[f.name] = tuple(_map_expr(x, on_expr) for x in v)
        elif isinstance(v, ir.Region):
            changes[f.name] = replace(v, offsets=tuple(_map_expr(x, on_expr) for x in v.offsets))
    return replace(node, **changes) if changes else node


def _map_expr(e, on_expr):
    if not is_dataclass(e):
        return e
    return on_expr(_rebuild(e, on_expr, lambda b: b))


def taken_names(kernel: ir.Kernel) -> set:
    """Every name the kernel uses (params, buffers, block and loop variables, constants, names
    read): a pass that adds a buffer or variable picks a name outside it."""
    names = {p.name for p in kernel.params} | {b.name for b in kernel.buffers} | set(kernel.block_vars)
    names |= {n for n, _ in kernel.constants}
    for s in statements(kernel.body):
        names |= set(getattr(s, "vars", ()) or ())
        for f in ("var", "name"):
            if isinstance(getattr(s, f, None), str):
                names.add(getattr(s, f))
        for e in statement_exprs(s):
            names |= {x.name for x in _subvars(e)}
    return names


def _subvars(e):
    from ..ir.walk import variables
    return variables(e)


def _fresh(stem: str, taken: set) -> str:
    n = 0
    while f"{stem}{n}" in taken:
        n += 1
    taken.add(f"{stem}{n}")
    return f"{stem}{n}"


__all__ = ["infer_layouts", "lift_unit_loops", "annotate_loops"]
