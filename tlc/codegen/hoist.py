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
"""
from __future__ import annotations

from dataclasses import dataclass

from .. import ir
from ..ir.walk import loads, statement_exprs, statements, subexprs, variables, written_names
from ..schedule.layout import MmaAccumulator


MAX_COLUMN_SLOTS = 8  # registers a per-column hoist may hold (a wide tile's columns would cost dozens)


@dataclass(frozen=True)
class HoistPlan:
    invariant: tuple  # loads that read no loop variable
    per_row: tuple  # loads that read the row variable and no other loop variable
    per_column: tuple = ()  # loads that read only the column variable, where a thread holds few columns


def hoist_plan(p: ir.Parallel, layout, params) -> HoistPlan:
    """The loads of tensor parameters in `p`'s body that can be read before it: read-only in
    the loop, indexed by names fixed across the loop (and, per row, its first variable)."""
    inner = _names_set_inside(p.body)
    written = written_names(p.body)
    row_slots = len(p.vars) == 2 and isinstance(layout, MmaAccumulator)
    column_slots = row_slots and layout.shape[1] // layout.warps_n // 8 * 2 <= MAX_COLUMN_SLOTS
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


def _names_set_inside(stmts) -> set[str]:
    out: set[str] = set()
    for s in statements(stmts):
        if isinstance(s, (ir.LetScalar, ir.Assign)):
            out.add(s.name)
        elif isinstance(s, ir.For):
            out.add(s.var)
        elif isinstance(s, ir.Parallel):
            out.update(s.vars)
    return out
