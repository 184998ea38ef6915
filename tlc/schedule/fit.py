"""Constants that fit: a kernel whose default tiles need more shared memory than the target
has for the dtypes of a call (examples/gemm.tl with f32: 288 KB) is scheduled with smaller
ones instead of failing with E070.

Only constants the caller left at their defaults change: first the pipeline's stages (a
constant given as `pipelined(..., stages=S)`), one at a time, then the largest tile dimension
(a constant that sizes a `shared(...)` buffer), halved; each within what the kernel allows:
the values its `@autotune` lists when it lists some, else powers of two, at least 1 stage and
16 elements.  A candidate the type checker or scheduler refuses (a multiple the code needs) is
passed over.  The kernel chosen says what changed in its `notes` (`--emit ir`); a constant the
caller gave that does not fit stays E070.
"""
from __future__ import annotations

import dataclasses
from dataclasses import replace

from .. import ir, targets
from ..diagnostics import DiagnosticError
from ..ir.walk import statements
from ..parser import nodes as n
from .layout import wgmma_gemm
from .retile import ast_nodes as _walk, retileable
from .smem import SharedMemoryOverLimit, kb

MIN_TILE = 16  # elements: an mma fragment's side, and a 16-byte vector of bytes
MAX_TRIES = 32  # schedules tried before giving up (each is a type check and a schedule)


def schedule_fitting(program, name: str, constants: dict, *, target: str, schedule):
    """`schedule(program, name, constants, target=target)`, or when that needs more shared
    memory than `target` has (E070), the kernel scheduled with the first smaller configuration
    of its default constants that fits; when none does, E070 as first raised, its hint saying
    how far the defaults went.  On a target with wgmma, a default K tile too short for it grows
    to one it takes (`wgmma_k_tile`)."""
    kernel = _fitting(program, name, constants, target=target, schedule=schedule)
    return wgmma_k_tile(program, name, constants, kernel, target=target, schedule=schedule)


def _fitting(program, name: str, constants: dict, *, target: str, schedule):
    try:
        return schedule(program, name, constants, target=target)
    except SharedMemoryOverLimit as e:
        first = e
    fn = program.function(name)
    default = {p.name: p.value for p in fn.params if p.role == "const" and p.has_default}
    stages, tiles = adjustable(fn.node, fn.autotune, {k: v for k, v in default.items() if k not in constants})
    chosen = {k: default[k] for k in (*stages, *tiles)}
    smallest = None  # (the last configuration tried, its E070)
    for _ in range(MAX_TRIES):
        step = _next(chosen, stages, tiles)
        if step is None:
            break
        chosen.update(step)
        try:
            kernel = schedule(program, name, {**constants, **chosen}, target=target)
        except SharedMemoryOverLimit as e:
            smallest = (dict(chosen), e)
            continue
        except DiagnosticError:
            continue  # a value the kernel does not take: shrink on
        changed = {k: v for k, v in chosen.items() if v != default[k]}
        return replace(kernel, notes=kernel.notes + (note(changed, default, target, first, kernel.smem_bytes),))
    if smallest is None:
        raise first
    given = {k: v for k, v in constants.items() if k in default}
    tried, over = smallest
    d = first.diagnostics[0]
    hint = (f"with the defaults shrunk to {', '.join(f'{k}={v}' for k, v in tried.items())} it still needs "
            f"{kb(over.needed)}; " + (f"give smaller values than {', '.join(f'{k}={v}' for k, v in given.items())}"
                                      if given else "use smaller tiles or fewer pipeline stages"))
    raise SharedMemoryOverLimit([dataclasses.replace(d, hint=hint)], first.sources, first.needed, first.limit)


def wgmma_k_tile(program, name: str, constants: dict, kernel, *, target: str, schedule):
    """`kernel`, or on a target with wgmma where a gemm runs on mma.sync only because its K
    tile is not whole 128-byte rows (the swizzle wgmma reads its operands through: 64 f16
    elements; the reference's BK=32 is 64 bytes), the kernel scheduled with that K tile
    doubled until it is, when the caller left it at its default, the rest fits and every such
    gemm then takes wgmma; `--emit ir` says so in a note.  A K tile the caller gave is kept."""
    if not targets.get(target).wgmma:
        return kernel
    fn = program.function(name)
    default = {p.name: p.value for p in fn.params if p.role == "const" and p.has_default}
    buffers = {b.name: b for b in kernel.buffers}
    grown = {}
    for g in (s for s in statements(kernel.body) if isinstance(s, ir.Gemm)):
        if wgmma_gemm(g, buffers, kernel.threads) or buffers[g.a].scope != "shared" or g.trans_a:
            continue
        k_name = _shared_dimension(fn.node, g.a, 1)
        if k_name is None or k_name in constants or not isinstance(default.get(k_name), int) \
                or not retileable(fn.node, k_name):
            continue  # given, or the program's meaning depends on its value (schedule/retile.py)
        row = 128 // buffers[g.a].dtype.itemsize  # elements of one 128-byte row
        value = grown.get(k_name, default[k_name])
        while value % row and value < row:
            value *= 2
        if value % row == 0 and value != default[k_name]:
            grown[k_name] = value
    if not grown:
        return kernel
    try:
        wider = _fitting(program, name, {**constants, **grown}, target=target, schedule=schedule)
    except DiagnosticError:
        return kernel  # (shared memory, or a multiple the kernel needs): mma.sync it stays
    buffers = {b.name: b for b in wider.buffers}
    if not all(wgmma_gemm(g, buffers, wider.threads) for g in statements(wider.body) if isinstance(g, ir.Gemm)):
        return kernel
    what = ", ".join(f"{k}={v} (default {default[k]})" for k, v in grown.items())
    return replace(wider, notes=wider.notes + (
        f"{what}: wgmma on {target} takes K tiles of whole 128-byte rows (the operands' swizzle), which the "
        "default is not, so its gemm would run on mma.sync; give the constant to choose",))


def _shared_dimension(node: n.FunctionDef, buffer: str, dim: int) -> str | None:
    """The constant that sizes dimension `dim` of the shared buffer `buffer` where the kernel
    declares it (`As = shared(f16[BM, BK])`: BK for dim 1), or None."""
    for x in _walk(node.body):
        if isinstance(x, n.Assign) and isinstance(x.target, n.Name) and x.target.id == buffer \
                and isinstance(x.value, n.Call) and isinstance(x.value.func, n.Name) and x.value.func.id == "shared" \
                and x.value.args and isinstance(x.value.args[0], n.Subscript):
            dims = x.value.args[0].indices
            if dim < len(dims) and isinstance(dims[dim], n.Name):
                return dims[dim].id
    return None


def note(changed: dict, default: dict, target: str, over: SharedMemoryOverLimit, smem: int) -> str:
    """What `--emit ir` says of a fitted kernel."""
    what = ", ".join(f"{k}={v} (default {default[k]})" for k, v in changed.items())
    return (f"fitted to the {kb(over.limit)} of shared memory {target} allows, which the defaults overran "
            f"({kb(over.needed)}): {what} need {kb(smem)}; give constants to choose others")


def adjustable(node: n.FunctionDef, autotune: dict, free: dict) -> tuple[dict, dict]:
    """({stage constant: the values it may take, largest first}, {tile constant: the same}) of
    the integer constants in `free` (name -> default) that the kernel uses as a pipeline's
    stages or a shared buffer's dimension."""
    stage_names, tile_names = set(), set()
    for x in _walk(node.body):
        if isinstance(x, n.Call) and isinstance(x.func, n.Name):
            if x.func.id == "pipelined":
                stage_names.update(k.value.id for k in x.keywords if k.name == "stages" and isinstance(k.value, n.Name))
            elif x.func.id == "shared" and x.args and isinstance(x.args[0], n.Subscript):
                tile_names.update(d.id for d in x.args[0].indices if isinstance(d, n.Name))

    def values(name: str, lowest: int) -> tuple:
        v = free[name]
        if name in autotune:
            return tuple(sorted((x for x in autotune[name] if isinstance(x, int) and x < v), reverse=True))
        if v & (v - 1):
            return ()  # not a power of two: the kernel's own arithmetic, left alone
        out = []
        while v // 2 >= lowest:
            v //= 2
            out.append(v)
        return tuple(out)

    ints = {k for k, v in free.items() if isinstance(v, int) and not isinstance(v, bool) and v > 0}
    stages = {k: tuple(range(free[k] - 1, 0, -1)) if k not in autotune else values(k, 1)
              for k in sorted(stage_names & ints)}
    # a tile whose value the program's meaning depends on keeps it (schedule/retile.py)
    tiles = {k: values(k, MIN_TILE) for k in sorted((tile_names & ints) - set(stages)) if retileable(node, k)}
    return {k: v for k, v in stages.items() if v}, {k: v for k, v in tiles.items() if v}


def _next(chosen: dict, stages: dict, tiles: dict) -> dict | None:
    """The next smaller configuration: one stage fewer while any may go, else the largest
    tile dimension that may shrink, to its next value."""
    for k, vs in stages.items():
        smaller = [v for v in vs if v < chosen[k]]
        if smaller:
            return {k: smaller[0]}
    for k in sorted(tiles, key=lambda k: (-chosen[k], k)):
        smaller = [v for v in tiles[k] if v < chosen[k]]
        if smaller:
            return {k: smaller[0]}
    return None
