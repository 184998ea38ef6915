"""Layout propagation, the core of layout inference (layout_infer.py is the pass around it):
layouts flow from the statements that fix them (a gemm's accumulator and register operand, in
the layout its instruction dictates) through reductions (a replica of the source), copies
between fragments (one layout for both) and parallel loops (the fragments a loop touches take
the layout of its anchor, the candidate needing the fewest exchanges, or a replica of it);
where nothing decides, the first reduction source or loop anchor takes vector runs of the
copies' width, and the rest follow it."""
from __future__ import annotations

import functools
from dataclasses import replace

from .. import ir, targets
from ..identity_memo import remembered_by_identity
from ..ir.walk import loads, statement_exprs, statements
from .layout import Blocked, MmaAccumulator, Replicated, blocked, mma_accumulator, register_in_loop


def assign_layouts(kernel: ir.Kernel, target: str = "sm_80", preset: dict | None = None) -> ir.Kernel:
    """Give every fragment a layout and every parallel loop the layout it runs in; a gemm
    accumulator whose layout the target's own instructions dictate (wgmma's) takes it."""
    frags = {b.name: b for b in kernel.buffers if b.scope == "fragment"}
    buffers = {b.name: b for b in kernel.buffers}
    layouts: dict[str, object] = dict(preset or {})  # fixed before (layout_infer.py's choices)
    stmts = list(statements(kernel.body))
    itemsize = _copy_itemsizes(stmts, frags, kernel)
    default = functools.partial(_default, itemsize=itemsize, columns=column_reduced(stmts, frags))
    from . import one_warpgroup, operand_layout  # (they import this module's layouts)

    feeds_a = operand_layout.register_a_group(stmts, frags)
    # a narrow product whose result reaches warpgroups side by side through shared memory: on one
    # of them (MLA decode's scores, one_warpgroup.py)
    single = one_warpgroup.single_products(stmts, buffers, kernel.threads) if targets.get(target).wgmma else set()
    for s in stmts:  # 1. gemm accumulators, and fragment A operands in the layout they are read in
        if isinstance(s, ir.Gemm) and s.c not in layouts:
            pair = operand_layout.register_a_layouts(s, buffers, kernel.threads, target)
            if pair and layouts.get(s.a, pair[0]) == pair[0]:  # (A may feed several gemms)
                layouts[s.a], layouts[s.c] = pair
                continue
            own = targets.get(target).gemm_accumulator(s, buffers, kernel.threads)  # wgmma's, on sm_90a
            if own is not None:
                layouts[s.c] = one_warpgroup.single_accumulator(frags[s.c].shape) if s.c in single else own
                continue
            acc = (operand_layout.row_warp_accumulator(frags[s.c].shape, kernel.threads) if s.c in feeds_a else None) \
                or mma_accumulator(frags[s.c].shape, kernel.threads)
            layouts[s.c] = acc or blocked(frags[s.c].shape, frags[s.c].dtype, kernel.threads, itemsize.get(s.c))
    changed = True
    while changed:  # 2. reductions replicate their source's layout; 3. loops and copies share theirs
        changed = False
        for s in stmts:
            if isinstance(s, ir.Reduce) and s.dst in frags and s.src in layouts and s.dst not in layouts:
                layouts[s.dst] = Replicated(layouts[s.src], (s.dim,))
                changed = True
            elif isinstance(s, ir.Parallel):
                changed |= _propagate_parallel(s, frags, layouts, kernel.threads, default)
            elif isinstance(s, ir.Copy) and isinstance(s.src, ir.BufferRef) and isinstance(s.dst, ir.BufferRef):
                changed |= _propagate_copy(s.src.name, s.dst.name, frags, layouts)
        if not changed:  # 3b. nothing follows from what is laid out: the first statement that needs a layout
            first = next((x for x in map(lambda s: _needs_layout(s, frags, layouts), stmts) if x), None)
            if first is not None:  # (an unlaid reduction source, a loop's unlaid anchor) takes vector runs
                default(frags, first, kernel.threads, layouts)
                changed = True
    for name in frags:  # 4. the rest: vector runs
        if name not in layouts:
            default(frags, name, kernel.threads, layouts)
    buffers = tuple(replace(b, layout=layouts[b.name]) if b.name in layouts else b for b in kernel.buffers)
    return replace(kernel, buffers=buffers)


def _needs_layout(s, frags, layouts) -> str | None:
    """The fragment statement `s` would lay out first if nothing else decides: a reduction's
    fragment source, a parallel loop's anchor (whose layout the fragments it touches take)."""
    if isinstance(s, ir.Reduce) and s.src in frags and s.src not in layouts and s.dst in frags:
        return s.src
    if isinstance(s, ir.Parallel):
        anchor = anchor_of(s, frags, layouts)
        return anchor if anchor is not None and anchor not in layouts else None
    return None


def _propagate_copy(a: str, b: str, frags, layouts) -> bool:
    """A copy between two fragments of one shape: the one not laid out yet takes the other's
    layout, so that the copy stays in each thread's registers (a dtype change included)."""
    if a not in frags or b not in frags or frags[a].shape != frags[b].shape or (a in layouts) == (b in layouts):
        return False
    src, dst = (a, b) if a in layouts else (b, a)
    layouts[dst] = layouts[src]
    return True


def _default(frags, name, threads, layouts, itemsize=None, columns=frozenset()):
    b = frags[name]
    lay = column_split if name in columns else blocked
    layouts[name] = lay(b.shape, b.dtype, threads, (itemsize or {}).get(name))
    return layouts[name]


def column_split(shape: tuple, dtype, threads: int, itemsize: int | None = None) -> Blocked:
    """The layout of a 2-D tile reduced along dim 0: of the blocked layouts with runs up to
    the copies' width (`blocked`'s), the one in which the fewest threads hold each column,
    widest runs first on a tie.  Where a row has a multiple of `threads` runs, every thread
    owns whole columns (column_sums' [32, 256] f32 at 256 threads: runs of 1, thread t holding
    column t of every row), so the reduction combines registers of one thread only; a warp
    still reads each row's runs side by side (coalesced, and vectors where the columns allow)."""
    widest = blocked(shape, dtype, threads, itemsize)
    if len(shape) != 2:
        return widest
    runs = [Blocked(tuple(shape), threads, v) for v in (widest.vec >> k for k in range(widest.vec.bit_length()))]
    return min(runs, key=lambda b: (column_holders(b), -b.vec))


def column_holders(layout: Blocked) -> int:
    """How many threads hold each column of a 2-D blocked tile (the same for every column:
    run r of row i goes to thread (i * runs_per_row + r) % threads)."""
    rows, cols = layout.shape
    per_row = -(-cols // layout.vec)
    if cols % layout.vec:
        return layout.threads
    return len({(i * per_row) % layout.threads for i in range(min(rows, layout.threads))})


def thread_local_notes(kernel: ir.Kernel) -> ir.Kernel:
    """`kernel` with a note (`--emit ir`) for each reduction along dim 0 whose source's layout
    gives every column to one thread (`column_split`'s aim): it combines registers of one
    thread, with no shuffle and no shared memory."""
    frags = {b.name: b for b in kernel.buffers if b.scope == "fragment"}
    notes = []
    for s in statements(kernel.body):
        src = frags.get(getattr(s, "src", None)) if isinstance(s, ir.Reduce) else None
        if src is None or s.dim != 0 or len(src.shape) != 2 or not isinstance(src.layout, Blocked):
            continue
        if column_holders(src.layout) == 1:
            where = f" (line {s.span.line})" if s.span is not None else ""
            notes.append(f"reduce_{s.kind} {s.src} -> {s.dst}{where} runs in each thread: {s.src} is {src.layout}, "
                         f"its columns split over the threads, so the {s.kind} along dim 0 needs no shuffle "
                         "and no shared memory")
    return replace(kernel, notes=kernel.notes + tuple(dict.fromkeys(notes))) if notes else kernel


def column_reduced(stmts, frags) -> frozenset:
    """The 2-D fragments reduced along dim 0 and never along dim 1, with every fragment a
    parallel loop indexes alongside one of them the same way (they share its layout).  A
    partial accumulated in a loop and reduced once after it (column_blocks.py's deferred
    combine) does not count: its one exchange is cheaper than narrow loads in every tile."""
    dims: dict = {}
    looped = {id(x) for s in stmts if isinstance(s, ir.For) for x in statements(s.body)}
    accumulated = {x.name for s in stmts if isinstance(s, ir.For)
                   for x in statements(s.body) if isinstance(x, ir.Store)}
    for s in stmts:
        if isinstance(s, ir.Reduce) and s.dim == 0 and id(s) not in looped and s.src in accumulated:
            continue
        if isinstance(s, ir.Reduce) and s.src in frags and len(frags[s.src].shape) == 2:
            dims.setdefault(s.src, set()).add(s.dim)
    find = _loop_groups(stmts, frags)
    wanted = {find(n) for n, d in dims.items() if d == {0}}
    refused = {find(n) for n, d in dims.items() if 1 in d}
    return frozenset(n for n in frags if find(n) in wanted - refused and len(frags[n].shape) == 2)


def _copy_itemsizes(stmts, frags, kernel) -> dict:
    """fragment -> the narrowest element size among what it, and every fragment a parallel loop
    indexes alongside it the same way (they will share one layout), are copied to or from."""
    sizes = {p.name: p.dtype.itemsize for p in kernel.params if p.kind == "tensor"}
    sizes.update({b.name: b.dtype.itemsize for b in kernel.buffers})
    own = {name: b.dtype.itemsize for name, b in frags.items()}
    for s in stmts:
        if isinstance(s, ir.Copy):
            a, b = s.src.name, s.dst.name
            for mine, other in ((a, b), (b, a)):
                if mine in own and other in sizes:
                    own[mine] = min(own[mine], sizes[other])
    find = _loop_groups(stmts, frags)
    least: dict = {}
    for name, size in own.items():
        least[find(name)] = min(least.get(find(name), size), size)
    return {name: least[find(name)] for name in frags}


def _loop_groups(stmts, frags):
    """find(fragment) -> its group's representative: fragments that a parallel loop indexes
    alike (its candidates) are in one group, as they will share one layout."""
    group = {name: name for name in frags}  # union-find

    def find(n):
        while group[n] != n:
            group[n] = group[group[n]]
            n = group[n]
        return n

    for s in stmts:
        if isinstance(s, ir.Parallel):
            cands = _candidates(s, frags)
            for other in cands[1:]:
                group[find(other)] = find(cands[0])
    return find


def _candidates(p: ir.Parallel, frags) -> list[str]:
    """The fragments indexed by all of the loop's variables, in order, that the loop touches."""
    out = []
    for name, idx in accesses(p.body):
        if name in frags and name not in out and len(idx) == len(p.vars) and all(
                isinstance(e, ir.Var) and e.name == v for e, v in zip(idx, p.vars)) \
                and frags[name].shape == tuple(p.extents):
            out.append(name)
    return out


def _rank(layout) -> int:
    """Which laid-out candidate a loop follows: a gemm accumulator, then a replicated
    fragment (the loop then runs in every replica, and needs no exchange with reduction
    results), then vector runs."""
    return 2 if isinstance(layout, MmaAccumulator) else 1 if isinstance(layout, Replicated) else 0


def anchor_of(p: ir.Parallel, frags, layouts=None) -> str | None:
    """The candidate whose layout the loop runs in: of those already laid out, the first of
    the highest rank; else the first candidate.  Candidates laid out by the loop itself get
    the anchor's layout, so the scheduler and the code generator agree on the choice."""
    cands = _candidates(p, frags)
    if layouts is None:
        layouts = {n: frags[n].layout for n in cands if frags[n].layout is not None}
    laid = [n for n in cands if n in layouts]
    if laid:
        return min(laid, key=lambda n: (_exchanges_under(p, frags, layouts, layouts[n]), -_rank(layouts[n]),
                                        laid.index(n)))
    return cands[0] if cands else None


def _exchanges_under(p: ir.Parallel, frags, layouts, loop_layout) -> int:
    """The cost of running loop `p` in `loop_layout`: how many of the fragments it touches,
    already laid out, it would have to exchange through shared memory."""
    return len({name for name, idx in accesses(p.body) if name in frags and name in layouts
                and register_in_loop(layouts[name], idx, loop_layout, p.vars, p.extents) is None})


def _propagate_parallel(p: ir.Parallel, frags, layouts, threads, default) -> bool:
    anchor = anchor_of(p, frags, layouts)
    if anchor is None:
        return False
    if anchor not in layouts:
        if not any(n in layouts for n, _ in accesses(p.body) if n in frags):
            return False
        default(frags, anchor, threads, layouts)
    base = layouts[anchor]
    changed = False
    for name, idx in accesses(p.body):
        if name not in frags or name in layouts:
            continue
        names = [e.name if isinstance(e, ir.Var) else None for e in idx]
        if names == list(p.vars):
            layouts[name] = base
        elif names == [v for v in p.vars if v in names] and len(names) < len(p.vars):
            # indexed by some of the loop's variables, in order: a replica over the others
            layouts[name] = Replicated(base, tuple(d for d, v in enumerate(p.vars) if v not in names))
        else:
            continue
        changed = True
    return changed


def accesses(stmts) -> tuple:
    """(name, indices) of every store and element load in `stmts`, nested statements' included,
    in the order the statements and their expressions come."""
    return _remembered_accesses(stmts) if type(stmts) is tuple else tuple(_accesses(stmts))


# a loop's candidates, its anchor's cost under each laid-out candidate and its propagation walk
# the same body again in every round of assign_layouts' fixed point, and the IR is immutable
# (frozen nodes, tuples): a tenth of tests/schedule
@remembered_by_identity(keep=4096)
def _remembered_accesses(stmts: tuple) -> tuple:
    return tuple(_accesses(stmts))


def _accesses(stmts):
    for s in statements(stmts):
        if isinstance(s, ir.Store):
            yield s.name, s.indices
        for e in statement_exprs(s):
            for x in loads(e):
                yield x.name, x.indices
