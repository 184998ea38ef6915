"""Scheduling: a checked @kernel with its constants bound -> tile IR ready for the interpreter
and the code generator.  Entry point: `schedule(program, name, constants)`.

The passes, in order, each a function IR -> IR checked by the verifier: `lower` (typed AST ->
IR), `split_column_blocks` (a column reduction over more blocks, its threads combining once,
column_blocks.py), `prefetch_loads` (a pipelined loop's per-iteration tensor loads read an
iteration ahead, where PREFETCH_RING_LOADS is on: prefetch_loads.py),
`drop_dead_fragment_stores` (a parallel loop's store to a fragment that only its own iteration
reads before the fragment is cleared made a value of the iteration, dead_stores.py),
`infer_layouts` (fragment layouts, layout_infer.py), `place_fragment_scans` (a fragment's scan in
its registers, or through a shared copy where its layout or dtype does not allow, scan_registers.py), `narrow_fragments` (an
f32 fragment of 16-bit values held in 16 bits, narrow_fragments.py and recompute.py), `check_thread_storage` (what each thread holds, the
limit), `plan_shared_memory` (sizes, stages, padding or swizzle, offsets with reuse, the
limit), `insert_barriers`, `keep_last_stages` (which staged buffers code after a pipelined
loop reads, last_stage.py), `use_fast_math` (the fast exponential and a hoisted reciprocal
where values end at 16-bit precision, fast_math.py), `batch_loads` (consecutive copies into
fragments issue their loads together, batch_loads.py), `keep_gathered_rows` (a gather's copies into
fragments, their rows chosen by an index, load with an L2 evict_last policy, l2_policy.py),
`group_atomics` (a warp's constant atomic adds at one data-chosen shared address added once,
atomic_groups.py; both switches off until timed), `choose_blocks_per_sm` (the launch bounds' minimum blocks of a
register-resident kernel, blocks_per_sm.py), `unswitch_loops` (a serial loop whose body is one test it
cannot change as the test around two loops, unswitch.py), `specialize_warps` (a producer/consumer ring on targets with wgmma
and the TMA, warpspec.py), `fold_stores` (a fragment copied out right after the loop that computes it,
stored a run at a time inside the loop, fold_stores.py), `order_heavy_first` (a grid whose blocks'
loop grows with x launched longest first, grid_order.py), `choose_scale_d_clears` (which clears of a ring's consumer
body its wgmma gemms make by their first K step's scale-d 0, scale_d_clears.py), `pass_dims_from_launch` (a
tensor dimension expression that divides by a run-time value computed by the launch and passed as
an argument, where HOST_DIMS is on: host_dims.py).  A row kernel whose SMs would hold too few rows in flight is then
scheduled again from its lowered IR as `pipelined_rows` rewrites it (its rows walked by persistent
blocks, the next row's copies one row ahead through a cp.async ring, pipeline_rows.py), and
that version is kept.  Owns no C text.
"""
from __future__ import annotations

import importlib
import types
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import replace

from .. import ir, targets
from ..diagnostics import Diagnostic, DiagnosticError
from ..parser import nodes as n
from ..typecheck import CheckedProgram

# The passes and the names this package offers, each imported at its first use: a launch from
# the program cache decodes IR data classes of this package's modules (layout.py's, smem.py's),
# and importing one of them must not import every pass (and the tile-op scheduler) with it.
# `_scheduled_grid` reads them as globals, so that a test may replace one (monkeypatch.setattr).
_LAZY = {"insert_barriers": "barriers", "choose_blocks_per_sm": "blocks_per_sm",
         "split_column_blocks": "column_blocks", "pipelined_rows": "pipeline_rows", "use_fast_math": "fast_math", "batch_loads": "batch_loads", "bind_constants": "bind",
         "parse_value": "bind", "parallel_layout": "layout", "keep_last_stages": "last_stage",
         "scheduled_as_tile_grid": "persistent_grid", "infer_layouts": "layout_infer", "Lowerer": "lower",
         "LoweringError": "lower", "narrow_fragments": "narrow_fragments",
         "check_thread_storage": "registers", "plan_shared_memory": "smem", "specialize_warps": "warpspec",
         "fold_stores": "fold_stores", "place_fragment_scans": "scan_registers", "unswitch_loops": "unswitch",
         "order_heavy_first": "grid_order", "prefetch_loads": "prefetch_loads", "drop_dead_fragment_stores": "dead_stores", "keep_gathered_rows": "l2_policy", "group_atomics": "atomic_groups",
         "choose_scale_d_clears": "scale_d_clears",
         "pass_dims_from_launch": "host_dims"}


def __getattr__(name: str):
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = globals()[name] = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    return value


def _import_passes() -> None:
    """Every name of `_LAZY` a global of this module (those already set are kept).  A pass named
    as its module (batch_loads) is that module here once another module imported it first
    (tileops/program.py): importing a submodule sets the package's attribute."""
    for name in _LAZY:
        if name not in globals() or isinstance(globals()[name], types.ModuleType):
            __getattr__(name)

PASSES = ("lower", "split_column_blocks", "prefetch_loads", "drop_dead_fragment_stores", "infer_layouts", "place_fragment_scans", "narrow_fragments",
          "check_thread_storage",
          "plan_shared_memory", "insert_barriers", "keep_last_stages", "use_fast_math", "batch_loads", "keep_gathered_rows",
          "group_atomics", "choose_blocks_per_sm", "unswitch_loops", "specialize_warps", "fold_stores",
          "order_heavy_first", "choose_scale_d_clears",
          "pass_dims_from_launch")

__all__ = ["schedule", "schedule_grids", "schedule_tile_op", "bind_constants", "parse_value", "PASSES", "parallel_layout",
           "observing_passes"]

# called with (pass name, the kernel it returned) after each of PASSES (tlc/dump.py); the passes
# themselves stay functions of their data
_AFTER_PASS: ContextVar = ContextVar("tlc_after_pass", default=None)


@contextmanager
def observing_passes(after):
    """Within the block, `after(pass_name, kernel)` is called with each pass's result, in order."""
    token = _AFTER_PASS.set(after)
    try:
        yield
    finally:
        _AFTER_PASS.reset(token)


def schedule_tile_op(program: CheckedProgram, name: str, constants: dict | None = None, *,
                     target: str = "sm_80", smem_limit: int | None = None, sizes: dict | None = None,
                     rules=None):
    """The `TileOpProgram` of the @tile_op `name`: its kernels, scheduled for `target`, and the
    launches that run them; `sizes` (shape symbol -> size) steer the tile sizes when known, and
    `rules` (a `tileops.Rules`) replace the default scheduling numbers."""
    from .lower import LoweringError
    from .tileops import Rules, schedule_tile_op as plan

    limit = smem_limit if smem_limit is not None else targets.get(target).smem_per_block
    try:
        return plan(program, name, constants, target=target, smem_limit=limit, sizes=sizes, rules=rules or Rules())
    except LoweringError as e:  # (a kernel's are _scheduled_grid's)
        raise DiagnosticError([Diagnostic(e.code, str(e), e.span, e.hint)], program.sources) from None


def unbound_size(name: str, span, what: str) -> Diagnostic:
    """E240: a shape symbol that must be a constant, compiled with no size for it."""
    if what is None:  # a const parameter with no default, standing as a dimension
        message = f"the constant '{name}' has no default and no size was given for it"
    else:
        message = (f"the shape symbol '{name}' is used as {what} here, so it is compiled in as a constant "
                   "(one kernel per size), and no size was given for it")
    return Diagnostic("E240", message, span,
                      f"give it: -D {name}=SIZE or --shape {name}=SIZE (a call binds it from its arrays)")


def schedule(program: CheckedProgram, name: str, constants: dict | None = None, *,
             target: str = "sm_80", smem_limit: int | None = None) -> ir.Kernel:
    """The scheduled tile IR of the kernel `name`, a kernel of one grid (E242 otherwise: see
    `schedule_grids`), with `constants` (name -> value) bound, for `target` (which decides the
    gemm accumulator's layout and the shared-memory limit)."""
    return schedule_grids(program, name, constants, target=target, smem_limit=smem_limit, grids=False)[0]


def schedule_grids(program: CheckedProgram, name: str, constants: dict | None = None, *,
                   target: str = "sm_80", smem_limit: int | None = None, grids: bool = True) -> tuple:
    """The scheduled kernels of the @kernel `name`, one per grid, launched in this order (each
    named `NAME_gridI` when there are several)."""
    _import_passes()
    limit = smem_limit if smem_limit is not None else targets.get(target).smem_per_block
    fn = program.function(name)
    if fn is None:
        kernels = [k.name for k in program.kernels()]
        raise DiagnosticError([Diagnostic("E066", f"no kernel named '{name}' in {program.path}", None,
                                          f"its kernels are: {', '.join(kernels)}" if kernels else "it defines no @kernel")])
    if fn.kind == "tile_op":
        raise DiagnosticError([Diagnostic("E067", f"'{name}' is a @tile_op, which is scheduled into one or more "
                                          "kernels, not one", fn.node.name_span,
                                          "call it from Python (it returns its result), or build its kernels "
                                          "with tlc build -k NAME")], program.sources)
    if fn.kind != "kernel":
        raise DiagnosticError([Diagnostic("E066", f"'{name}' is a device function, not a kernel", fn.node.name_span,
                                          "device functions are called from kernels")], program.sources)
    fn = bind_constants(program, fn, constants or {})
    if fn.to_specialize:
        raise DiagnosticError([unbound_size(name, span, what) for name, (span, what) in fn.to_specialize.items()],
                              program.sources)
    count = sum(isinstance(s, n.With) for s in fn.node.body)
    if count > 1 and not grids:
        raise DiagnosticError([Diagnostic("E242", f"'{name}' has {count} grids, each its own launch, so it is "
                                          "scheduled into as many kernels, not one", fn.node.name_span,
                                          "schedule it with schedule_grids(), or call it from Python")], program.sources)
    return tuple(_scheduled_grid(program, fn, i, count, target, limit) for i in range(count))


def _scheduled_grid(program: CheckedProgram, fn, index: int, count: int, target: str, limit: int) -> ir.Kernel:
    """The kernel of the `index`th of `count` grids of the bound kernel `fn`."""
    lowerer = Lowerer(fn, program)
    try:
        kernel = lowerer.kernel(index)
    except LoweringError as e:
        raise DiagnosticError([Diagnostic(e.code, str(e), e.span, e.hint)], program.sources) from None
    if fn.specialized:
        kernel = replace(kernel, specialized=tuple(fn.specialized.items()))
    if fn.not_one:
        kernel = replace(kernel, not_one=tuple(fn.not_one))
    if count > 1 or fn.workspaces:  # launch_NAME runs the grids and places the workspaces
        kernel = replace(kernel, name=f"{fn.name}_grid{index}", grid_of=(fn.name, index, count),
                         workspaces=tuple(w.name for w in fn.workspaces))
    ir.verify(kernel)
    after = _AFTER_PASS.get() or (lambda name, result: None)
    after("lower", kernel)
    passes = (split_column_blocks, lambda k: prefetch_loads(k, targets.get(target)), drop_dead_fragment_stores,
              lambda k: infer_layouts(k, target, program.sources), place_fragment_scans,
              narrow_fragments,
              lambda k: check_thread_storage(k, program.sources),
              lambda k: plan_shared_memory(k, limit, program.sources), insert_barriers, keep_last_stages, use_fast_math,
              batch_loads, keep_gathered_rows, group_atomics,
              lambda k: choose_blocks_per_sm(k, targets.get(target)),
              unswitch_loops,
              lambda k: specialize_warps(k, targets.get(target)),
              lambda k: fold_stores(k, targets.get(target)), order_heavy_first, choose_scale_d_clears,
              pass_dims_from_launch)
    tiled = scheduled_as_tile_grid(lowerer.__dict__.get("persistent_walks", ()), kernel, targets.get(target),
                                   tuple(zip(PASSES[1:], passes, strict=True)), after)  # persistent_grid.py
    if tiled is not None:
        return tiled
    lowered, stages = kernel, []
    for name, run in zip(PASSES[1:], passes, strict=True):
        kernel = run(kernel)
        stages.append((name, kernel))
    # too few rows in flight an SM: the rows pipelined across persistent blocks (pipeline_rows.py)
    piped = pipelined_rows(lowered, kernel, targets.get(target), limit)
    if piped is not None:
        stages = [("pipelined_rows", piped)]
        for name, run in zip(PASSES[1:], passes, strict=True):
            piped = run(piped)
            stages.append((name, piped))
        kernel = piped
    for name, result in stages:
        after(name, result)
    ir.verify(kernel)
    return kernel
