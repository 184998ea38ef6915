"""Where a reduction's partials meet: the lane bits a fragment's reduction shuffles over and
whether that completes it in registers (no shared scratch, no barrier), found by enumerating
the layouts.  The scheduler asks (a warp-specialized consumer must never wait for the whole
block: `schedule/warpspec.py`); the code generator renders the plan (`codegen/reductions.py`)."""
from __future__ import annotations

import functools
import itertools

from .. import ir
from ..frozen import frozen
from .layout import Replicated


def holders(kept: Replicated, threads: int) -> dict:
    """(thread, slot) -> the kept index that slot holds in that thread, for every valid slot
    (by enumerating the base layout's owners)."""
    base = kept.base
    inverse = {}
    for idx in itertools.product(*(range(d) for d in base.shape)):
        inverse[base.owner(idx)] = idx
    out = {}
    for t in range(threads):
        for s in range(kept.registers):
            idx = inverse.get((t, kept.rep(s)))
            if idx is not None:
                out[(t, s)] = kept.kept_index(idx)
    return out


@frozen
class SlotPlan:
    mask: int       # lane bits whose lanes hold the same kept index in every slot
    complete: bool  # every holder of a kept index is in one group of lanes: no scratch needed
    warp_rows: bool  # whole warps are groups, and lane 0 holds each kept index once
    every_warp: bool  # every warp holds every kept index (its scratch row needs no init)
    parts: int = 0  # else: the threads in this many equal blocks, each holding every kept index
    #                 in one group of lanes and one slot (a scratch row a block, no atomics), or 0


@functools.lru_cache(maxsize=256)
def slot_plan(kept: Replicated, threads: int) -> SlotPlan:
    held = holders(kept, threads)
    nslots = kept.registers
    mask = 0
    for bit in range(5):
        m = 1 << bit
        if m >= threads:
            break
        if all(held.get((t, s)) == held.get((t ^ m, s)) for t in range(threads) for s in range(nslots)):
            mask |= m
    groups: dict = {}
    for (t, _), k in held.items():
        groups.setdefault(k, set()).add(t & ~mask)
    complete = all(len(g) == 1 for g in groups.values())
    lane0 = [[held[(t, s)] for s in range(nslots) if (t, s) in held] for t in range(0, threads, 32)]
    warp_rows = mask == 31 and all(len(ks) == len(set(ks)) for ks in lane0)
    every = set(groups)
    every_warp = all(set(ks) == every for ks in lane0)
    parts = 0 if complete or warp_rows else _parts(held, mask, threads, every)
    return SlotPlan(mask, complete, warp_rows, every_warp, parts)


def _parts(held: dict, mask: int, threads: int, every: set) -> int:
    """The fewest equal blocks of whole warps (2 or more) in each of which every kept index is
    held by exactly one lane group, in one slot: the warpgroups side by side of a column-split
    wgmma accumulator (MLA decode's scores, each row in one quad of each warpgroup).  Lane
    (t & mask) == 0 of each group then writes its block's scratch row without atomics, the
    block's rows meet after one barrier.  0 when no such split exists."""
    for parts in range(2, threads // 32 + 1):
        if threads % parts or (threads // parts) % 32:
            continue
        size = threads // parts
        seen = [dict() for _ in range(parts)]
        ok = True
        for (t, s), k in held.items():
            if t & mask:
                continue
            block = seen[t // size]
            if k in block:
                ok = False
                break
            block[k] = (t, s)
        if ok and all(set(b) == every for b in seen):
            return parts
    return 0


def reduces_in_registers(r: ir.Reduce, buffers: dict, threads: int) -> bool:
    """Whether reduction `r` completes in registers: a fragment source whose holders of each
    kept index are one group of lanes, into a fragment in the kept (replicated) layout."""
    src, dst = buffers[r.src], buffers[r.dst]
    if src.scope != "fragment" or dst.scope != "fragment" or isinstance(src.layout, Replicated) \
            or len(src.shape) > 2:
        return False
    kept = Replicated(src.layout, (r.dim,))
    return dst.layout == kept and slot_plan(kept, threads).complete
