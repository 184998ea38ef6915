"""The barriers among a warp-specialized ring's consumers, the decisions (schedule/warpspec.py's
planner asks them), where their loop meets through shared memory (`meets_in_shared`: MLA decode's
warpgroups side by side, sharing their rows' statistics and probabilities): which of its syncs
stay barriers (`kept_syncs`), which move down to the next shared write (`later_syncs`), which
only order reads and so are arrivals of the writers alone (`arrivals`), which exchanging loops
need a barrier after them (`exchanges`), and where each consumer warpgroup writes the rows its
own wgmma reads and meets at a barrier of its own (`warpgroup_syncs`).  Each a function of the
loop's statements and the kernel's buffers and threads."""

from __future__ import annotations

from dataclasses import replace

from .. import ir
from ..ir.walk import statements
from .gemm_overlap import buffers_read, buffers_written, wgmma_ready
from .layout import MmaAccumulator
from .one_warpgroup import exchange_writers, statement_threads
from .reduce_slots import reduces_in_registers


def meets_in_shared(stmts, buffers: dict, threads: int) -> bool:
    """Whether the consumers' statements meet through shared memory (consumer_sync): a
    reduction that does not complete in registers, a fragment copied into a shared buffer,
    a sync that orders such writes before their reads."""
    for s in statements(stmts):
        if isinstance(s, ir.Reduce) and not reduces_in_registers(s, buffers, threads):
            return True
        if isinstance(s, ir.Copy) and fragment_into_shared(s, buffers):
            return True
        if exchanges_fragments(s):
            return True
    return False


def kept_syncs(body: list, start: int, stop: int, buffers: dict, threads: int) -> tuple:
    """The syncs among body[start:stop] (the consumers') that must stay barriers.  A sync is
    left out where (a) every shared write before it in the iteration is already followed by
    a barrier (a kept sync, a reduction through scratch: its writers fence and meet there)
    and (b) a barrier comes before the next shared write after it, the next iteration's
    included (that barrier orders the reads after the sync before the write).  MLA decode:
    the sync after its cleared scores, and the one before P @ V when P is stored before the
    row sum, whose reduction's barrier then orders P's stores before the gemm reads them."""
    kept = []
    pending = False  # a shared write no barrier has followed yet
    for i in range(start, stop):
        s = body[i]
        if isinstance(s, ir.Sync):
            if pending or not _barrier_before_write(body[i + 1:stop] + body[start:i], buffers, threads):
                kept.append(i)
                pending = False
            continue
        if _meets(s, buffers, threads):
            pending = False  # (an exchange's own scratch write comes before its barrier)
        if _writes_shared(s, buffers, threads):
            pending = True
    return tuple(kept)


def later_syncs(loop: ir.For, start: int, stop: int, buffers: dict, threads: int) -> ir.For:
    """`loop` with each of the consumers' syncs that orders no shared write (none since the
    last barrier, the last iteration's included) moved down to just before the next
    statement that writes shared memory (where one comes before the next barrier): it still orders the reads
    above it (the other warpgroups' of the last iteration) before that write, and what it
    passes runs without waiting (one_warpgroup.py: warpgroup 0's scores and softmax of a
    page while warpgroup 1 finishes its P @ V of the last)."""
    body = list(loop.body)
    pending = False  # a shared write no barrier has followed yet: at the start, the iteration's tail's
    for s in body[start:stop]:
        if isinstance(s, ir.Sync) or _meets(s, buffers, threads):
            pending = False
        elif _writes_shared(s, buffers, threads):
            pending = True
    i = start
    while i < stop:
        s = body[i]
        if isinstance(s, ir.Sync):
            j = i + 1
            while not pending and j < stop and not (isinstance(body[j], ir.Sync) or _meets(body[j], buffers, threads)
                                                    or _writes_shared(body[j], buffers, threads)):
                j += 1
            if j < stop and _writes_shared(body[j], buffers, threads) and not _meets(body[j], buffers, threads):
                body.insert(j - 1, body.pop(i))
                i = j - 1
            pending = False
            i += 1
            continue
        if _meets(s, buffers, threads):
            pending = False
        elif _writes_shared(s, buffers, threads):
            pending = True
        i += 1
    return replace(loop, body=tuple(body))


def arrivals(body: list, start: int, stop: int, kept: tuple, kernel: ir.Kernel, buffers: dict) -> tuple:
    """The kept syncs that order only reads before them (WarpSpecialization.arrivals), each
    with the threads below which the shared writes after it, up to the next barrier, are
    made (one_warpgroup.statement_threads; an exchange's writes its holders'), where that
    is less than the consumers'."""
    threads = kernel.threads
    pending = False  # a shared write no barrier has followed yet (the iteration's tail's at the start)
    for j in range(start, stop):
        if isinstance(body[j], ir.Sync) and j in kept or _meets(body[j], buffers, threads):
            pending = False
        elif _writes_shared(body[j], buffers, threads):
            pending = True
    out = []
    for i in range(start, stop):
        s = body[i]
        if isinstance(s, ir.Sync) and i in kept and not pending:
            writers = 0
            for x in body[i + 1:stop]:
                if isinstance(x, ir.Sync):
                    break
                if exchanges_fragments(x):
                    writers = max(writers, exchange_writers(x, buffers, threads))
                    break
                if _writes_shared(x, buffers, threads) or _meets(x, buffers, threads):
                    writers = max(writers, statement_threads(x, kernel, buffers))
                if _meets(x, buffers, threads):
                    break
            if 0 < writers < threads:
                out.append((i, writers))
        if isinstance(s, ir.Sync) and i in kept or _meets(s, buffers, threads):
            pending = False
        elif _writes_shared(s, buffers, threads):
            pending = True
    return tuple(out)


def exchanges(body: list, start: int, stop: int, buffers: dict, threads: int) -> tuple:
    """The consumers' exchanging loops (WarpSpecialization.exchanges), each with whether a
    barrier must follow it: none where one comes before the next shared write."""
    return tuple((j, not _barrier_before_write(body[j + 1:stop] + body[start:j + 1], buffers, threads))
                 for j in range(start, stop) if exchanges_fragments(body[j]))


def warpgroup_syncs(body: list, start: int, stop: int, buffers: dict, threads: int) -> tuple | None:
    """The syncs among body[start:stop] before a gemm that reads a fragment each consumer
    warpgroup copied into shared memory, rows it alone writes and its own wgmma alone
    reads (WarpSpecialization.warpgroup_syncs), where every shared write of the body is
    such a copy; else None."""
    stmts = body[start:stop]
    syncs = []
    for i, s in enumerate(stmts):
        if isinstance(s, ir.Reduce) and reduces_through_scratch(s, buffers, threads):
            return None
        if not _writes_shared(s, buffers, threads):
            continue
        if not (isinstance(s, ir.Copy) and fragment_into_shared(s, buffers) and _private_rows(s, stmts, buffers, threads)):
            return None
        j = next((j for j in range(i + 1, len(stmts)) if isinstance(stmts[j], (ir.Sync, ir.Gemm))), None)
        if j is None or not isinstance(stmts[j], ir.Sync):
            return None
        syncs.append(start + j)
    return tuple(syncs) or None


def exchanges_fragments(s) -> bool:
    """A parallel loop that reads fragments other threads hold through shared memory."""
    return isinstance(s, ir.Parallel) and bool(s.exchange)


def reduces_through_scratch(r: ir.Reduce, buffers: dict, threads: int) -> bool:
    """A reduction of a fragment that does not complete in registers: its threads meet through a
    shared scratch, behind a barrier."""
    return buffers[r.src].scope == "fragment" and not reduces_in_registers(r, buffers, threads)


def fragment_into_shared(c: ir.Copy, buffers: dict) -> bool:
    """A copy of a whole fragment into an unstaged shared buffer (MLA decode's P for P @ V)."""
    src, dst = buffers.get(c.src.name), buffers.get(c.dst.name)
    return (src is not None and dst is not None and src.scope == "fragment" and dst.scope == "shared"
            and dst.layout.stages <= 1 and isinstance(c.src, ir.BufferRef) and isinstance(c.dst, ir.BufferRef))


def _private_rows(c: ir.Copy, stmts, buffers: dict, threads: int) -> bool:
    """Whether each consumer warpgroup writes, by fragment copy `c`, the rows of the shared
    buffer its own wgmma reads as A: the fragment's rows split over the warps alone (a
    warpgroup's 64-row bands, as wgmma's accumulator), the buffer read only as the A of
    wgmma gemms from shared memory of as many rows."""
    src, dst = buffers[c.src.name], buffers[c.dst.name]
    lay = src.layout
    if not (isinstance(lay, MmaAccumulator) and lay.warps_n == 1 and not lay.wgmma_columns
            and lay.warps_m * 32 == threads and src.shape[0] % (64 * (threads // 128)) == 0):
        return False
    for x in statements(stmts):
        if x is c or dst.name not in buffers_read(x):
            continue
        if not (isinstance(x, ir.Gemm) and x.a == dst.name and x.b != dst.name and not x.trans_a
                and wgmma_ready(x, buffers, threads) and buffers[x.c].shape[0] == src.shape[0]):
            return False
    return True


def _barrier_before_write(stmts, buffers: dict, threads: int) -> bool:
    """Whether a barrier (a sync, a reduction through scratch) comes before the first shared
    write among `stmts`."""
    for s in stmts:
        if exchanges_fragments(s):
            return False  # its scratch is written before its barrier
        if isinstance(s, ir.Sync) or (isinstance(s, ir.Reduce) and reduces_through_scratch(s, buffers, threads)):
            return True
        if _writes_shared(s, buffers, threads):
            return False
    return False


def _meets(s, buffers: dict, threads: int) -> bool:
    """A statement whose threads meet at a barrier after their shared writes: a reduction
    through scratch, an exchange."""
    return (isinstance(s, ir.Reduce) and reduces_through_scratch(s, buffers, threads)) or exchanges_fragments(s)


def _writes_shared(s, buffers: dict, threads: int) -> bool:
    """Whether statement `s` (or what it holds) writes shared memory."""
    if isinstance(s, ir.Reduce) and reduces_through_scratch(s, buffers, threads):
        return buffers[s.dst].scope == "shared"  # (its scratch is double-buffered)
    return any(buffers[n].scope == "shared" for n in buffers_written(s) if n in buffers) or any(
        isinstance(x, ir.Copy) and x.dst.name in buffers and buffers[x.dst.name].scope == "shared"
        for x in statements([s]))
