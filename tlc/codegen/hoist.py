"""Loads a parallel loop reads once per row instead of once per register.

A parallel loop over a fragment runs as an unrolled loop over the thread's registers; a load
of a tensor parameter in its body is emitted once per register.  When its indices read only
the loop's row variable (a scale per row of A) or no loop variable at all (one per tile), the
thread's registers share few distinct values: a wgmma accumulator row of 128 columns holds
64 registers of 2 rows.  Each load is bounds-checked (predicated), which keeps nvcc from
merging the copies; std.gemm's block-scaled fp8 kernel issued 64 loads a thread per K block
for 2 values and ran at a fifth of the speed it has without them.  These loads are read
before the loop instead: once, or once per row slot of the layout (`tl::Slots<L, 0>`), or,
where a thread holds few columns (a decode kernel's 16-column accumulator), per column slot.
Per row slot over a blocked layout too, where its rows are whole rounds of runs (or a round is
whole rows): std.elementwise's add_col read b[M, 1] as 16 bounds-checked 2-byte loads a thread
for the 2 rows it holds.
"""
from __future__ import annotations

from .. import ir
from ..frozen import frozen
from ..ir.walk import divides_at_run_time, loads, statement_exprs, statements, subexprs, variables, written_names
from ..schedule.layout import Blocked, MmaAccumulator, Replicated, parallel_layout
from .cnames import c_name, c_type


MAX_COLUMN_SLOTS = 8  # registers a per-column hoist may hold (a wide tile's columns would cost dozens)


@frozen
class HoistPlan:
    invariant: tuple  # loads that read no loop variable
    per_row: tuple  # loads that read the row variable and no other loop variable
    per_column: tuple = ()  # loads that read only the column variable, where a thread holds few columns


def hoist_plan(p: ir.Parallel, layout, params) -> HoistPlan:
    """The loads of tensor parameters in `p`'s body that can be read before it: read-only in
    the loop, indexed by names fixed across the loop (and, per row, its first variable)."""
    inner = names_set_inside(p.body)
    written = written_names(p.body)
    row_slots = len(p.vars) == 2 and (isinstance(layout, MmaAccumulator) or (
        isinstance(layout, Blocked) and Replicated(layout, (1,)).registers < layout.registers))
    column_slots = row_slots and isinstance(layout, MmaAccumulator) and \
        Replicated(layout, (0,)).registers <= MAX_COLUMN_SLOTS  # one per column held
    invariant, per_row, per_column = [], [], []
    for s in statements(p.body):
        for e in statement_exprs(s):
            for x in loads(e):
                if x.name not in params or x.name in written or x in (*invariant, *per_row, *per_column):
                    continue
                if any(isinstance(y, ir.Load) for i in x.indices for y in subexprs(i)):
                    continue  # an index that itself loads: left alone
                names = {v.name for i in x.indices for v in variables(i)}
                if names & inner:
                    continue
                if not names & set(p.vars):
                    invariant.append(x)
                elif row_slots and p.vars[0] in names and p.vars[1] not in names:
                    per_row.append(x)
                elif column_slots and p.vars[1] in names and p.vars[0] not in names:
                    per_column.append(x)
    return HoistPlan(tuple(invariant), tuple(per_row), tuple(per_column))


def row_lets(p: ir.Parallel, layout) -> tuple[list, list]:
    """The scalars of a parallel loop over an mma accumulator that read its row variable and
    nothing else of the loop, and divide by a run-time value (an output pixel's (n, oh, ow) from
    its row of an implicit GEMM's [N * OH * OW, F] view): (those, every row scalar they read,
    in order).  Each is set once, by a `let` at the top of the body, without loads.  A thread's
    64 registers of a wgmma accumulator row block hold 2 rows: computed once per row slot,
    not once per register (std.conv's epilogue: two unsigned divisions by OW and OH an element,
    ~4400 SASS instructions a tile, before)."""
    if len(p.vars) != 2 or not isinstance(layout, MmaAccumulator):
        return [], []
    row, col = p.vars
    inner = names_set_inside(p.body)
    sets: dict = {}
    for x in statements(p.body):
        if isinstance(x, (ir.LetScalar, ir.Assign)):
            sets[x.name] = sets.get(x.name, 0) + 1
    rowwise: dict = {}
    for x in p.body:
        if not isinstance(x, ir.LetScalar) or sets[x.name] != 1 or any(True for _ in loads(x.value)):
            continue
        names = {v.name for v in variables(x.value)}
        if col not in names and all(n == row or n not in inner or n in rowwise for n in names) and \
                (row in names or names & set(rowwise)):
            rowwise[x.name] = x
    costly = [x for x in rowwise.values() if divides_at_run_time(x.value)]
    needed, todo = set(), [x.name for x in costly]
    while todo:
        n = todo.pop()
        if n not in needed:
            needed.add(n)
            todo += [v.name for v in variables(rowwise[n].value) if v.name in rowwise]
    return costly, [x for x in rowwise.values() if x.name in needed]


def names_set_inside(stmts) -> set[str]:
    out: set[str] = set()
    for s in statements(stmts):
        if isinstance(s, (ir.LetScalar, ir.Assign)):
            out.add(s.name)
        elif isinstance(s, ir.For):
            out.add(s.var)
        elif isinstance(s, ir.Parallel):
            out.update(s.vars)
    return out


class HoistGen:
    """The C of hoisted loads (mixed into the generators): `block` reads a block's movable ones
    at its start, `parallel_loop` the rest before the loop; `self.hoisted` maps each load to
    the C the loop's body reads instead."""

    def hoist_early(self, stmts) -> list:
        """The hoistable loads of this block's parallel loops that can be read at the block's
        start (nothing before the loop in the block defines their indices or writes their
        tensor): issued there, before a gemm that precedes the loop, their latency hides under
        the gemm instead of following it.  Only where the gemm runs asynchronously
        (`overlaps_loads`): on mma.sync the values would only hold registers longer."""
        out = []
        if not self.overlaps_loads(stmts):
            return out
        for idx, p in enumerate(stmts):
            if not isinstance(p, ir.Parallel):
                continue
            before = stmts[:idx]
            defined = {x.name for x in statements(before) if isinstance(x, (ir.LetScalar, ir.Assign))}
            written = written_names(before)
            layout = parallel_layout(p, self.k)
            for v, n in zip(p.vars, p.extents):
                self.ranges[v] = (0, n - 1)
            out += self.hoist_loads(p, layout, self.c_layout(layout), lambda x: x.name not in written and not any(
                v.name in defined for i in x.indices for v in variables(i)))
            for v in p.vars:
                self.unbind_range(v)
        return out

    def overlaps_loads(self, stmts) -> bool:
        """Whether `stmts` hold an asynchronous gemm that loads issued before it run under."""
        return False

    def hoist_loads(self, p: ir.Parallel, layout, alias: str, movable=lambda x: True) -> list:
        """Reads the loop's loads that need no column (hoist.py says which and why), those not
        read already and `movable`, here: `self.hoisted` maps each to the C that the loop's
        body uses instead."""
        plan = hoist_plan(p, layout, self.params)
        plan = HoistPlan(*(tuple(x for x in xs if x not in self.hoisted and movable(x))
                           for xs in (plan.invariant, plan.per_row, plan.per_column)))
        for x in plan.invariant:
            name = f"tl_hoist{self.hoist_names}"
            self.hoist_names += 1
            self.emit(f"const {c_type(x.dtype)} {name} = {self.load(x)};  // the same for every register")
            self.hoisted[x] = name
        for dim, xs in ((0, plan.per_row), (1, plan.per_column)):
            if not xs:
                continue
            slots = f"tl::Slots<{alias}, {dim}>"
            names = [f"tl_hoist{self.hoist_names + n}" for n in range(len(xs))]
            self.hoist_names += len(names)
            for x, name in zip(xs, names):
                self.emit(f"{c_type(x.dtype)} {name}[{slots}::COUNT];")
            self.emit("#pragma unroll")
            self.emit(f"for (int tl_s = 0; tl_s < {slots}::COUNT; ++tl_s) {{  // once per {('row', 'column')[dim]} "
                      "this thread holds")
            self.emit(f"  const int {c_name(p.vars[dim])} = {alias}::{('row', 'col')[dim]}(threadIdx.x, "
                      f"{slots}::rep(tl_s));")
            for x, name in zip(xs, names):
                self.emit(f"  {name}[tl_s] = {self.load(x)};")
            self.emit("}")
            for x, name in zip(xs, names):
                self.hoisted[x] = f"{name}[{slots}::slot(tl_r)]"
        return [*plan.invariant, *plan.per_row, *plan.per_column]

    def hoist_row_lets(self, p: ir.Parallel, layout, alias: str) -> list:
        """The loop's row scalars that divide at run time (row_lets), computed before it once
        per row slot this thread holds: `self.row_hoisted` maps each to the C its `let` reads
        instead.  Returns their names (for the caller to drop after the loop)."""
        costly, needed = row_lets(p, layout)
        if not costly:
            return []
        slots = f"tl::Slots<{alias}, 0>"
        names = {x.name: f"tl_hoist{self.hoist_names + n}" for n, x in enumerate(costly)}
        self.hoist_names += len(names)
        for x in costly:
            self.emit(f"{c_type(x.dtype)} {names[x.name]}[{slots}::COUNT];")
        self.emit("#pragma unroll")
        self.emit(f"for (int tl_s = 0; tl_s < {slots}::COUNT; ++tl_s) {{  // once per row this thread holds")
        self.indent += 1
        self.emit(f"const int {c_name(p.vars[0])} = {alias}::row(threadIdx.x, {slots}::rep(tl_s));")
        for x in needed:
            self.emit(f"const {c_type(x.dtype)} {c_name(x.name)} = {self._in(x.value, x.dtype)};")
        for x in costly:
            self.emit(f"{names[x.name]}[tl_s] = {c_name(x.name)};")
        self.indent -= 1
        self.emit("}")
        for x in costly:
            self.row_hoisted[x.name] = f"{names[x.name]}[{slots}::slot(tl_r)]"
        return list(names)
