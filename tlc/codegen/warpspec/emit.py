"""Warp-specialized pipelines, the C: the ring's barriers, the roles, the consumers' loop and
releases; the producer warpgroup's copies are producer.py's, the tile loop of a persistent
kernel tiles.py's.  Every number comes from the kernel's `ir.WarpSpecialization` (decided by
`schedule/warpspec.py`, read through `plan.py`); the primitives are `tl/tma.cuh`'s."""
from __future__ import annotations

from contextlib import contextmanager

from ... import ir
from ...ir.warpspec import CONSUMER_BARRIER, HANDOVER_BARRIER, WARPGROUP_BARRIER, turn_barrier
from ...ir.walk import assigned_scalars, statements
from ...schedule.reduce_slots import reduces_in_registers
from ..bulk_reduce import BulkReduceGen
from ..cnames import c_name, c_type
from .plan import WarpSpecPlan
from .producer import ProducerEmission
from .split_k import emit_fixup, emit_stream_fixup
from .tiles import TileWalk


class WarpSpecEmission(TileWalk, ProducerEmission, BulkReduceGen):
    """The C of a warp-specialized kernel (mixed into `Sm90` through `WarpSpecialized`)."""

    emitting_late_copies = False  # the consumers' late copies, emitted after the ring's setup

    def kernel_body(self, stmts) -> None:
        """A persistent kernel's body is the specialized loop with the statements around it
        inside its tile loop."""
        if self.persistent:
            i = stmts.index(self.ws_loop)
            self.mark(self.ws_loop)
            self.emit_warp_specialized(self.ws_loop, before=stmts[:i], after=stmts[i + 1:])
            return
        self.block(stmts)
        if self.staged_epilogue is not None:  # the epilogue's store has read its staging buffer before the block ends
            self.emit("if ((tl_tma & 2) && threadIdx.x % 128 == 0) tl::tma_store_wait_read();  // its store has read the buffer")

    def stmt_wrapped(self, s, method) -> bool:
        """A statement before the ring that only the consumers run (`consumer_only`: a copy
        into shared memory mapped over the kernel's THREADS) is skipped by the producer's threads."""
        spec = self.spec
        if spec is None or not spec.consumer_only or not any(s is self.k.body[i] for i in spec.consumer_only):
            return False
        if any(s is self.k.body[x.index] for x in spec.tile_loads):
            self.emit("// (the producer makes this copy once a tile: the tile loads)")
            return True
        if any(s is self.k.body[i] for i in spec.late_copies):
            if self.emitting_late_copies:
                return False
            self.emit("// (the consumers make this copy after the ring's setup)")
            return True
        self.emit(f"if (threadIdx.x < {self.k.threads}) {{  // the consumers' work: the producer's threads skip it")
        self.indent += 1
        method(s)
        self.indent -= 1
        self.emit("}")
        return True

    def block_barrier(self) -> str:
        if getattr(self, "in_consumer_loop", False):  # the consumers alone
            return f"tl::bar_sync_named({CONSUMER_BARRIER}, {self.k.threads});"
        return super().block_barrier()

    # an exchange among the consumers (WarpSpecialization.exchanges): its scratch after the
    # ring's barriers, with the reductions'; a barrier before it only where the consumers also
    # reduce through scratch, after it where the schedule found none before the next write
    def exchange_base(self) -> int:
        return self.red_base() if getattr(self, "in_consumer_loop", False) else super().exchange_base()

    def exchange_barrier_before(self) -> bool:
        if getattr(self, "in_consumer_loop", False):
            return any(isinstance(x, ir.Reduce) and not reduces_in_registers(x, self.buffers, self.k.threads)
                       for x in statements(self.ws.pipeline.rest))
        return super().exchange_barrier_before()

    def exchange_barrier_after(self, p) -> bool:
        if getattr(self, "in_consumer_loop", False):
            body = self.ws.pipeline.loop.body
            return next((after for i, after in self.spec.exchanges if body[i] is p), True)
        return super().exchange_barrier_after(p)

    def stmt_Sync(self, s) -> None:
        if getattr(self, "in_consumer_loop", False):
            body = self.ws.pipeline.loop.body
            if any(body[i] is s for i in self.spec.warpgroup_syncs):
                # this warpgroup's shared writes before its own wgmma reads them
                self.emit(f"tl::bar_sync_named({WARPGROUP_BARRIER} + threadIdx.x / 128, 128);  // sync: this warpgroup alone")
                return
            w = next((w for i, w in self.spec.arrivals if body[i] is s), None)
            if w is not None:  # the threads from w up write nothing before the next barrier: they arrive
                self.emit(f"if ({self.threads_below(w)}) tl::bar_sync_named({HANDOVER_BARRIER}, {self.k.threads});  // sync: "
                          f"the consumers alone, threads {w}.. only arrive")
                self.emit(f"else tl::bar_arrive_named({HANDOVER_BARRIER}, {self.k.threads});")
                return
            if self.spec.consumer_barrier and any(body[i] is s for i in self.spec.kept_syncs):
                # the consumers' shared writes before their reads
                self.before_kept_sync(s)  # (a bulk add's buffer read: bulk_reduce.py)
                self.emit(f"tl::bar_sync_named({self.spec.consumer_barrier}, {self.k.threads});  // sync: the consumers alone")
                return
            self.emit("// sync: the stage's full barrier already orders the copies before this"
                      + (" (and the consumers' barriers their own writes)" if self.spec.consumer_barrier else ""))
            return
        if self.spec is not None and self.spec.tile_loads and any(s is x for x in self.k.body[:self.spec.loop]):
            self.emit("// sync: the tile loads' barriers order the producer's copy before the consumers' reads")
            return
        if self.spec is not None and self.spec.late_copies and any(s is x for x in self.k.body[:self.spec.loop]):
            self.emit("// sync: the consumers' late copies meet at their own barrier")
            return
        super().stmt_Sync(s)

    def stmt_Parallel(self, p: ir.Parallel) -> None:
        x = self.bulk_reduce_of(p)
        if x is None:
            super().stmt_Parallel(p)
        else:
            self.bulk_reduce(x, p, lambda: super(WarpSpecEmission, self).stmt_Parallel(p))

    def stmt_Copy(self, c: ir.Copy, async_copy: bool = False) -> None:
        st = self.staged_epilogue
        part = None if st is None else next((n for n, x in enumerate((st.copy, *st.more)) if x is c), None)
        if part is None:
            super().stmt_Copy(c, async_copy)
            return
        frag = self.buffers[c.src.name]
        t, u = c_type(frag.dtype), c_type(self.params[c.dst.name].dtype)
        rows, cols = frag.shape
        offs = [self.expr(o) for o in c.dst.offsets]
        lead = ", ".join(offs[:-2]) or "0"
        e = self.emit
        store = (f"tl::tma_store_tile<{u}, {st.rows}, {cols}, {rows}, {len(offs)}>(&tl_map{st.map_index}, "
                 f"tl_stage_c, tl_group * {st.rows}, {offs[-1]}, {offs[-2]} + tl_group * {st.rows}, {{{lead}}});")
        if st.in_stage is not None:
            self.staged_in_stage(st, frag, t, u, store)
        else:
            e("if (tl_tma & 2) {  // through shared memory: the TMA stores this warpgroup's rows while it goes on")
            self.indent += 1
            e(f"{u}* tl_stage_c = reinterpret_cast<{u}*>(tl_smem + {st.offset + (0 if st.reuse else part * st.nbytes)});")
            e("const int tl_group = threadIdx.x / 128;")
            if part == 0 or st.reuse:  # (the later parts' own buffers: that wait covered the last tile's stores of them)
                e("if (threadIdx.x % 128 == 0) tl::tma_store_wait_read();  // " +
                  ("the last tile's store has read the buffer" if part == 0 else "the last part's store has read it"))
                e("tl::bar_sync_named(1 + tl_group, 128);")
            e(f"tl::copy_f2s_staged<{self.fragment(frag.name).c_layout}, {t}, {u}, {rows}, {cols}>(tl_stage_c, "
              f"{c_name(frag.name)});")
            e("tl::fence_proxy_async();  // written by plain stores, read next by the TMA")
            e("tl::bar_sync_named(1 + tl_group, 128);")
            e(f"if (threadIdx.x % 128 == 0) {store}")
            self.indent -= 1
        e("} else {")
        self.indent += 1
        super().stmt_Copy(c, async_copy)
        self.indent -= 1
        e("}")

    def staged_in_stage(self, st, frag, t: str, u: str, store: str) -> None:
        """The staged store in a ring buffer's stage of the tile's last iteration
        (StagedStore.in_stage): written once every consumer warp's last tile_done gemm is done
        (the tile loads' empty barrier, this tile's phase), the stage released by each
        warpgroup's issuing thread, for its warps, once its store has read it."""
        S = self.ws.pipeline.stages
        load = self.spec.loads[st.in_stage]
        stage_bytes = load.stage_elems * self.buffers[load.buffer].dtype.itemsize
        rows, cols = frag.shape
        e = self.emit
        e("if ((tl_tma & 2) && tl_n > 0) {  // through the ring's last stage: the TMA stores this warpgroup's rows")
        self.indent += 1
        e(f"const int tl_last = (tl_it + {S - 1}) % {S};  // the stage of the tile's last iteration")
        e(f"{u}* tl_stage_c = reinterpret_cast<{u}*>(tl_smem + {st.offset} + tl_last * {stage_bytes});")
        e("const int tl_group = threadIdx.x / 128;")
        e(f"tl::mbar_wait(tl_tile_full + 1, (tl_tq - 1) & 1);  // no consumer's gemm reads {load.buffer}'s stage any more")
        e(f"tl::copy_f2s_staged<{self.fragment(frag.name).c_layout}, {t}, {u}, {rows}, {cols}>(tl_stage_c, "
          f"{c_name(frag.name)});")
        e("tl::fence_proxy_async();  // written by plain stores, read next by the TMA")
        e("tl::bar_sync_named(1 + tl_group, 128);")
        e("if (threadIdx.x % 128 == 0) {")
        e(f"  {store}")
        e("  tl::tma_store_wait_read();  // it has read the stage: the producer may fill it")
        e("  tl::mbar_arrive_count(tl_empty + tl_last, 4);  // for this warpgroup's four warps")
        e("}")
        self.indent -= 1

    def set_registers(self, how: str, role: int) -> None:
        """The producer's (`role` 0, setmaxnreg.dec) or the consumers' (1, .inc) registers; where
        the generic build's split differs (WarpSpecialization.generic_registers: an im2col load's
        fallback gathers rows), chosen by the preprocessor: the build whose maps all encode
        (TL_TMA_FLAGS with bit 0) keeps the TMA's."""
        spec = self.spec
        mine = (spec.producer_registers, spec.consumer_registers)[role]
        if spec.blocks_per_sm > 1:  # several blocks an SM: every thread keeps the launch bounds' share
            return
        if spec.generic_registers is None:
            self.emit(f"tl::setmaxnreg_{how}<{mine}>();")
            return
        self.lines.append("#if defined(TL_TMA_FLAGS) && (TL_TMA_FLAGS & 1)  // every map encoded: the TMA copies")
        self.emit(f"tl::setmaxnreg_{how}<{mine}>();")
        self.lines.append("#else  // the producer may gather the image's rows (no map): it keeps a gatherer's registers")
        self.emit(f"tl::setmaxnreg_{how}<{spec.generic_registers[role]}>();")
        self.lines.append("#endif")

    # ---- emission ------------------------------------------------------------------------------
    def emit_warp_specialized(self, loop: ir.For, before=(), after=()) -> None:
        """The ring for `loop`.  Persistent (`before`/`after` given: the kernel's statements
        around the loop): each block loops over tiles (`tl::persistent_tile`, grouped so that a
        wave of blocks shares rows of A and columns of B in L2) and the producer runs ahead into
        the next tile's stages while the consumers store this one."""
        w = self.ws
        plan, S, T, spec = w.pipeline, w.pipeline.stages, self.k.threads, self.spec
        P = spec.producer_threads
        persistent = self.persistent
        stage_bytes = sum(load.rows * load.cols * self.buffers[self.ws_dst(load)].dtype.itemsize for load in w.loads
                          if not load.gather)
        gathers = any(load.gather for load in w.loads)
        end = spec.staging_end  # the staging buffers follow the ring
        self.scratch_bytes = max(self.scratch_bytes, end - self.k.smem_bytes)
        e = self.emit
        e(f"{{  // {'persistent, ' if persistent else ''}warp-specialized over {S} stages: threads {T}..{T + P - 1} "
          f"produce ({'cp.async row gathers' if gathers else 'TMA'}{' and TMA' if gathers and stage_bytes else ''}), "
          f"{T // 128} consumer warpgroup{'s' if T > 128 else ''} compute")
        self.indent += 1
        e(f"unsigned long long* tl_full = reinterpret_cast<unsigned long long*>(tl_smem + {self.ring_barriers});")
        e(f"unsigned long long* tl_empty = tl_full + {S};")
        if spec.late_loads:
            e(f"unsigned long long* tl_full_late = reinterpret_cast<unsigned long long*>(tl_smem + {spec.late_barriers});"
              "  // the late loads' (read by the deferred gemm alone) own")
            e(f"unsigned long long* tl_empty_late = tl_full_late + {S};")
        if spec.tile_loads:
            e(f"unsigned long long* tl_tile_full = tl_full + {2 * S};  // the tile loads': tl_tile_full + 1 the empty one")
            e("int tl_tq = 0;  // the tiles that ran the loop, counted: their phase")
        if self.dynamic_tiles:
            e(f"unsigned long long* tl_sched_bar = reinterpret_cast<unsigned long long*>(tl_smem + {spec.sched_offset});"
              "  // the tile counts' ring: full[2], empty[2]")
            e(f"volatile int* tl_sched = reinterpret_cast<volatile int*>(tl_smem + {spec.sched_offset + 32});")
        if persistent:
            extents = [self.expr(g) for g in self.k.grid] + ["1"] * (3 - len(self.k.grid))
            e(f"const int tl_tiles_x = {extents[0]}, tl_tiles_y = {extents[1]}, tl_tiles_z = {extents[2]};")
        else:
            e(f"const int tl_n = {self.expr(plan.loop.stop)};")
        e("if (threadIdx.x == 0) {")
        e(f"  for (int tl_s = 0; tl_s < {S}; ++tl_s) {{")
        if gathers:  # each producer thread's cp.async arrival and one a warp, and the TMA's with its bytes
            e(f"    tl::mbar_init(tl_full + tl_s, {spec.full_arrivals}{' + (tl_tma & 1)' if stage_bytes else ''});")
        else:
            e(f"    tl::mbar_init(tl_full + tl_s, (tl_tma & 1) ? 1 : {spec.full_arrivals});")
        e(f"    tl::mbar_init(tl_empty + tl_s, {spec.empty_arrivals});  // one arrival per consumer warp"
          f"{' of the cluster' if self.cluster > 1 else ''}")
        if spec.late_loads:
            e(f"    tl::mbar_init(tl_full_late + tl_s, (tl_tma & 1) ? 1 : {spec.full_arrivals});")
            e(f"    tl::mbar_init(tl_empty_late + tl_s, {spec.empty_arrivals});")
        e("  }")
        if spec.tile_loads:
            e(f"  tl::mbar_init(tl_tile_full, (tl_tma & 1) ? 1 : {P});")
            e(f"  tl::mbar_init(tl_tile_full + 1, {T // 32});  // one arrival per consumer warp")
        if self.dynamic_tiles:
            e("  for (int tl_s = 0; tl_s < 2; ++tl_s) {")
            e("    tl::mbar_init(tl_sched_bar + tl_s, 1);  // the producer's count")
            e(f"    tl::mbar_init(tl_sched_bar + 2 + tl_s, {T // 32});  // read: one arrival per consumer warp")
            e("  }")
        e("  tl::fence_barrier_init();")
        e("}")
        if self.cluster > 1:
            e(f"const unsigned tl_rank = tl::cluster_rank();  // this block's place in its cluster of {self.cluster}")
            e("tl::cluster_sync();  // the peer's barriers are ready before anyone copies into it")
        else:
            e("__syncthreads();")
        e(f"if (threadIdx.x >= {T}) {{  // the producer warpgroup")
        self.indent += 1
        self.set_registers("dec", 0)
        e(f"const int tl_worker = threadIdx.x - {T};")
        self.tile_role = "producers"  # (the TMA path's one thread: tma_producer)
        e("int tl_it = 0;  // position in the ring, counted across tiles")
        # the producer's tile loop runs the statements before the pipelined loop but the clears
        # of the consumers' registers
        scalars = [x for x in before if not isinstance(x, ir.Fill)]
        if gathers:
            self.gather_producer(w, scalars, stage_bytes)
        else:
            self.tma_producer(w, scalars, stage_bytes)
        self.indent -= 1
        e("}")
        self.set_registers("inc", 1)
        e("int tl_it = 0;")
        if spec.late_copies:  # while the producer's first copies load
            self.emitting_late_copies = True
            for i in spec.late_copies:
                self.stmt(self.k.body[i])
            self.emitting_late_copies = False
            e(f"tl::bar_sync_named({CONSUMER_BARRIER}, {T});  // the consumers' copies before they read them")

        def consume():
            if spec.tile_loads:
                e("if (tl_n > 0) tl::mbar_wait(tl_tile_full, tl_tq & 1);  // this tile's loads (Q) have landed")
            self.consumer_loop(w)
            if spec.tile_loads:
                e("tl_tq += tl_n > 0;")
            if persistent and self.cluster > 1:
                e("if (tl_valid) {  // a block past the last tile stores nothing")
                self.indent += 1
                self.epilogue(after)
                self.indent -= 1
                e("}")
            elif persistent:
                self.epilogue(after)
        self.tile_role = "consumers"
        self.over_tiles(before, consume)
        if self.staged_epilogue is not None and persistent:  # (one tile a block: after the epilogue, kernel_body)
            e("if (threadIdx.x % 128 == 0) tl::tma_store_wait();  // this warpgroup's last store is done")
        if self.cluster > 1:
            e("tl::cluster_sync();  // the peer may still arrive on this block's barriers until here")
        elif not persistent:
            e("__syncthreads();  // every consumer is past its last wait: the barriers' memory is free")
        self.indent -= 1
        e("}")

    def epilogue(self, after) -> None:
        """A persistent kernel's statements after its loop, a tile's epilogue; with split-K, after
        the parts' fixup (split_k.py) and only in the tile's last part."""
        split = (lambda: self.block(after)) if self.spec.split_k is None else \
            (lambda: emit_fixup(self, lambda: self.block(after)))
        if self.spec.stream_k is None:
            split()
        else:
            emit_stream_fixup(self, split)

    def deferred_body(self, plan, which: str = "any") -> None:
        """The consumers' statements with the last gemm deferred (ir.DeferredGemm): the first
        gemm is issued, then the previous iteration's last gemm on its stage, then the first is
        waited for; the statements up to `wait` run under the deferred one."""
        d, loop = self.spec.deferred, plan.loop
        first, last = loop.body[d.after], loop.body[d.gemm]
        index = {id(s): i for i, s in enumerate(loop.body)}
        rest = plan.rest[:-1]
        cut = next(i for i, s in enumerate(rest) if index[id(s)] == d.after) + 1
        wait = next((i for i, s in enumerate(rest) if index[id(s)] == d.wait), len(rest))
        e = self.emit
        if self.spec.late_loads and which != "first":  # before the turn: the deferred gemm's late loads
            self.wait_late_loads(plan.stages, f"tl_it + {plan.stages - 1}", "tl_k > 0" if which == "any" else None)
        groups = self.k.threads // 128
        turn = turn_barrier(groups)
        if d.pingpong:
            e(f"tl::bar_sync_named({turn} + threadIdx.x / 128, 256);  // this warpgroup's turn to issue")
        self.issue_only = first
        self.block(rest[:cut])
        self.issue_only = None
        if which != "first":
            self.deferred_gemm(plan, "tl_k > 0" if which == "any" else None, f"tl_it + {plan.stages - 1}", wait=False)
        if d.pingpong and groups == 2:  # the other's turn
            e(f"tl::bar_arrive_named({turn + 1} - threadIdx.x / 128, 256);")
        elif d.pingpong:  # the next one's, in warpgroup order
            e(f"tl::bar_arrive_named({turn} + (threadIdx.x / 128 + 1) % {groups}, 256);")
        e({"any": "if (tl_k > 0) tl::wgmma_wait<1>(); else tl::wgmma_wait<0>();", "first": "tl::wgmma_wait<0>();",
           "later": "tl::wgmma_wait<1>();"}[which] + "  // this iteration's first gemm is done")
        e(f"tl::fence_registers<{self.buffers[first.c].layout.registers}>({c_name(first.c)});")
        if self.spec.late_loads:  # the first gemm alone read the early loads (K): their stage is free
            e(f"if (threadIdx.x % 32 == 0) {self.release('tl_empty + tl_stage')}  // the early loads' stage is free")
        if self.spec.tile_done is not None:  # it alone reads the tile loads: the next tile's may come
            e("if (tl_k == tl_n - 1 && threadIdx.x % 32 == 0) tl::mbar_arrive(tl_tile_full + 1);  // the tile loads are free")
        self.block(rest[cut:wait])
        # in place: a plain wait there ptxas moves up to the scores' (tl/wgmma.cuh)
        e("tl::wgmma_wait_in_place<0>();  // the deferred gemm is done: its operands and accumulator are free")
        self.fence_gemm_registers(last)
        self.block([s for s in rest[wait:] if index[id(s)] not in d.before_issue])  # (those run before its next issue)

    def wait_late_loads(self, S: int, iteration: str, when: str | None = None) -> None:
        """The consumers' wait for iteration tl_it - 1's late loads (WarpSpecialization.late_loads,
        attention's V), which came on their own barrier; `iteration` its stage's C expression."""
        self.emit(f"{'if (' + when + ') ' if when else ''}tl::mbar_wait(tl_full_late + ({iteration}) % {S}, "
                  f"((tl_it - 1) / {S}) & 1);  // the deferred gemm's late loads have landed")

    def deferred_gemm(self, plan, when: str | None, iteration: str, wait: bool) -> None:
        """The deferred gemm of iteration `iteration` (a C expression of tl_it), on its stage, if
        `when` (None: always); `wait`: and waited for (after the loop)."""
        g = plan.loop.body[self.spec.deferred.gemm]
        e = self.emit
        e(f"{'if (' + when + ') ' if when else ''}{{  // the deferred gemm of iteration {iteration}, on its stage")
        self.indent += 1
        if self.spec.late_loads and wait:  # its late loads (V) came on their own barrier (iteration tl_it - 1's)
            self.wait_late_loads(plan.stages, iteration)
        saved = self.staged(plan, iteration)
        for i in self.spec.deferred.before_issue:  # its accumulator's scaling, under the first gemm's work
            self.stmt(plan.loop.body[i])
        self.issue_only = None if wait else g
        self.stmt(g)
        self.issue_only = None
        self.smem_base = saved
        if wait:
            e("tl::wgmma_wait<0>();")
            self.fence_gemm_registers(g)
        self.indent -= 1
        e("}")

    def release(self, barrier: str) -> str:
        """A consumer warp's arrival on a stage's empty barrier: in a cluster, on every block's,
        since each block's producer writes into all of them."""
        if self.cluster > 1:
            return f"tl::mbar_arrive_cluster<{self.cluster}>({barrier});"
        return f"tl::mbar_arrive({barrier});"

    @contextmanager
    def ring_step(self, loop: ir.For):
        """While the ring's body is written: its loop variable (tl_k, or a streamed segment's
        tl_k0 + tl_k) is never negative, which the `//` and `%` of its K step's group tell nvcc
        (cexpr.py's _never_negative, as stmt_For's loops; a split-K part's
        `((bz * steps + k) * BK + j) // G`: std.gemm's matmul_w4a16_splitk through the TMA kept
        every weight's division without it, 1,897 SASS a K step of 512 at M = 1); and a scalar
        stop of `range(c, stop)` is at least c + 1 there (an iteration runs), so that `bz * steps`
        is not negative without the sizes' signs: nvcc's plain build, which does not assume them,
        kept the divisions' sign fixups (the same kernel with DEQUANT_RING at M = 16's tiles spilled
        8 bytes at 240 registers)."""
        hints = getattr(self, "sign_hints", None)
        if hints is None:
            yield
            return
        known = {loop.var: (0, None)}
        if isinstance(loop.stop, ir.Var) and isinstance(loop.start, ir.Const) and isinstance(loop.step, ir.Const) \
                and loop.step.value > 0 and loop.stop.name not in assigned_scalars(loop.body):
            known[loop.stop.name] = (loop.start.value + 1, None)
        outer = {name: hints.loops.get(name) for name in known}
        hints.loops.update(known)
        try:
            yield
        finally:
            for name, was in outer.items():
                if was is None:
                    hints.loops.pop(name, None)
                else:
                    hints.loops[name] = was

    def consumer_iteration(self, w: WarpSpecPlan, which: str) -> None:
        """One iteration of the consumers' loop at tl_k: `which` is "first" (tl_k = 0, peeled),
        "later" (tl_k > 0) or "any" (either: the conditions at run time)."""
        plan, S = w.pipeline, w.pipeline.stages
        e = self.emit
        var = c_name(plan.loop.var)
        e(f"const int tl_stage = tl_it % {S};")
        e(f"tl::mbar_wait(tl_full + tl_stage, (tl_it / {S}) & 1);")
        if any(load.gather for load in w.loads):
            e("tl::fence_proxy_async();  // the producer's cp.async writes (generic proxy), read by wgmma (async proxy)")
        e("{")
        self.indent += 1
        e(f"const int {var} = {self.k_step()};")
        e(f"(void){var};")
        saved = self.staged(plan, "tl_it")
        self.in_flight_gemm, self.in_consumer_loop = (plan.rest[0] if w.overlap else None), True
        with self.ring_step(plan.loop):
            if self.spec.deferred is not None:
                self.deferred_body(plan, which)
            else:
                self.block(plan.rest)
        self.in_consumer_loop = False
        self.smem_base = saved
        self.indent -= 1
        e("}")
        self.mark(plan.loop)  # the release below is the loop's, not its last statement's
        if getattr(self, "carried", ()):
            pass  # the body released the last iteration's stage where its carried gemms were done
        elif self.spec.release_lag == 1:
            if which != "first":
                empty = "tl_empty_late" if self.spec.late_loads else "tl_empty"  # (the early loads' went after the first gemm)
                e("// the previous stage's wgmma has completed (one group stays in flight): release it")
                e(f"if ({'tl_k > 0 && ' if which == 'any' else ''}threadIdx.x % 32 == 0) "
                  f"{self.release(f'{empty} + (tl_it + {S - 1}) % {S}')}")
        else:
            e(f"if (threadIdx.x % 32 == 0) {self.release('tl_empty + tl_stage')}")

    def consumer_loop(self, w: WarpSpecPlan) -> None:
        plan, S = w.pipeline, w.pipeline.stages
        e = self.emit
        # the loop's own code (the waits for full stages, the releases) under the loop's .tl
        # line: it followed the statement before the loop's (examples/gemm.tl's clear(acc), which
        # Nsight Compute's samples then charged with the consumers' waits)
        self.mark(plan.loop)
        pingpong = self.spec.deferred is not None and self.spec.deferred.pingpong
        # a deferred gemm's first iteration is peeled, so that the loop's has the deferred gemm
        # to issue every time: with a conditional issue and the turns' bar.sync in one loop,
        # ptxas serializes the wgmmas (its C7514); with one warpgroup, the accumulator's scaling
        # under a branch beside the first gemm in flight made it wait for that gemm (C7517,
        # tests/programs/flash_attention.tl at BM = D = 64)
        peeled = self.spec.deferred is not None
        if pingpong:  # the first warpgroup's turn comes first (its arrival and its sync make the 256)
            e(f"if (threadIdx.x < 128 && tl_n > 0) tl::bar_arrive_named({turn_barrier(self.k.threads // 128)}, 256);")
        if peeled:
            e("if (tl_n > 0) {  // the first iteration: no deferred gemm before it")
            self.indent += 1
            e("const int tl_k = 0;")
            self.consumer_iteration(w, "first")
            e("++tl_it;")
            self.indent -= 1
            e("}")
        if self.spec.rolled:
            e("#pragma unroll 1  // WarpSpecialization.rolled: ptxas's time follows the HGMMA count")
        self.turns_begin(list(plan.rest))  # atomic_add(..., order=)'s, under the products (turns.py)
        e(f"for (int tl_k = {1 if peeled else 0}; tl_k < tl_n; ++tl_k, ++tl_it) {{")
        self.indent += 1
        self.consumer_iteration(w, "later" if peeled else "any")
        self.indent -= 1
        e("}")
        self.turns_end()
        self.bulk_reduces_end()
        if self.spec.tile_loads and self.spec.tile_done is None:  # every gemm that reads them is done
            e("if (tl_n > 0 && threadIdx.x % 32 == 0) tl::mbar_arrive(tl_tile_full + 1);")
        if pingpong:  # the last warpgroup's last arrival on the first's barrier, which no turn took
            e(f"if (threadIdx.x < 128 && tl_n > 0) tl::bar_sync_named({turn_barrier(self.k.threads // 128)}, 256);")
        if self.spec.deferred is not None:
            self.deferred_gemm(plan, "tl_n > 0", "tl_it - 1", wait=True)
            st = self.staged_epilogue
            if self.persistent and st is not None and st.in_stage is not None:  # (the epilogue stages there)
                e("// its stage, which the next tile's copies will overwrite: where the epilogue stages the output "
                  "there, released once the store has read it")
                e(f"if (!(tl_tma & 2) && tl_n > 0 && threadIdx.x % 32 == 0) "
                  f"{self.release(f'tl_empty + (tl_it + {S - 1}) % {S}')}")
            elif self.persistent:  # its stage, which the next tile's copies will overwrite
                e(f"if (tl_n > 0 && threadIdx.x % 32 == 0) {self.release(f'tl_empty + (tl_it + {S - 1}) % {S}')}")
        if getattr(self, "carried", ()):
            e("tl::wgmma_wait<0>();  // the last iteration's carried gemms")
            for g in self.carried:
                self.fence_gemm_registers(g)
            for f in self.folded_clears:  # no iteration cleared the accumulator
                e("if (tl_n == 0) {")
                self.indent += 1
                super(type(self), self).stmt_Fill(f)
                self.indent -= 1
                e("}")
        if w.overlap:
            self.drain()
            self.in_flight_gemm = None
            if self.persistent:
                e("// and the last stage, which the next tile's copies will overwrite")
                e(f"if (tl_n > 0 && threadIdx.x % 32 == 0) {self.release(f'tl_empty + (tl_it + {S - 1}) % {S}')}")
