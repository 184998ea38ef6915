"""The sm_90a target (Hopper): the sm_80 generator with gemm on warpgroup tensor cores.

A gemm whose accumulator the scheduler laid out for wgmma (`schedule.layout.wgmma_gemm`)
becomes `tl::gemm_wgmma` over shared-memory descriptors; every other statement, and a gemm
that does not fit, is the sm_80 code, which Hopper runs too.  Shared memory that cp.async or
plain stores fill and wgmma reads next is fenced to the async proxy by its writers.
"""
from __future__ import annotations

from .. import ir, primitives
from ..ir.walk import statements
from ..schedule.layout import wgmma_bands, wgmma_column_groups
from ..schedule.one_warpgroup import owner_threads
from ..schedule.scale_d_clears import FIRST_ITERATION, READS
from ..schedule.tensor_cores import tensor_core_op
from ..schedule.gemm_overlap import gemm_waits, ring_carried_gemms, wgmma_ready, wgmma_rs_ready
from .cexpr import CodegenError
from .cnames import c_bool, c_name, c_type
from .sm80 import Sm80
from .warpspec import WarpSpecialized

# A consumer body that starts with the last iteration's products in flight (the ring's carried
# gemms: schedule/gemm_overlap.py carried_gemms) waits for them right after issuing its first
# products, and releases their stage there, rather than where a statement first needs a product
# (whose wait, the groups completing in order, completes them too): the producer refills that
# stage about one product sooner (mla_decode on two 72 KB stages, where a page has less than a
# page's work to arrive in once P @ V is carried).  Off: not yet timed on the GPU.
EARLY_CARRIED_RELEASE = False


class Sm90(WarpSpecialized, Sm80):
    arch = "sm_90a"
    primitive_files = primitives.SM90

    def __init__(self, kernel: ir.Kernel, sources=None, line_directives: bool = True, target=None):
        super().__init__(kernel, sources, line_directives, target)
        self.wgmma_types: dict = {}  # (n, A's dtype name, B's, n_major_b, precision) -> struct name
        self.wgmma_operands = {x for g in statements(kernel.body) if isinstance(g, ir.Gemm) and self.uses_wgmma(g)
                               for x in (g.a, g.b)} | {g.b for g in statements(kernel.body)
                                                        if isinstance(g, ir.Gemm) and self.uses_wgmma_rs(g)}
        self.in_flight_gemm: ir.Gemm | None = None  # the gemm a pipelined loop keeps in flight
        self.chained = self.chained_gemms(kernel.body)  # ids of gemms issued without a wait
        self.find_warp_specialized_loop()
        # the ring's last gemms that stay in flight into the next iteration (schedule/warpspec.py
        # decided it: a stage released one iteration late, no deferred gemm, not one gemm alone)
        self.carried = ring_carried_gemms(kernel)
        # the clear before the ring of a carried gemm's accumulator that its first iteration's
        # scale-d 0 makes (schedule/scale_d_clears.py FIRST_ITERATION); zeros after a ring that
        # ran no iteration
        self.folded_clears = tuple(s for s in kernel.body if isinstance(s, ir.Fill) and s.scale_d == FIRST_ITERATION) \
            if self.carried else ()

    def generate(self) -> dict:
        out = super().generate()
        out["threads"] = self.launch_threads
        if self.ws_loop is not None:
            # (a ring of row gathers alone has no map, and then no flags: the launchers pass them with
            # maps; kernel.cu.j2 reads tl_tma from the flags, or from TL_TMA_FLAGS where a build defines it)
            out["extra_params"] = [f"const __grid_constant__ tl::TensorMap tl_map{i}"
                                   for i in range(len(self.tensor_maps))] + (["int tl_tma_flags"] if self.tensor_maps else [])
            out["tensor_maps"] = tuple(self.tensor_maps)
            out["persistent"] = self.persistent
            out["cluster"] = self.cluster
            out["min_blocks"] = 1  # one block per SM: consumer_registers gives this block all its registers
            blocks = self.k.warp_spec.blocks_per_sm
            if blocks > 1:  # (a dequantizing ring: as many blocks as the SMs hold, each its launch bounds' share)
                out["min_blocks"] = blocks
                out["persistent"] = "fill" if self.persistent else False
        return out

    def uses_wgmma(self, g: ir.Gemm) -> bool:
        return wgmma_ready(g, self.buffers, self.k.threads)

    def uses_wgmma_rs(self, g: ir.Gemm) -> bool:
        return wgmma_rs_ready(g, self.buffers, self.k.threads)

    def chained_gemms(self, body) -> set[int]:
        """The wgmma gemms followed by another that does not need their result: into the same
        accumulator (MLA's scores: the latent columns' product, then the rotary columns'), or
        into another that neither reads this one's accumulator nor writes its operands
        (attention's backward: the scores and dO . V^T, then dV's and dK's products).  Each is
        issued without waiting, the next one's wait covering both, so the tensor cores run them
        back to back rather than draining between them.  (Found once here: an override of
        `block` would add a frame to every nesting.)"""
        out = set()
        for stmts in [body, *(getattr(s, f, ()) for s in statements(body) for f in ("body", "then", "orelse"))]:
            for i, a in enumerate(stmts):
                if not isinstance(a, ir.Gemm):
                    continue
                # the next gemm, past the clears of accumulators that `a` does not use (a
                # clear_accum gemm's Fill)
                j = i + 1
                while j < len(stmts) and isinstance(stmts[j], ir.Fill) and stmts[j].buffer not in (a.a, a.b, a.c):
                    j += 1
                if j < len(stmts) and isinstance(stmts[j], ir.Gemm) and self.chainable(a, stmts[j]):
                    out.add(id(a))
        return out

    def chainable(self, a: ir.Gemm, b: ir.Gemm) -> bool:
        """Whether wgmma gemm `b` may be issued while `a` (the statement before it) is in flight."""
        if not (self.uses_wgmma(a) or self.uses_wgmma_rs(a)) or not (self.uses_wgmma(b) or self.uses_wgmma_rs(b)):
            return False
        if a.c == b.c:
            return self.uses_wgmma(a)  # one accumulator: K steps of one product (MLA)
        return a.c not in (b.a, b.b) and b.c not in (a.a, a.b)

    def consumer_block(self, stmts) -> bool:
        """A warp-specialized loop's consumer body (with no gemm deferred or kept in flight)
        issues each wgmma gemm without waiting and waits where a later statement needs it: for
        the oldest gemms only, as many groups as came after them staying in flight
        (FlashAttention 3's backward: the scores, then dO . V^T issued; the probabilities made
        under dO . V^T; dV's product issued and running while dS is made).  Where the schedule
        carries the body's last gemms into the next iteration (`carried`: dK's and dV's), the
        body starts with them in flight, releases the last iteration's stage after the wait
        that completes them, and ends without waiting.  A fill that schedule/scale_d_clears.py
        marked (`Fill.scale_d`) is the next gemm's first K step (CLEAR 1 or 2).  Every other
        block waits at each gemm."""
        if not (self.in_flight_gemm is None and getattr(self, "lazy", None) is None and self.spec is not None
                and self.spec.deferred is None):
            return False
        # wgmma gemms issued and not yet waited for, oldest first: at the start, the last
        # iteration's carried ones (`carried`), whose stage is released once they are done
        self.lazy = pending = list(self.carried)
        carried = len(self.carried)  # of those, still in flight
        runs = self.runs(stmts)
        try:
            early = self.hoist_early(stmts)
            clear = False
            for run in runs:
                s = run[0]
                if isinstance(s, ir.Fill) and s.scale_d:  # the next gemm's first K step clears it (scale_d_clears.py)
                    clear = True if s.scale_d == READS else 2
                    continue
                lazy = len(run) == 1 and isinstance(s, ir.Gemm) and (self.uses_wgmma(s) or self.uses_wgmma_rs(s))
                if EARLY_CARRIED_RELEASE and carried and not lazy and len(pending) > carried:
                    # (the iteration's first products issued)
                    self.wait_for(pending, carried, "  // (carried: their stage is released next)")
                    carried = 0
                    self.release_carried()
                before = len(pending)
                self.settle(pending, run, issuing=s if lazy else None)
                done = min(carried, before - len(pending))
                carried -= done
                if done and not carried:
                    self.release_carried()
                if lazy:
                    self.mark(s)
                    self.current = s
                    self.fence_gemm_registers(s)
                    keep = None
                    if self.folded_clears and s is self.carried[0]:
                        clear, keep = True, "tl_k > 0"  # the ring's first iteration clears it
                    owners = owner_threads(self.buffers[s.c].layout, self.k.threads)  # (one warpgroup's product)
                    self.emit(("" if owners == self.k.threads else f"if ({self.threads_below(owners)}) ") +
                              (self.wgmma_rs_call(s, "gemm_wgmma_rs_issue", clear, keep) if self.uses_wgmma_rs(s) else
                               self.wgmma_call(s, "gemm_wgmma_issue", None, clear, keep)) + ";")
                    self.turns_after_issue(s)  # turns.py
                    pending.append(s)
                    clear = False
                elif len(run) >= 2:
                    self.copy_batch(run)  # copies.py
                else:
                    self.stmt(s)
            self.wait_for(pending, len(pending) - len(self.carried))
            for x in early:
                self.hoisted.pop(x, None)
        finally:
            self.lazy = None
        return True

    def release_carried(self) -> None:
        """Release the stage the last iteration's carried gemms read (they are done)."""
        S = self.ws.pipeline.stages
        self.emit("// the last iteration's carried gemms are done: release their stage")
        self.emit(f"if (tl_k > 0 && threadIdx.x % 32 == 0) {self.release(f'tl_empty + (tl_it + {S - 1}) % {S}')}")

    def stmt_Fill(self, s: ir.Fill) -> None:
        if any(s is x for x in getattr(self, "folded_clears", ())):
            self.emit(f"// {c_name(s.buffer)} cleared by its gemm's first iteration in the ring (scale-d 0)")
            return
        if s.scale_d:  # (scale_d_clears.py marks only what consumer_block issues)
            raise CodegenError(f"the clear of '{s.buffer}' was scheduled as its gemm's scale-d 0, outside a ring's "
                               "consumer body, where no gemm issue takes it", s.span)
        super().stmt_Fill(s)

    def settle(self, pending: list, stmts, issuing: ir.Gemm | None) -> None:
        """Waits for the pending gemms that `stmts` (or the gemm `issuing`, issued next) need:
        whose accumulator they read or write, whose operands they write; a statement holding a
        gemm or anything this cannot see into waits for all."""
        if pending:
            self.wait_for(pending, gemm_waits(pending, stmts, issuing, self.buffers, self.k.threads))

    def wait_for(self, pending: list, count: int, note: str = "") -> None:
        """Waits for the oldest `count` of the `pending` gemms, the rest staying in flight.  A
        thread counts only the groups it issued: a product on one warpgroup's threads
        (schedule/one_warpgroup.py) is none of the others', so where the gemms left in flight
        include one, each class of threads waits with its own count (mla_decode's warpgroup 0
        with its two score groups left, warpgroup 1 with none)."""
        if count == 0:
            return
        newer = pending[count:]
        owners = [owner_threads(self.buffers[g.c].layout, self.k.threads) for g in newer]
        bounds = sorted(set(owners) | {self.k.threads})
        # the threads below bounds[0] issued every gemm left; from bounds[i - 1] on, those of more owners
        waits = [(b, sum(o > (bounds[i - 1] if i else -1) for o in owners)) for i, b in enumerate(bounds)]
        if len({w for _, w in waits}) == 1:
            self.emit(f"tl::wgmma_wait<{waits[0][1]}>();{note}")
        else:
            for i, (b, w) in enumerate(waits):
                cond = f"if ({self.threads_below(b)}) " if b < self.k.threads else ""
                self.emit(f"{'else ' if i else ''}{cond}tl::wgmma_wait<{w}>();{note}")
        for g in pending[:count]:
            self.fence_gemm_registers(g)
        del pending[:count]

    def overlaps_loads(self, stmts) -> bool:
        return any(isinstance(s, ir.Gemm) and self.uses_wgmma(s) for s in stmts)

    def pipeline(self, loop: ir.For) -> bool:
        """A pipelined loop that only feeds one wgmma gemm keeps that gemm's wgmma in flight
        while the next copies are issued: compute first, then a barrier, then the prefetch."""
        if loop is self.ws_loop:
            self.emit_warp_specialized(loop)
            return True
        plan = self.pipeline_plan(loop)
        if plan is None:
            return False
        gemm = plan.rest[0] if len(plan.rest) == 1 and isinstance(plan.rest[0], ir.Gemm) else None
        overlap = gemm is not None and self.uses_wgmma(gemm)
        self.in_flight_gemm = gemm if overlap else None
        self.emit_pipeline(plan, overlap=overlap)
        self.in_flight_gemm = None
        return True

    def drain(self) -> None:
        """Wait for the gemm left in flight and tie its accumulator's registers to this point."""
        c = self.buffers[self.in_flight_gemm.c]
        self.emit("tl::wgmma_wait<0>();")
        self.emit(f"tl::fence_registers<{c.layout.registers}>({c_name(c.name)});")

    def stmt_Gemm(self, g: ir.Gemm) -> None:
        rs = self.uses_wgmma_rs(g)
        if not rs and not self.uses_wgmma(g):
            super().stmt_Gemm(g)
            return
        if g is getattr(self, "issue_only", None) or (id(g) in self.chained and g is not self.in_flight_gemm):
            # a deferred gemm's iteration, or one the next gemm's wait covers
            self.fence_gemm_registers(g)
            self.emit((self.wgmma_rs_call(g, "gemm_wgmma_rs_issue") if rs else
                       self.wgmma_call(g, "gemm_wgmma_issue", None)) + ";")
            return
        if rs:
            self.emit(self.wgmma_rs_call(g, "gemm_wgmma_rs") + ";")
            return
        # In an overlapped pipeline one group stays in flight; elsewhere the gemm completes here.
        pending = 1 if g is self.in_flight_gemm else 0
        self.emit(self.wgmma_call(g, "gemm_wgmma", pending) + ";")

    def fence_gemm_registers(self, g: ir.Gemm) -> None:
        """Ties the registers an asynchronous gemm reads and writes (its accumulator, a fragment
        A) to this point, so that the compiler neither moves their writes across it nor reuses
        them while the gemm is in flight."""
        for name in (g.c, g.a):
            b = self.buffers[name]
            if b.scope == "fragment":
                self.emit(f"tl::fence_registers<{b.layout.registers}>({c_name(name)});")

    def wgmma_call(self, g: ir.Gemm, fn: str, pending: int | None, clear: bool | int = False,
                   keep: str | None = None) -> str:
        """The call of `fn` (gemm_wgmma, or gemm_wgmma_issue with `pending` None) for gemm `g`;
        `clear`: its accumulator's old values ignored (gemm_wgmma_issue's CLEAR), unless the C
        condition `keep` holds; 2: always (CLEAR 2, gemm_wgmma_issue only)."""
        a, b, c = self.buffers[g.a], self.buffers[g.b], self.buffers[g.c]
        threads = owner_threads(c.layout, self.k.threads)  # (a product on one warpgroup: its threads)
        columns = wgmma_column_groups(c.shape, threads)  # warpgroups side by side, N / columns each
        mma = self.wgmma_struct(c.shape[1] // columns, a.dtype, not g.trans_b, b.dtype, c.dtype, g.precision,
                                scale_d=bool(clear), m_major_a=g.trans_a)
        bands = wgmma_bands(c.shape, threads)  # m64 instructions per warpgroup and K step
        # (the template's trailing arguments, each given where one after it is)
        trans_a = g.trans_a
        tb = f", {c_type(b.dtype)}" if b.dtype != a.dtype or bands > 1 or columns > 1 or clear or trans_a else ""
        tb += f", {bands}" if bands > 1 or columns > 1 or clear or trans_a else ""
        tb += f", {columns}" if columns > 1 or clear or trans_a else ""
        if fn == "gemm_wgmma_issue":
            tb += (", 2" if clear == 2 else ", true" if clear else ", false" if trans_a else "") + \
                (", true" if trans_a else "")
        else:
            tb += ", true" if clear else ""
            tb += ", true" if trans_a else ""
        pend = "" if pending is None else f", {pending}"
        k = a.shape[0] if trans_a else a.shape[1]  # an M-major A is K x M
        return (f"tl::{fn}<{mma}, {c_type(a.dtype)}, {k}, {a.shape[0]}, {b.shape[0]}, "
                f"{c_bool(g.trans_b)}{pend}{tb}>({self.smem_pointer(g.a)}, {self.smem_pointer(g.b)}, {c_name(g.c)}"
                f"{', ' + keep if keep else ''})")

    def wgmma_rs_call(self, g: ir.Gemm, fn: str, clear: bool = False, keep: str | None = None) -> str:
        a, b, c = self.buffers[g.a], self.buffers[g.b], self.buffers[g.c]
        mma = self.wgmma_struct(c.shape[1], a.dtype, not g.trans_b, b.dtype, c.dtype, g.precision, register_a=True,
                                scale_d=clear)
        bands = wgmma_bands(c.shape, self.k.threads)
        tail = f", {bands}, true" if clear else f", {bands}" if bands > 1 else ""
        return (f"tl::{fn}<{mma}, {c_type(a.dtype)}, {a.shape[1]}, {b.shape[0]}, {c_bool(g.trans_b)}"
                f"{tail}>({c_name(g.a)}, {self.smem_pointer(g.b)}, {c_name(g.c)}{', ' + keep if keep else ''})")

    def wgmma_struct(self, n: int, dtype, n_major_b: bool, b_dtype, c_dtype, precision: str,
                     register_a: bool = False, scale_d: bool = False, m_major_a: bool = False) -> str:
        """The wrapper of `wgmma.mma_async.m64nNkK` for these operands (A of `dtype`, in shared
        memory, M-major with `m_major_a`, or, with `register_a`, in registers), rendered once per
        kernel into its preamble; `scale_d`: with a run that takes the scale-d predicate too (a
        clear)."""
        key = (n, dtype.name, b_dtype.name, n_major_b, precision, register_a, scale_d, m_major_a)
        if key not in self.wgmma_types:
            from . import environment

            op = tensor_core_op(dtype, b_dtype, c_dtype, precision)
            if op is None or (op.k_major_only and (n_major_b or m_major_a)):
                raise CodegenError(f"wgmma does not take {dtype} x {b_dtype} operands into {c_dtype}"
                                   f"{' with B N-major' if n_major_b else ''}", self.k.span)
            types = dtype.name if b_dtype == dtype else f"{dtype.name}_{b_dtype.name}"
            if precision != "ieee":
                types = precision
            name = (f"tl_{c_name(self.k.name)}_wgmma_n{n}_{types}{'_mmajor' if m_major_a else ''}"
                    f"{'_nmajor' if n_major_b else ''}{'_rs' if register_a else ''}{'_clear' if scale_d else ''}")
            # Immediates after scale-d: scale-a, scale-b (floats), then the transpose bits (16-bit
            # only; A's only when A is in shared memory).
            immediates = [] if op.acc_ptx == "s32" else [1, 1] if op.k_major_only else \
                [1, 1, int(n_major_b)] if register_a else [1, 1, int(m_major_a), int(n_major_b)]
            text = environment().get_template("wgmma_mma.cuh.j2").render(
                name=name, n=n, k=op.k, a_ptx=op.a_ptx, b_ptx=op.b_ptx, acc_ptx=op.acc_ptx,
                acc=c_type(c_dtype), constraint="r" if op.acc_ptx == "s32" else "f", immediates=immediates,
                n_major_b=n_major_b, register_a=register_a, scale_d=scale_d)
            self.preamble.extend(text.rstrip("\n").split("\n"))
            self.wgmma_types[key] = name
        return self.wgmma_types[key]

    def after_async_copies(self) -> None:
        if self.wgmma_operands:
            self.emit("tl::fence_proxy_async();")

    def stmt_Copy(self, c: ir.Copy, async_copy: bool = False) -> None:
        super().stmt_Copy(c, async_copy)
        if not async_copy and c.dst.name in self.wgmma_operands:
            self.emit("tl::fence_proxy_async();")
