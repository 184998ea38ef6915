"""Exchanges through shared memory, the C: a parallel loop that indexes a fragment other than by
the loop's own layout reads (and writes) it through the scratch after the planned shared memory
(`exchange_in` before the loop, `exchange_out` after it: slower, never wrong; DESIGN.md), and a
copy between fragments of different layouts goes the same way (`exchange_copy`, between
__syncthreads).  An exchange around a loop meets at `block_barrier`, the consumers' alone in a
warp-specialized ring (warpspec/emit.py, which also puts its scratch with the reductions', after
the ring's barriers, and says where it needs no barrier)."""
from __future__ import annotations

import math

from .. import ir
from ..ir.walk import loads, statement_exprs, statements
from ..schedule.one_warpgroup import owner_threads
from .cexpr import CodegenError
from .cnames import c_name, c_type


class ExchangeGen:
    """Mixed into `Sm80`: fragments exchanged through shared memory."""

    def exchange_plan(self, p: ir.Parallel, layout) -> dict:
        """Fragments the loop indexes other than by its own layout: name -> written?  They go
        through shared memory around the loop (DESIGN.md: slower, never wrong)."""
        plan: dict = {}
        saved = (self.in_parallel, self.loop_layout, getattr(self, "loop_vars", ()), self.loop_extents)
        self.in_parallel, self.loop_layout, self.loop_vars, self.loop_extents = True, layout, p.vars, p.extents
        for s in statements(p.body):
            accesses = [(x.name, x.indices, False) for e in statement_exprs(s) for x in loads(e)]
            if isinstance(s, ir.Store):
                accesses.append((s.name, s.indices, True))
            for name, indices, write in accesses:
                b = self.buffers.get(name)
                if b is None or b.scope != "fragment":
                    continue
                try:
                    self.register(name, indices, None)
                except CodegenError:
                    plan[name] = plan.get(name, False) or write
        self.in_parallel, self.loop_layout, self.loop_vars, self.loop_extents = saved
        return plan

    def exchange_in(self, plan: dict, p: ir.Parallel) -> None:
        offset = self.exchange_base()
        self.emit(f"// exchange {', '.join(plan)} through shared memory: the loop reads them in another layout")
        if self.exchange_barrier_before():
            self.emit(f"{self.block_barrier()}  // reductions' scratch arrays may still be read")
        for name in plan:
            b = self.buffers[name]
            info = self.fragment(name)
            t = c_type(b.dtype)
            ptr = f"reinterpret_cast<{t}*>(tl_smem + {offset})"
            cols = b.shape[-1]
            columns = None if plan[name] else _columns_read(p, name)
            owners = owner_threads(b.layout, self.k.threads)
            if owners < self.k.threads:  # (held by one warpgroup: its threads write it)
                self.emit(f"if ({self.threads_below(owners)})")
            if columns is None:
                self.emit(f"tl::exchange_f2s<{info.c_layout}, {t}, {t}, {cols}>({ptr}, {c_name(name)});")
            for c in columns or ():  # only the columns the loop reads (a scan's last column: its carry)
                self.emit(f"tl::exchange_f2s_column<{info.c_layout}, {t}, {cols}>({ptr}, {c_name(name)}, {c});")
            self.exchanged[name] = ptr
            offset += -(-(math.prod(b.shape) * b.dtype.itemsize) // 128) * 128
        self.scratch_bytes = max(self.scratch_bytes, offset - self.k.smem_bytes)
        self.emit(self.block_barrier())

    def exchange_base(self) -> int:
        """Where an exchange's scratch starts: after the planned shared memory."""
        return self.k.smem_bytes

    def exchange_barrier_before(self) -> bool:
        """Whether an exchange waits before it writes its scratch: where reductions may still read
        theirs."""
        return any(isinstance(s, (ir.Reduce, ir.Scan)) for s in statements(self.k.body))

    def exchange_barrier_after(self, p: ir.Parallel | None) -> bool:
        """Whether an exchange waits after its loop `p` (the next user may write the scratch at once)."""
        return True

    def exchange_out(self, plan: dict, p: ir.Parallel | None = None) -> None:
        if not self.exchange_barrier_after(p) and not any(plan.values()):
            for name in plan:
                self.exchanged.pop(name)
            return
        self.emit(self.block_barrier())
        for name, written in plan.items():
            ptr = self.exchanged.pop(name)
            if written:
                b = self.buffers[name]
                info = self.fragment(name)
                t = c_type(b.dtype)
                self.emit(f"tl::exchange_s2f<{info.c_layout}, {t}, {t}, {b.shape[-1]}>({c_name(name)}, {ptr});")
        if any(plan.values()):
            self.emit(self.block_barrier())

    def exchange_copy(self, s: ir.Buffer, d: ir.Buffer, rows: int, cols: int) -> None:
        """copy(s, d) between fragments of different layouts (the scheduler could not give them
        one): s is written to shared memory in its layout, in its own dtype, with the widest
        vectors its runs allow, and d reads it back in its layout, converting.  The scratch is
        the space after the planned shared memory that exchanges and reductions share: a
        barrier before (a reduction's or an exchange's readers may still be there), between,
        and after (the next user may write it at once)."""
        t = c_type(s.dtype)
        ptr = f"reinterpret_cast<{t}*>(tl_smem + {self.k.smem_bytes})"
        self.emit(f"// exchange {s.name} -> {d.name} through shared memory: {s.layout} -> {d.layout}")
        self.emit("__syncthreads();")
        self.emit(f"tl::exchange_f2s<{self.fragment(s.name).c_layout}, {t}, {t}, {cols}>({ptr}, {c_name(s.name)});")
        self.emit("__syncthreads();")
        self.emit(f"tl::exchange_s2f<{self.fragment(d.name).c_layout}, {t}, {c_type(d.dtype)}, {cols}>({c_name(d.name)}, {ptr});")
        self.emit("__syncthreads();")
        size = -(-(rows * cols * s.dtype.itemsize) // 128) * 128
        self.scratch_bytes = max(self.scratch_bytes, size)


def _columns_read(p: ir.Parallel, name: str) -> tuple | None:
    """The columns of fragment `name` that loop `p` reads, when every read names its column by a
    constant (`run[i, BN - 1]`, folded to one at lowering); None when any read's column varies."""
    columns = set()
    for s in statements(p.body):
        for x in (x for e in statement_exprs(s) for x in loads(e) if x.name == name):
            c = x.indices[-1] if x.indices else None
            if not (isinstance(c, ir.Const) and isinstance(c.value, int) and not isinstance(c.value, bool)):
                return None
            columns.add(c.value)
    return tuple(sorted(columns))
