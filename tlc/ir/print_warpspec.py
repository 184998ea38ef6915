"""The text of a kernel's warp specialization in `--emit ir` (printer.py calls these): the
roles, the ring's stages and barriers, the tile order and the tensor maps under the launch
line, and a comment before each statement of the ring saying which role runs it."""
from __future__ import annotations

from .nodes import Atomic, Kernel, Sync
from .warpspec import CONSUMER_BARRIER, WarpSpecialization, turn_barrier


def header_lines(k: Kernel) -> list[str]:
    ws: WarpSpecialization = k.warp_spec
    loop, S, T, P = k.body[ws.loop], ws.stages, k.threads, ws.producer_threads
    cluster = ws.tile_order.cluster if ws.tile_order is not None else 1
    copies = ", ".join(f"{'gathered rows' if x.gather else ('rows of ' if x.tiled else 'im2col of ') + x.im2col.img if x.im2col else loop.body[x.index].src.name} -> {x.buffer}"
                       for x in ws.loads)
    if ws.late_loads:
        release = f"empty[it % {S}] once statement {ws.deferred.after}'s gemm is done"
    elif ws.release_lag:
        release = f"empty[(it + {S - ws.release_lag}) % {S}] (a stage {ws.release_lag} iteration late: its wgmma stays in flight)"
    else:
        release = f"empty[it % {S}]"
    if any(x.gather for x in ws.loads):
        full = (f"{ws.full_arrivals} arrivals: each producer thread's once its cp.async vectors landed, one a producer "
                f"warp{', and 1 with the bytes of the TMA' if ws.tensor_maps else ''}")
    else:
        full = f"TMA: 1 arrival and the stage's bytes, else {ws.full_arrivals} arrivals"
    # the generic build's split where it differs (an im2col load's fallback gathers rows)
    generic = ["", ""] if ws.generic_registers is None else [f" ({n} in the generic build: the producer may gather)"
                                                              for n in ws.generic_registers]
    regs = [f"setmaxnreg {ws.producer_registers}{generic[0]}", f"setmaxnreg {ws.consumer_registers}{generic[1]}"] \
        if ws.blocks_per_sm == 1 else [f"{ws.producer_registers} registers", f"{ws.consumer_registers} registers"]
    out = [f"warp specialized: loop {loop.var} becomes a ring of {S} stages, it = its iterations counted "
           f"{'across tiles' if ws.tile_order is not None else 'from 0'}",
           f"  producer: threads {T}..{T + P - 1}, {regs[0]}; waits empty[it % {S}] "
           f"(phase (it / {S} & 1) ^ 1), copies {copies} into stage it % {S}, completes full[it % {S}]",
           f"  consumers: threads 0..{T - 1} ({T // 128} warpgroup{'s' * (T > 128)}), {regs[1]}; "
           f"wait full[it % {S}] (phase it / {S} & 1), run the loop's other statements on stage it % {S}, "
           f"release {release}",
           f"  barriers: full[{S}] @{ws.barriers} ({full}), empty[{S}] @{ws.barriers + 8 * S} ({ws.empty_arrivals} arrivals: one per consumer warp"
           f"{' of the cluster' if cluster > 1 else ''})"]
    if ws.late_loads:
        late = ", ".join(f"{loop.body[ws.loads[j].index].src.name} -> {ws.loads[j].buffer}" for j in ws.late_loads)
        out.append(f"  late loads: {late} on barriers of their own, full_late[{S}] @{ws.late_barriers} and empty_late[{S}] "
                   f"@{ws.late_barriers + 8 * S}: the producer waits empty_late[it % {S}] before them, the consumers wait "
                   f"full_late[(it - 1) % {S}] before the deferred gemm and release empty_late[(it - 1) % {S}] once it is done")
    if ws.warpgroup_syncs:
        out.append(f"  each consumer warpgroup meets at named barrier 6 + its index (128 threads) alone: its copies into "
                   f"shared memory are the rows its own wgmma reads; the loop's syncs kept as it: statements "
                   f"{', '.join(map(str, ws.warpgroup_syncs))}, the others left out")
    elif ws.consumer_barrier:
        out.append(f"  consumers meet at named barrier {ws.consumer_barrier} ({T} threads): their reductions through "
                   f"shared scratch and their copies into shared memory, before what reads them; the loop's syncs "
                   f"kept as it: statements {', '.join(map(str, ws.kept_syncs)) or 'none'}")
        for i, w in ws.arrivals:
            out.append(f"  arrivals: at statement {i} threads {w}..{T - 1} only arrive (named barrier 8: they write no "
                       f"shared memory before the next barrier), threads 0..{w - 1} wait")
        for i, after in ws.exchanges:
            names = ", ".join(n for n, _ in k.body[ws.loop].body[i].exchange)
            out.append(f"  exchange: statement {i} reads {names} through scratch after the ring's barriers, its holders' "
                       f"writes met at named barrier {ws.consumer_barrier}" +
                       (", and a barrier after it" if after else ", read before a kept sync precedes the next write"))
    if ws.deferred is not None:
        d = ws.deferred
        out.append(f"  deferred: the loop's last gemm (statement {d.gemm}) of iteration it - 1 is issued right after "
                   f"statement {d.after}'s gemm of iteration it, on stage (it - 1) % {S}, and waited for before "
                   f"statement {d.wait}; the last iteration's after the loop"
                   + (f"; statement{'s' * (len(d.before_issue) > 1)} {', '.join(map(str, d.before_issue))} (its "
                      f"accumulator's scaling) run{'s' * (len(d.before_issue) == 1)} right before it is issued"
                      if d.before_issue else "")
                   + (f"; the {T // 128} consumer warpgroups take turns to issue both gemms, in warpgroup order "
                      f"(named barriers {turn_barrier(T // 128)}..{turn_barrier(T // 128) + T // 128 - 1})"
                      if d.pingpong else ""))
    if ws.rolled:
        out.append("  rolled: both roles' loops kept rolled (their body is one wgmma gemm)")
    if ws.tile_order is not None:
        shared = [x.buffer for x in ws.loads if x.multicast]
        if ws.tile_order.pairs:
            out.append("  persistent: the grid counts tiles, each block walks them two at a time, x from both ends of "
                       "its row (their loop lengths grow with x: each pair's work about the same)")
        elif ws.tile_order.dynamic:
            out.append(f"  persistent: the grid counts tiles, each block takes its next from a counter in device "
                       f"memory (the producer's atomic add, handed to the consumers through slots @{ws.sched_offset + 32} "
                       f"behind full[2] @{ws.sched_offset} and empty[2] @{ws.sched_offset + 16}), x from its end down "
                       f"then y then z (their loop lengths grow with x: the shortest taken last); the last block "
                       f"sets the counter back to 0")
        else:
            out.append(f"  persistent: the grid counts tiles, each block walks them in groups of {ws.tile_order.group} "
                       f"rows of tiles" + (f", clusters of {cluster} (multicast {', '.join(shared)})" if cluster > 1 else "")
                       + (f"; up to {ws.blocks_per_sm} blocks an SM (as many as the SMs hold: no setmaxnreg)"
                          if ws.blocks_per_sm > 1 else ""))
    if ws.split_k is not None:
        sk = ws.split_k
        out.append(f"  split-K: the walk's z is the part of K ({sk.var}); a part before the last stores {sk.acc} into "
                   f"its slot of {sk.slots} partial tiles and counts itself on its tile's counter (release), the last "
                   f"waits for the count (acquire), adds the slots of parts 0, 1, ... in order, sets the count back "
                   f"to 0 and runs the epilogue")
    if ws.stream_k is not None:
        from .printer import expr as ir_text
        sk = ws.stream_k
        where = "" if sk.sized else "where the launch has one part of K, " if sk.prefer is None else \
            f"where the launch has one part of K or instead of its parts where {ir_text(sk.prefer)} is 1 (the grid's z " \
            f"then a wave's worth), "
        out.append(f"  stream-K: {where}the blocks take "
                   f"tiles whole, then the tail's K steps ({ir_text(sk.steps)} a tile) in even runs (schedule/"
                   f"stream_k.py); a run's first segment that ends a tile stores {sk.acc} into the block's slot of "
                   f"{sk.slots} and counts itself on the tile's counter (release), the segment that starts the tile "
                   f"waits for the count (acquire), adds the slots in block order and runs the epilogue"
                   + (f"; the grid's z ({sk.var}) only sizes the launch to a wave" if sk.sized else ""))
    if ws.tile_loads:
        b = ws.barriers + 16 * S
        out.append(f"  tile loads: the producer copies {', '.join(k.body[x.index].src.name + ' -> ' + x.buffer for x in ws.tile_loads)} "
                   f"once a tile through map{'s' * (len(ws.tile_loads) > 1)} "
                   f"{', '.join('#' + str(x.tensor_map) for x in ws.tile_loads)} after the tile's first stage, completing "
                   f"tile_full @{b}; the consumers wait on it before the loop and arrive on tile_empty @{b + 8} "
                   f"(one per consumer warp) {'in its last iteration once statement ' + str(ws.tile_done) + chr(39) + 's gemm (their only reader) is done' if ws.tile_done is not None else 'after it'}, "
                   f"which the producer waits on before the next tile's")
    maps = ", ".join(f"#{i} {m.param} box {m.box_rows}x{m.box_cols}{' (store)' if m.store else ''}{' (unswizzled)' if not m.swizzle else ''}"
                     f"{f' (rows along dimension {m.row_axis})' if m.row_axis is not None else ''}"
                     f"{_window(m.im2col) if m.im2col else ''}"
                     f"{_view(m.view) if m.view is not None and not m.store else ''}"
                     for i, m in enumerate(ws.tensor_maps))
    out.append(f"  tensor maps: {maps}")
    if ws.store is not None:
        st = ws.store
        if st.in_stage is None:
            also = "".join(f", {k.body[i].src.name} @{st.offset + (0 if st.reuse else (n + 1) * st.nbytes)}"
                           + (" (once the store before has read it)" if st.reuse else "") for n, i in enumerate(st.more))
            out.append(f"  epilogue: {k.body[st.index].src.name} staged @{st.offset} ({st.nbytes} bytes){also}, "
                       f"{st.rows} rows per warpgroup stored through #{st.tensor_map}")
        else:
            out.append(f"  epilogue: {k.body[st.index].src.name} staged in {ws.loads[st.in_stage].buffer}'s stage of the "
                       f"tile's last iteration ({st.nbytes} bytes) once every consumer warp's last statement "
                       f"{ws.tile_done} is done, {st.rows} rows per warpgroup stored through #{st.tensor_map}; the stage "
                       "released once the store has read it (a tile of no iteration: register stores)")
    body = k.body[ws.loop].body
    for x in ws.reduces:
        a = body[x.index].body[0]
        two = ", two buffers the steps take in turn" if x.buffers == 2 else ""
        out.append(f"  bulk reduce: statement {x.index}'s atomic_add of {a.value.name} staged @{x.offset} ({x.nbytes} bytes{two}), "
                   f"added into {a.name} by one thread through #{x.tensor_map} (cp.reduce.async.bulk.tensor .add), "
                   f"the buffer rewritten once the add has read it{'; its turn counted once the add is complete' if _has_turns(body) else ''}")
    return out


def _has_turns(body) -> bool:
    from .walk import statements
    return any(isinstance(s, Atomic) and s.kind == "turn_done" for s in statements(body))


def statement_notes(k: Kernel) -> dict:
    """id of a statement -> the comment printed before it: the role that runs it."""
    ws: WarpSpecialization = k.warp_spec
    if ws is None:
        return {}
    loop = k.body[ws.loop]
    notes = {id(loop): f"ring: {ws.stages} stages, producer and consumers below"}
    for x in ws.loads:
        how = "by cp.async from every producer thread" if x.gather else \
            f"through map #{x.tensor_map}{' (multicast)' if x.multicast else ''}"
        notes[id(loop.body[x.index])] = f"producer: into stage it % {ws.stages} of {x.buffer} {how}"
    start, stop = ws.consumer
    skipped = [i for i in range(len(ws.loads), len(loop.body)) if not start <= i < stop]
    for i in skipped:
        notes[id(loop.body[i])] = "dropped by the consumers: the full barrier orders the copies"
    if stop > start:
        notes[id(loop.body[start])] = f"consumers: on stage it % {ws.stages}"
    for i in ws.consumer_only:
        notes[id(k.body[i])] = f"consumers only (threads 0..{k.threads - 1}): the producer's threads skip it"
    for x in ws.tile_loads:
        notes[id(k.body[x.index])] = f"producer: once a tile, through map #{x.tensor_map} (tile loads)"
    if ws.tile_loads:
        for s in k.body[:ws.loop]:
            if isinstance(s, Sync):
                notes[id(s)] = "left out: the tile loads' barriers order the producer's copy"
    for i in ws.late_copies:
        notes[id(k.body[i])] = (f"consumers only (threads 0..{k.threads - 1}), after the ring's setup while the producer's "
                                f"first copies load; they meet at bar.sync {CONSUMER_BARRIER} after it")
    if ws.late_copies:
        for s in k.body[:ws.loop]:
            if isinstance(s, Sync):
                notes[id(s)] = "left out: the consumers' late copies meet at their own barrier"
    if ws.store is not None:
        for i in (ws.store.index, *ws.store.more):
            notes[id(k.body[i])] = f"consumers: staged in shared memory, stored by the TMA (map #{ws.store.tensor_map})"
    for x in ws.reduces:
        notes[id(loop.body[x.index])] = f"consumers: staged in shared memory, added by the TMA's bulk reduction (map #{x.tensor_map})"
    return notes


def _view(v) -> str:
    """A load's map over a view: the shape the TMA sees (an identity window's image as [N * H * W, C])."""
    from .printer import expr
    return f" (as [{', '.join(expr(d) for d in v.dims)}])"


def _window(w) -> str:
    from .printer import expr
    return (f" (im2col: corners from ({w.lower[0]}, {w.lower[1]}) by ({w.stride[0]}, {w.stride[1]}), "
            f"{expr(w.out[0])} x {expr(w.out[1])} pixels{f', C a multiple of {w.columns}' if w.columns else ''})")
