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

On a target with wgmma a default K tile also grows: to the 128-byte rows wgmma takes
(`wgmma_k_tile`), and on until a warp-specialized ring keeps enough work in flight
(`ring_k_tile`).
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
from .gemm_overlap import wgmma_ready

MIN_TILE = 16  # elements: an mma fragment's side, and a 16-byte vector of bytes
MAX_TRIES = 32  # schedules tried before giving up (each is a type check and a schedule)


def schedule_fitting(program, name: str, constants: dict, *, target: str, schedule):
    """`schedule(program, name, constants, target=target)`, or when that needs more shared
    memory than `target` has (E070), the kernel scheduled with the first smaller configuration
    of its default constants that fits; when none does, E070 as first raised, its hint saying
    how far the defaults went.  On a target with wgmma, a default K tile too short for it grows
    to one it takes (`wgmma_k_tile`), and further where a warp-specialized ring keeps too little
    work in flight (`ring_k_tile`)."""
    kernel = _fitting(program, name, constants, target=target, schedule=schedule)
    kernel = wgmma_k_tile(program, name, constants, kernel, target=target, schedule=schedule)
    return ring_k_tile(program, name, constants, kernel, target=target, schedule=schedule)


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


# The tensor-core work a warp-specialized ring must keep in flight ahead of its consumers to
# cover the TMA's latency, in f16 multiply-adds: (stages - 1) iterations of its gemms.  std.gemm's
# default 128x256x64 tiles in 3 stages keep 2 x 128x256x64 = 4.2M and run at cuBLAS's speed on
# the H200, as do 128x128x64 in 5 stages (4 x 1M) and 256x128x64 in 3; 128x128x64 in 3 stages
# (2.1M, the plain gemm's) ran at 0.73x of the tuned kernel, and at 128x128x128 (4.2M) at 0.89x
# (bench/results/pingpong-h200.txt, plain-gemm-h200.txt).  A stage is refilled only once the
# wgmma that read it completes, so fewer, larger stages keep fewer bytes on their way than the
# same lookahead in more stages (128x128x64 in 5 stages: 1.00x); the stages are the author's.
RING_LOOKAHEAD = 2 * 128 * 256 * 64
# A gemm tile narrower than a wgmma's 64 rows on either side (a decode's 16 x 64, matmul_skinny)
# streams its operands: memory, not the tensor cores, sets the pace of its ring.
COMPUTE_TILE = 64


def ring_k_tile(program, name: str, constants: dict, kernel, *, target: str, schedule):
    """`kernel`, or where it is warp-specialized and its ring keeps less than RING_LOOKAHEAD
    of work in flight (`ring_lookahead`), the kernel with its gemms' K tile doubled until it
    keeps that much, when the caller left that constant at its default and the program's
    meaning does not depend on it (schedule/retile.py), the ring's stages and the kernel's
    other constants as they are: the deeper tiles must fit beside them, and the kernel must
    stay warp-specialized on wgmma.  Only tensor-core-bound rings: gemm tiles of at least
    COMPUTE_TILE on both sides.  A longer K step costs no registers (the accumulator is the
    same), only shared memory; `--emit ir` says so in a note."""
    if kernel.warp_spec is None:
        return kernel
    fn = program.function(name)
    default = {p.name: p.value for p in fn.params if p.role == "const" and p.has_default}
    buffers = {b.name: b for b in kernel.buffers}
    gemms = [g for g in statements(kernel.body[kernel.warp_spec.loop].body) if isinstance(g, ir.Gemm)]
    k_names = {_shared_dimension(fn.node, g.a, 1) if buffers[g.a].scope == "shared" and not g.trans_a else None
               for g in gemms}
    if len(k_names) != 1 or any(min(buffers[g.c].shape) < COMPUTE_TILE for g in gemms):
        return kernel
    k_name = k_names.pop()
    if k_name is None or k_name in constants or not isinstance(default.get(k_name), int) \
            or not retileable(fn.node, k_name):
        return kernel
    bound = dict(kernel.constants)
    # the defaults chosen before (shrunk to fit, grown for wgmma) stay as chosen
    chosen = {**constants, **{k: bound[k] for k in default if k in bound and bound[k] != default[k]}}
    deeper = kernel
    while ring_lookahead(deeper) < RING_LOOKAHEAD:
        value = 2 * dict(deeper.constants)[k_name]
        try:
            wider = schedule(program, name, {**chosen, k_name: value}, target=target)
        except DiagnosticError:
            break  # shared memory, or a multiple the kernel needs
        if wider.warp_spec is None or not all(
                wgmma_ready(g, {b.name: b for b in wider.buffers}, wider.threads)
                for g in statements(wider.body) if isinstance(g, ir.Gemm)):
            break
        deeper = wider
    if deeper is kernel:
        return kernel
    value, stages = dict(deeper.constants)[k_name], kernel.warp_spec.stages
    before = f"{k_name}={bound[k_name]}" + (" (the K tile wgmma takes)" if bound[k_name] != default[k_name] else "")
    why = (f"{k_name}={value} (default {default[k_name]}): the warp-specialized ring's {stages} stages keep "
           f"{stages - 1} K steps in flight ahead of the tensor cores, {_mfma(ring_lookahead(kernel))} multiply-adds "
           f"at {before}, too few to cover the TMA's latency (std.gemm's 128x256x64 tiles in 3 stages keep "
           f"{_mfma(RING_LOOKAHEAD)}); {_mfma(ring_lookahead(deeper))} at {k_name}={value}; give the constant to choose")
    # fit.py's notes on `kernel` (shrunk to fit, grown for wgmma) stay, this one after them
    return replace(deeper, notes=deeper.notes + tuple(x for x in kernel.notes if x not in deeper.notes) + (why,))


def ring_lookahead(kernel) -> int:
    """The work a warp-specialized kernel's ring keeps in flight ahead of the tensor cores, in
    f16 multiply-adds (an f32 one costs a tensor core two, an 8-bit one half): the producer
    refills a stage when the wgmma that read it completes, so (stages - 1) iterations of the
    loop's gemms run while a copy is on its way."""
    ws = kernel.warp_spec
    buffers = {b.name: b for b in kernel.buffers}
    per_iteration = 0
    for g in statements(kernel.body[ws.loop].body):
        if isinstance(g, ir.Gemm):
            a, c = buffers[g.a], buffers[g.c]
            k = a.shape[0] if g.trans_a else a.shape[1]
            per_iteration += c.shape[0] * c.shape[1] * k * a.dtype.itemsize // 2
    return (ws.stages - 1) * per_iteration


def _mfma(count: int) -> str:
    return f"{count / 1e6:.1f}M"


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
                stage_names.update(k.value.id for k in x.keywords if k.name in ("stages", "num_stages") and isinstance(k.value, n.Name))
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
