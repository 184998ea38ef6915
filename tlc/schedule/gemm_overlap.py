"""The wgmma gemms of a warp-specialized ring's consumers that run on the tensor cores under
other work, the decisions (schedule/warpspec.py's planner asks them): whether a gemm runs on
wgmma at all (`wgmma_ready`, `wgmma_rs_ready`); the loop's last gemm deferred one iteration past
its first (`deferred_gemm`, ir.DeferredGemm: attention's P @ V under the next softmax), the
statements that may run right before its issue (`before_issue`) and the loads it alone reads,
released apart (`late_loads`); the body's last gemms carried in flight into the next iteration
(`carried_gemms`: attention's backward); and how many of the gemms in flight a statement must
wait for (`gemm_waits`, which codegen/sm90.py's consumer loop emits its waits by).  Each a
function of the loop's statements and the kernel's buffers, built on the buffers a statement
reads and writes (`buffers_read`, `buffers_written`)."""

from __future__ import annotations

from .. import ir
from ..ir.walk import assigned_scalars, loads, statement_exprs, statements, variables, written_names
from ..ir.warpspec import DeferredGemm
from .layout import wgmma_accumulator, wgmma_gemm
from .one_warpgroup import owner_threads
from .operand_layout import register_a_layouts, wgmma_register_a


def wgmma_ready(g: ir.Gemm, buffers: dict, threads: int) -> bool:
    """Whether gemm `g` runs on wgmma with both operands in shared memory: its accumulator laid
    out for it, A and B 128-byte swizzled."""
    c = buffers[g.c]
    threads = owner_threads(c.layout, threads)  # (a product on one warpgroup: one_warpgroup.py)
    if not wgmma_gemm(g, buffers, threads) or c.layout != wgmma_accumulator(c.shape, threads):
        return False
    return all(buffers[x].layout.swizzle_bytes == 128 for x in (g.a, g.b))


def wgmma_rs_ready(g: ir.Gemm, buffers: dict, threads: int) -> bool:
    """Whether gemm `g` runs on wgmma with A in registers (attention's probabilities): A a
    fragment in wgmma's register-A layout, its accumulator in wgmma's, B in 128-byte swizzled
    shared memory (schedule/operand_layout.py)."""
    a, b = buffers[g.a], buffers[g.b]
    if a.scope != "fragment" or b.scope != "shared" or not wgmma_register_a(g, buffers, threads):
        return False
    pair = register_a_layouts(g, buffers, threads, "sm_90a")
    return pair == (a.layout, buffers[g.c].layout) and b.layout.swizzle_bytes == 128


def wgmma_any(g: ir.Gemm, buffers: dict, threads: int) -> bool:
    """Whether gemm `g` runs on wgmma, its A in shared memory or in registers."""
    return wgmma_ready(g, buffers, threads) or wgmma_rs_ready(g, buffers, threads)


def deferred_gemm(body: list, start: int, stop: int, buffers: dict, threads: int,
                  loop_var: str) -> DeferredGemm | None:
    """The consumers' last statement run one iteration late (ir.DeferredGemm), where it is a
    wgmma gemm that an earlier wgmma gemm of the loop can run ahead of: the earlier one, and
    everything before it, neither write what the last reads nor touch its accumulator.
    Then the last gemm of iteration it - 1 runs on the tensor cores under iteration it's
    work between the two (attention's softmax, FlashAttention 3's intra-warpgroup overlap)
    where each warpgroup would otherwise leave them idle for it."""
    last = body[stop - 1] if stop > start else None
    if not isinstance(last, ir.Gemm) or not wgmma_any(last, buffers, threads):
        return None
    first = next((i for i in range(start, stop - 1) if isinstance(body[i], ir.Gemm)), None)
    if first is None or not wgmma_any(body[first], buffers, threads):
        return None
    # its operands that the iteration writes: a fragment A, or a shared one the consumers
    # fill (not through the ring), which the next iteration must not overwrite before the
    # deferred gemm has read it
    written = set().union(*(buffers_written(s) for s in body[start:stop - 1]))
    operands = {last.c} | {x for x in (last.a, last.b) if buffers[x].scope == "fragment" or x in written}
    if any(operands & buffers_written(s) for s in body[start:first + 1]) or last.c in {body[first].a, body[first].b}:
        return None
    if any(isinstance(x, ir.Gemm) for s in body[first + 1:stop - 1] for x in statements([s])):
        return None  # one gemm ahead of the deferred one, the wait counts on it
    wait = next((i for i in range(first + 1, stop - 1) if (last.c in buffers_written(body[i]) or
                 last.c in buffers_read(body[i]) or (operands - {last.c}) & buffers_written(body[i]))), stop - 1)
    wait = earlier_wait(body, first, wait, stop)
    # ping-pong: two (or three: FlashAttention 3's 192-row tiles at head dim 64) warpgroups
    # whose accumulators hold rows of their own (not the columns of one row block split
    # between them) never wait for each other in the loop, but take turns to issue
    own_rows = not any(getattr(buffers[g.c].layout, "wgmma_columns", False) for g in (last, body[first]))
    return DeferredGemm(stop - 1, first, wait, pingpong=threads in (256, 384) and own_rows,
                        before_issue=before_issue(body, start, stop, first, wait, buffers, loop_var))


# Where the deferred gemm is waited for.  "first_use" (the default): before the first statement
# that needs it (attention's copy(scores, probs), writing its A), so that every statement before
# runs under it.  Until then the iteration's values live beside its operands and accumulator,
# which the tensor cores hold: FlashAttention 3's 192 x 128 tile at head dim 64 (three consumer
# warpgroups, setmaxnreg 160) keeps 64 f32 exponentials, 32 registers of P and 32 of O a thread,
# and ptxas -v (sm_90a, nvcc 13.0) spills 4 bytes full, 12 causal (f16 and bf16), where 96 keys
# do not.  "after_last_write": before the statements after the last one that writes what that
# statement reads (attention's row sum of the exponentials: they run after the wait, their
# exponentials converted into P's registers as the sum reads them): no spills full, 12 bytes
# causal.  "before_last_write": before that statement (the exponentials): no spills full or
# causal; the product then runs under the mask and the row max alone.  Not yet timed on the GPU
# (bench/queue/A_fwd_d64_bn128.sh), so not the default.
DEFERRED_WAIT = "first_use"


def earlier_wait(body: list, first: int, wait: int, stop: int) -> int:
    """The index of the statement before which the deferred gemm is waited for, as DEFERRED_WAIT
    says, `wait` being the first that needs it and `first` the gemm it runs behind."""
    if DEFERRED_WAIT == "first_use" or wait >= stop - 1:
        return wait
    reads = buffers_read(body[wait])
    writer = next((i for i in range(wait - 1, first, -1) if buffers_written(body[i]) & reads), None)
    if writer is None:
        return wait
    return writer + 1 if DEFERRED_WAIT == "after_last_write" else writer


def before_issue(body: list, start: int, stop: int, first: int, wait: int, buffers: dict, loop_var: str) -> tuple:
    """The statements after `wait` that may run right before the deferred gemm's issue in the
    next iteration (DeferredGemm.before_issue): a parallel loop over fragments that writes only
    the deferred gemm's accumulator (attention's acc *= rescale), reading no scalar the loop
    sets, where nothing after it in the iteration, nor before the deferred gemm's issue in the
    next one (the statements up to the first gemm), touches that accumulator or writes what
    it reads."""
    c = body[stop - 1].c
    loop_set = assigned_scalars(body) | {loop_var}
    out = []
    for i in range(wait, stop - 1):
        s = body[i]
        if not isinstance(s, ir.Parallel) or buffers_written(s) != {c} or s.stores:
            continue
        reads = buffers_read(s) - {c}
        if any(buffers[n].scope != "fragment" for n in reads if n in buffers) or reads - set(buffers):
            continue
        if {v.name for x in statements([s]) for e in statement_exprs(x) for v in variables(e)} & loop_set:
            continue
        later = list(body[i + 1:stop - 1]) + list(body[start:first + 1])
        if any(c in buffers_written(x) | buffers_read(x) or reads & buffers_written(x) for x in later):
            continue
        out.append(i)
    return tuple(out)


def late_loads(loads, body: list, start: int, stop: int, d: DeferredGemm) -> tuple:
    """The loads (positions in `loads`) that deferred gemm `d` alone of the consumers'
    statements body[start:stop] reads, where every other load is read only up to its first
    gemm (`d.after`): attention's V, read by P @ V, and K, read by S = Q @ K.T alone.  Their
    stages can be released apart (WarpSpecialization.late_loads), the others' as soon as that
    first gemm is done.  TMA tiles only (a gather's arrivals are its threads'); () if none."""
    late, early = [], []
    for j, x in enumerate(loads):
        if x.gather or x.im2col or x.flat or x.multicast:
            return ()
        readers = [i for i in range(start, stop) if x.buffer in buffers_read(body[i])]
        if readers == [d.gemm]:
            late.append(j)
        elif readers and max(readers) <= d.after and d.gemm not in readers:
            early.append(j)
        else:
            return ()
    return tuple(late) if late and early else ()


def gemm_waits(pending: list, stmts, issuing, buffers: dict, threads: int) -> int:
    """How many of the `pending` wgmma gemms (issued, not yet waited for, oldest first) must be
    complete before `stmts` run (or before the gemm `issuing`, issued next): those whose
    accumulator they read or write, whose operands they write; a statement holding a gemm or
    a sync inside it waits for all.  (A wait completes the oldest groups first.)"""
    need = 0
    for k, g in enumerate(pending):
        for s in stmts:
            if isinstance(s, ir.Sync):
                continue  # a comment in a ring's body: the stage's full barrier ordered the copies
            if s is issuing:
                hit = g.c in (s.a, s.b) or s.c in (g.a, g.b) or (s.c == g.c and not wgmma_ready(g, buffers, threads))
            else:
                inner = [x for x in statements([s]) if isinstance(x, (ir.Gemm, ir.Sync))]
                written = buffers_written(s)
                hit = bool(inner) or g.c in (buffers_read(s) | written) or bool({g.a, g.b} & written)
            if hit:
                need = k + 1
    return need


def _issued_at_end(body, buffers: dict, threads: int, pending: list) -> list:
    """The wgmma gemms still in flight after `body` (a ring's consumer statements) when each is
    issued without waiting and waited for only where `gemm_waits` says, `pending` in flight
    before it (as codegen/sm90.py's consumer_block emits them)."""
    pending = [(False, g) for g in pending]  # (issued by this body, the gemm)
    for s in body:
        lazy = isinstance(s, ir.Gemm) and (wgmma_ready(s, buffers, threads) or wgmma_rs_ready(s, buffers, threads))
        del pending[:gemm_waits([g for _, g in pending], [s], s if lazy else None, buffers, threads)]
        if lazy:
            pending.append((True, s))
    return pending


def carried_gemms(body: list, buffers: dict, threads: int) -> tuple:
    """The gemms of a ring's consumer statements `body` that may stay in flight past the end of
    an iteration, or (): those issued after its last wait, where the next iteration waits for
    each of them before it ends (so that their stage can be released there) and ends with the
    same ones in flight.  Attention's backward: dV += P.T @ dO and dK += dS.T @ Q, which the
    next iteration's wait for its scores covers; the tensor cores run them under its first
    products' issue rather than draining at every step's end."""
    end = [g for _, g in _issued_at_end(body, buffers, threads, [])]
    # the last ones with A in shared memory: in flight across the next iteration's scores, a
    # register A (P's or dS's) is more registers than a warpgroup has (ptxas's C7512)
    n = 0
    while n < len(end) and wgmma_ready(end[len(end) - 1 - n], buffers, threads):
        n += 1
    carried = end[len(end) - n:]
    again = _issued_at_end(body, buffers, threads, carried)
    if not carried or not all(new for new, _ in again) or [id(g) for _, g in again] != [id(g) for g in end]:
        return ()
    return tuple(carried)


def ring_carried_gemms(kernel: ir.Kernel) -> tuple:
    """`carried_gemms` of the warp-specialized ring's consumer statements, where its schedule lets
    gemms be carried: a stage released one iteration late, no deferred gemm, more statements than
    one gemm kept in flight whole; () otherwise."""
    spec = kernel.warp_spec
    start, stop = spec.consumer if spec is not None else (0, 0)
    if spec is None or spec.release_lag != 1 or spec.deferred is not None or stop - start == 1:
        return ()
    body = list(kernel.body[spec.loop].body[start:stop])
    return carried_gemms(body, {b.name: b for b in kernel.buffers}, kernel.threads)


def buffers_touched(stmts) -> set:
    """The buffers the statements read or write."""
    out: set = set()
    for s in statements(stmts):
        out |= buffers_written(s) | buffers_read(s)
    return out


def buffers_written(s) -> set:
    """The buffers statement `s` (and what it holds) writes."""
    out = set(written_names([s]))
    for x in statements([s]):
        if isinstance(x, ir.Fill):
            out.add(x.buffer)
        elif isinstance(x, ir.Gemm):
            out.add(x.c)
        elif isinstance(x, (ir.Reduce, ir.Scan)):
            out.add(x.dst)
    return out


def buffers_read(s) -> set:
    """The buffers statement `s` (and what it holds) reads."""
    out = set()
    for x in statements([s]):
        out |= {v.name for e in statement_exprs(x) for v in loads(e)}
        if isinstance(x, ir.Copy):
            out.add(x.src.name)
        elif isinstance(x, ir.Gemm):
            out |= {x.a, x.b, x.c}
        elif isinstance(x, (ir.Reduce, ir.Scan)):
            out.add(x.src)
    return out
