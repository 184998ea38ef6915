"""The producer warpgroup of a warp-specialized ring, the C: its K loop over the ring's stages
(`producer_loop`: each stage's wait on its empty barrier, then its copies, which complete its
full barrier), once a tile of the tile walk (tiles.py).  The copies: through the TMA from one
thread (`tma_producer`; `emit_tma_loads`, the coordinates counted along without divisions where
stepped.py plans it, a ring's late loads on barriers of their own), element by element from
every producer thread where the host encoded no tensor map (`emit_element_loads`), or row
gathers through cp.async (`gather_producer`); a tile's loads once a tile (`emit_tile_loads`).
Every number comes from the kernel's `ir.WarpSpecialization`; the primitives are `tl/tma.cuh`'s."""
from __future__ import annotations

from ...ir.walk import assigned_scalars
from ..cnames import c_name, c_type
from . import stepped
from .plan import WarpSpecPlan


class ProducerEmission:
    """The producer's C (mixed into `WarpSpecEmission`)."""

    def gather_producer(self, w: WarpSpecPlan, scalars, stage_bytes: int) -> None:
        """The producer of a ring with row gathers: every thread gathers its vectors of each
        stage through cp.async and arrives once they have landed (noinc), and once a warp after
        its plain stores (a vector at the tensor's edge; where the host has no tensor map, the
        copies' elements); the TMA's copies, if any, from one thread with the stage's bytes."""
        e = self.emit
        if stage_bytes:
            e("if (tl_tma & 1) {")
            self.indent += 1
            e("if (tl_worker == 0) {")
            for i in range(len(self.tensor_maps)):
                e(f"  tl::prefetch_tensor_map(&tl_map{i});")
            e("}")
            self.over_tiles(scalars, lambda: self.producer_loop(w, lambda: self.emit_gather_stage(w, stage_bytes),
                                                                self.keep_gather_rows))
            self.indent -= 1
            e("} else {  // the host could not encode a tensor map (unaligned rows): copy element by element")
            self.indent += 1
            self.over_tiles(scalars, lambda: self.producer_loop(w, lambda: self.emit_gather_stage(w, 0),
                                                                self.keep_gather_rows))
            self.indent -= 1
            e("}")
        else:
            self.over_tiles(scalars, lambda: self.producer_loop(w, lambda: self.emit_gather_stage(w, 0),
                                                                self.keep_gather_rows))
        e("tl::cp_async_commit();  // no thread leaves with its vectors still in flight")
        e("tl::cp_async_wait<0>();")
        e("return;")

    def keep_gather_rows(self) -> None:
        """Before the producer's K loop: each gather's rows of this thread, kept in registers
        (gather_rows_kept), where its indices allow it."""
        from ...schedule.gather_rows import row_gather
        self.kept_rows, self._kept_tags = {}, ()  # (names counted from 0 in each producer loop's scope)
        for load in self.ws.loads:
            if load.gather:
                g = row_gather(load.copy, self.params, self.buffers)
                self.kept_rows[id(load.copy)] = self.gather_rows_kept(g, "tl_worker", self.spec.producer_threads,
                                                                      self.ws.pipeline.loop.var)

    def emit_gather_stage(self, w: WarpSpecPlan, stage_bytes: int) -> None:
        """One stage of a gathering producer (gather_producer); `stage_bytes` 0: the copies that
        are not gathers element by element, else through the TMA."""
        from ...schedule.gather_rows import row_gather
        e = self.emit
        tma = [load for load in w.loads if not load.gather]
        if tma and stage_bytes:
            e("if (tl_worker == 0) {")
            self.indent += 1
            self.emit_tma_loads(w, stage_bytes, tma)
            self.indent -= 1
            e("}")
        for load in w.loads:
            if load.gather:
                self.gather_async(row_gather(load.copy, self.params, self.buffers), "tl_worker",
                                  self.spec.producer_threads, self.kept_rows.get(id(load.copy)))
        if tma and not stage_bytes:
            self.emit_element_loads(w, tma, arrive=False)
        # no proxy fence here: its MEMBAR.ALL.CTA waits for this thread's cp.async vectors to land
        # (a stage at a time: conv2d ran at 129 TFLOP/s on the H200, its 4-stage ring no faster
        # than 3); the consumers fence after their wait instead (consumer_loop)
        e("tl::cp_async_mbar_arrive_noinc(tl_full + tl_stage);  // once this thread's vectors have landed")
        e("__syncwarp();")
        e("if (tl_worker % 32 == 0) tl::mbar_arrive(tl_full + tl_stage);  // the warp's plain stores are done (release)")

    def tma_producer(self, w: WarpSpecPlan, scalars, stage_bytes: int) -> None:
        """The producer of a ring of TMA copies: one thread issues them."""
        e = self.emit
        e("if (tl_tma & 1) {")
        self.indent += 1
        e("if (tl_worker == 0) {")
        self.indent += 1
        self.tile_role = "one"
        for i in range(len(self.tensor_maps)):
            e(f"tl::prefetch_tensor_map(&tl_map{i});")
        steps = None if self.spec.late_loads else \
            stepped.plan(w.loads, w.pipeline.loop.var, assigned_scalars(w.pipeline.loop.body))
        if steps is None:
            self.over_tiles(scalars,
                            lambda: self.producer_loop(w, lambda: self.emit_tma_loads(w, stage_bytes),
                                                       tile=lambda: self.emit_tile_loads(True)))
        else:  # the copies' coordinates without divisions in the loop (codegen/warpspec/stepped.py)
            self.over_tiles(scalars,
                            lambda: self.producer_loop(w, lambda: self.emit_stepped_loads(w, stage_bytes, *steps),
                                                       setup=lambda: self.emit_stepped_setup(steps[0]),
                                                       tile=lambda: self.emit_tile_loads(True)))
        self.indent -= 1
        e("}")
        self.indent -= 1
        e("} else {  // the host could not encode a tensor map (unaligned rows): copy element by element")
        self.indent += 1
        self.tile_role = "producers"
        self.over_tiles(scalars,
                        lambda: self.producer_loop(w, lambda: self.emit_element_loads(w),
                                                   tile=lambda: self.emit_tile_loads(False)))
        self.indent -= 1
        e("}")
        e("return;")

    def producer_loop(self, w: WarpSpecPlan, loads, setup=None, tile=None) -> None:
        """The producer's K loop; `setup` emits what comes before it (a gathering producer's
        kept rows), `tile` the tile loads, after the first iteration's copies."""
        S = w.pipeline.stages
        e = self.emit
        if setup is not None:
            setup()
        if self.spec.rolled:
            e("#pragma unroll 1  // WarpSpecialization.rolled: NVRTC's time follows the unrolled copies")
        e("for (int tl_k = 0; tl_k < tl_n; ++tl_k, ++tl_it) {")
        self.indent += 1
        e(f"const int tl_stage = tl_it % {S};")
        e(f"tl::mbar_wait(tl_empty + tl_stage, ((tl_it / {S}) & 1) ^ 1);  // the consumers released it")
        var = c_name(w.pipeline.loop.var)
        e(f"const int {var} = {self.k_step()};")
        e(f"(void){var};")
        saved = self.staged(w.pipeline, "tl_it")
        loads()
        self.smem_base = saved
        if tile is not None and self.spec.tile_loads:
            e("if (tl_k == 0) {  // this tile's loads, once the consumers are done with the last tile's")
            self.indent += 1
            e("tl::mbar_wait(tl_tile_full + 1, (tl_tq & 1) ^ 1);")
            tile()
            self.indent -= 1
            e("}")
        self.indent -= 1
        e("}")
        if tile is not None and self.spec.tile_loads:
            e("tl_tq += tl_n > 0;")

    def emit_stepped_setup(self, steps) -> None:
        start = "tl_k0" if self.spec.stream_k is not None else None  # a streamed segment counts on from its first step
        for line in stepped.setup_lines(steps, self.expr, c_name, c_type, start):
            self.emit(line)
        self.emit(f"const bool tl_stepped = {stepped.guard(steps, self.expr)};  // the counters are the divisions")

    def emit_stepped_loads(self, w: WarpSpecPlan, stage_bytes: int, steps, loads) -> None:
        e = self.emit
        e("if (tl_stepped) {")
        self.indent += 1
        self.emit_tma_loads(w, stage_bytes, loads)
        self.indent -= 1
        e("} else {")
        self.indent += 1
        self.emit_tma_loads(w, stage_bytes)
        self.indent -= 1
        e("}")
        for line in stepped.step_lines(steps, self.expr, c_name):
            e(line)

    def late_split(self, w: WarpSpecPlan, loads) -> tuple[list, list]:
        """`loads` (w.loads' TmaLoads) as (the early ones, the late ones: WarpSpecialization.late_loads)."""
        late = [w.loads[j] for j in self.spec.late_loads]
        return [x for x in loads if all(x is not y for y in late)], [x for x in loads if any(x is y for y in late)]

    def emit_tma_loads(self, w: WarpSpecPlan, stage_bytes: int, loads=None, bar: str = "tl_full + tl_stage") -> None:
        loads = w.loads if loads is None else loads
        early, late = self.late_split(w, loads) if self.spec.late_loads and bar == "tl_full + tl_stage" else (loads, [])
        if late:  # the early loads (K) on the stage's barriers, the late ones (V) on their own
            S = w.pipeline.stages

            def size(xs):
                return sum(x.rows * x.cols * self.buffers[self.ws_dst(x)].dtype.itemsize for x in xs)
            self.emit_tma_loads(w, size(early), early)
            self.emit(f"tl::mbar_wait(tl_empty_late + tl_stage, ((tl_it / {S}) & 1) ^ 1);  "
                      "// the consumers' deferred gemm released its late loads")
            self.emit_tma_loads(w, size(late), late, "tl_full_late + tl_stage")
            return
        self.emit(f"tl::mbar_arrive_expect_tx({bar}, {stage_bytes});")
        for load in loads:
            if load.im2col and load.tiled:  # the image's rows (an identity window): tiled boxes of [N * H * W, C]
                t = load.im2col
                b = self.buffers[self.ws_dst(load)]
                c, x, y, n = (self.expr(e) for e in t.coords)
                _, H, W, _ = (str(d) for d in self.k.param(t.img).shape)  # (shape symbols, as the kernel names them)
                self.emit(f"tl::tma_load_tile<{c_type(b.dtype)}, {load.rows}, {load.cols}, 2>({self.smem_pointer(b.name)}, "
                          f"&tl_map{load.map_index}, {bar}, {c}, ({n} * {H} + {y}) * {W} + {x}, {{0}});")
                continue
            if load.im2col:  # the pixels' input positions at the kernel position: a box a column segment
                t = load.im2col
                b = self.buffers[self.ws_dst(load)]
                c, x, y, n = (self.expr(e) for e in t.coords)
                ox, oy = (self.expr(e) for e in t.offsets)
                self.emit(f"tl::tma_load_im2col<{c_type(b.dtype)}, {load.rows}, {load.cols}>({self.smem_pointer(b.name)}, "
                          f"&tl_map{load.map_index}, {bar}, {c}, {x}, {y}, {n}, {ox}, {oy});")
                continue
            region = load.copy.src
            b = self.buffers[load.copy.dst.name]
            offs = [self.expr(o) for o in region.offsets]
            rank = len(offs)
            lead = ", ".join(offs[:-2]) or "0"
            if load.flat:  # one unswizzled box along the last dimension, its origin innermost first
                self.emit(f"tl::tma_load<{rank}>({self.smem_pointer(b.name)}, &tl_map{load.map_index}, "
                          f"{bar}, {{{', '.join(reversed(offs))}}});")
                continue
            if load.row_axis is not None and load.multicast:  # each block of the cluster loads its part for all
                self.emit(f"tl::tma_load_box_multicast<{c_type(b.dtype)}, {load.rows}, {load.cols}, {rank}, {self.cluster}, "
                          f"{rank - 1 - load.row_axis}>({self.smem_pointer(b.name)}, &tl_map{load.map_index}, "
                          f"{bar}, {{{', '.join(reversed(offs))}}}, tl_rank, tl_share);")
                continue
            if load.row_axis is not None:  # rows along another dimension: the box's origin, innermost first
                self.emit(f"tl::tma_load_box<{c_type(b.dtype)}, {load.rows}, {load.cols}, {rank}>("
                          f"{self.smem_pointer(b.name)}, &tl_map{load.map_index}, {bar}, "
                          f"{{{', '.join(reversed(offs))}}});")
                continue
            if load.multicast:
                self.emit(f"tl::tma_load_tile_multicast<{c_type(b.dtype)}, {load.rows}, {load.cols}, {rank}, "
                          f"{self.cluster}>({self.smem_pointer(b.name)}, &tl_map{load.map_index}, {bar}, "
                          f"{offs[-1]}, {offs[-2]}, {{{lead}}}, tl_rank, tl_share);")
                continue
            self.emit(f"tl::tma_load_tile<{c_type(b.dtype)}, {load.rows}, {load.cols}, {rank}>("
                      f"{self.smem_pointer(b.name)}, &tl_map{load.map_index}, {bar}, {offs[-1]}, "
                      f"{offs[-2]}, {{{lead}}});")

    def emit_tile_loads(self, tma: bool) -> None:
        """The producer's tile loads (WarpSpecialization.tile_loads) into their buffers: through
        the TMA from one thread with their bytes, else element by element from every producer
        thread, each arriving."""
        e = self.emit
        loads = [(self.k.body[x.index], x) for x in self.spec.tile_loads]
        if tma:
            nbytes = sum(x.rows * x.cols * self.buffers[x.buffer].dtype.itemsize for _, x in loads)
            e(f"tl::mbar_arrive_expect_tx(tl_tile_full, {nbytes});")
        for c, x in loads:
            b = self.buffers[x.buffer]
            if tma:
                offs = [self.expr(o) for o in c.src.offsets]
                e(f"tl::tma_load_tile<{c_type(b.dtype)}, {x.rows}, {x.cols}, {len(offs)}>({self.smem_pointer(b.name)}, "
                  f"&tl_map{x.tensor_map}, tl_tile_full, {offs[-1]}, {offs[-2]}, {{{', '.join(offs[:-2]) or '0'}}});")
            else:
                v = self.global_view(c.src)
                e(f"tl::copy_g2s_elements<{c_type(b.dtype)}, {x.rows}, {x.cols}, {self.spec.producer_threads}, "
                  f"{b.layout.pad}, {b.layout.swizzle_bytes}>({self.smem_pointer(b.name)}, {v.base}, {v.stride}, "
                  f"{v.rows}, {v.cols}, {v.row0}, {v.col0}, tl_worker);")
        if not tma:
            e("tl::fence_proxy_async();  // plain stores, read next by the tensor cores")
            e("tl::mbar_arrive(tl_tile_full);")

    def ws_dst(self, load) -> str:
        """The staged buffer a producer's load fills."""
        from ...schedule.gather_rows import dst_name
        return dst_name(load.copy)

    def emit_element_loads(self, w: WarpSpecPlan, loads=None, arrive: bool = True) -> None:
        if loads is None and arrive and self.spec.late_loads:  # the early loads, then the late ones on their own barriers
            early, late = self.late_split(w, w.loads)
            self.emit_element_loads(w, early)
            self.emit(f"tl::mbar_wait(tl_empty_late + tl_stage, ((tl_it / {w.pipeline.stages}) & 1) ^ 1);  "
                      "// the consumers' deferred gemm released its late loads")
            self.emit_element_loads(w, late, arrive=False)
            self.emit("tl::fence_proxy_async();  // plain stores, read next by the tensor cores")
            self.emit("tl::mbar_arrive(tl_full_late + tl_stage);")
            return
        for load in w.loads if loads is None else loads:
            if load.im2col:  # no map (the tile's columns span kernel positions): the threads gather it
                from ...schedule.gather_rows import row_gather
                self.gather_async(row_gather(load.copy, self.params, self.buffers), "tl_worker",
                                  self.spec.producer_threads)
                self.emit("tl::cp_async_commit();")
                self.emit("tl::cp_async_wait<0>();  // landed before this thread's arrival")
                continue
            v = self.global_view(load.copy.src)
            b = self.buffers[load.copy.dst.name]
            self.emit(f"tl::copy_g2s_elements<{c_type(b.dtype)}, {load.rows}, {load.cols}, {self.spec.producer_threads}, "
                      f"{b.layout.pad}, {b.layout.swizzle_bytes}>({self.smem_pointer(b.name)}, {v.base}, {v.stride}, "
                      f"{v.rows}, {v.cols}, {v.row0}, {v.col0}, tl_worker);")
        if arrive:
            self.emit("tl::fence_proxy_async();  // plain stores, read next by the tensor cores")
            self.emit("tl::mbar_arrive(tl_full + tl_stage);")
