"""Tile ops (LANGUAGE.md section 5): a checked `@tile_op` -> ordinary tile-IR kernels and the
program of launches that runs them.  Entry point: `schedule_tile_op(program, name, constants,
target=..., sizes=...)`.

The stages: `graph` (the body as data flow over whole tensors), `fusion` (which operations
share a kernel, and why the others do not; `@fuse` checks it), then one builder per kind of
kernel (`elementwise`, `matmul`, `rows`) producing an `ir.Kernel` from the group's expression
(`elements` lowers one element of it, reusing the kernel lowerer), then the usual scheduling
passes (`program.finish`).  The scheduling rules (tile sizes, threads, vector widths) are in
`rules`.  Owns no C text; the interpreter and the code generators never see a tile op.
"""
from __future__ import annotations

from dataclasses import replace

from ... import targets
from ...diagnostics import Diagnostic, DiagnosticError
from ...typecheck import CheckedProgram
from ..bind import bind_constants
from ..layout import thread_registers
from ..sm_limits import blocks_fitting
from .build import KernelBuilder
from .element_cost import element_cost
from .attention import head_dim, kernel_text, match_attention
from .elementwise import elementwise_kernel
from .fusion import FuseError, check_fuse, partition
from .graph import Graph, TileOpError
from .matmul import matmul_kernel, tiles_for
from .program import Launch, Tensor, TileOpProgram, finish
from . import rules as rules_mod
from .rows import RowKernel
from .rules import DEFAULT_RULES, LONG_MATH_PER_FRAGMENT, LONG_MATH_REGISTERS, Rules, row_blocks_per_sm, row_tiles

__all__ = ["schedule_tile_op", "TileOpProgram", "Launch", "Tensor", "Rules"]


def schedule_tile_op(program: CheckedProgram, name: str, constants: dict | None = None, *, target: str = "sm_80",
                     smem_limit: int, sizes: dict | None = None, rules: Rules = DEFAULT_RULES) -> TileOpProgram:
    """The kernels and launches of the tile op `name` with `constants` bound, for `target`;
    `sizes` (shape symbol -> size, when known) and `rules` steer the tile sizes."""
    fn = bind_constants(program, program.function(name), constants or {})
    sizes = dict(sizes or {})
    try:
        graph = Graph(fn, program.sources)
        form = match_attention(graph)
        if form is not None:  # one flash kernel, where the fusion rules would make three
            return _attention(graph, form, program, target, smem_limit, sizes)
        graph.check_ranks()
        part = partition(graph, fuse_operands=fn.fuse)
        if fn.fuse:
            check_fuse(graph, part)
        return _assemble(graph, program, part, target, smem_limit, sizes, rules)
    except FuseError as e:
        raise DiagnosticError([Diagnostic("E072", str(e), e.span, e.hint)], program.sources) from None
    except TileOpError as e:
        raise DiagnosticError([Diagnostic("E073", str(e), e.span, e.hint)], program.sources) from None


def _assemble(graph: Graph, program, part, target: str, smem_limit: int, sizes: dict, rules: Rules) -> TileOpProgram:
    fn = graph.fn
    result = Tensor(_result_name(part), graph.out_dtype, graph.out_shape)
    temps = tuple(Tensor(t, graph.dtype(node), graph.shape(node)) for node, t in part.temps.items())
    tensors = {p.name: (p.type.dtype, graph.dims(p.type.shape)) for p in fn.tensor_params}
    tensors.update({t.name: (t.dtype, t.shape) for t in temps})
    tensors[result.name] = (result.dtype, result.shape)
    launches = []
    many = len(part.groups) > 1
    for k, group in enumerate(part.groups):
        kname = f"{fn.name}_{k}_{group.kind}" if many else fn.name
        b = KernelBuilder(graph, program, part, group, kname, dict(tensors), target)
        flat, fused = False, ()
        if group.kind == "matmul":
            tiles = tiles_for(b, smem_limit, sizes)
            kernel = matmul_kernel(b, tiles)
            fused = (graph.text(group.matmul.node),) + tuple(
                f"{side} operand {graph.text(node)} (computed into its shared tile each K step)"
                for side, node in zip(("left", "right"), group.computed) if node is not None)
            chosen = (f"BM={tiles.BM} BN={tiles.BN} BK={tiles.BK} stages={tiles.stages} "
                      f"threads={tiles.THREADS} (from {tiles.source})")
        elif group.kind == "rows":
            tiles, rows, kernel = _row_kernel(graph, program, part, group, kname, tensors, target, smem_limit, sizes,
                                              rules)
            fused = tuple(graph.text(h.node) for h in group.members)
            what = "rows" if group.axis == len(group.space) - 1 else "columns"
            chosen = f"{tiles.kept} {what} per block, {tiles.reduced} per tile, threads={kernel.threads}"
        else:
            kernel, flat = elementwise_kernel(b, sizes, rules)
            chosen = f"block tile {list(kernel.buffers[-1].shape)}, threads={kernel.threads}"
        column = group.kind == "rows" and group.axis != len(group.space) - 1
        kernel = finish(kernel, target, smem_limit, program.sources,
                        batch=group.kind == "elementwise" or column and rules_mod.COL_BATCH)
        if group.kind == "elementwise":
            kernel, flat, chosen = _long_math(kernel, flat, chosen, (graph, program, part, group, kname, tensors, target),
                                              smem_limit, sizes, rules)
        if group.kind == "rows" and not tiles.min_blocks:  # blocks per SM from its registers
            # a column kernel loads narrow runs of many rows (column_split): their addresses count too
            from ..blocks_per_sm import column_vector_registers, load_addresses  # (it imports the rules of this package)

            loading = load_addresses(kernel) if group.axis != len(group.space) - 1 else 0
            held = rows.registers(kernel) + loading + column_vector_registers(kernel)
            kernel = replace(kernel, min_blocks=row_blocks_per_sm(kernel.threads, held, targets.get(target)))
        launches.append(Launch(kernel, flat, group.kind, graph.text(group.root), fused, chosen))
    return TileOpProgram(fn.name, tuple(p.name for p in fn.runtime_params), result, temps, tuple(launches),
                         tuple(part.boundaries), fn.fuse)


def _attention(graph: Graph, form, program, target: str, smem_limit: int, sizes: dict) -> TileOpProgram:
    """The program of one flash kernel (attention.py): its .tl text appended to the tile op's
    module, checked and scheduled as a kernel of that module."""
    from ...driver import check_source
    from .. import schedule
    from .fusion import RESULT, _fresh

    fn = graph.fn
    out = _fresh(RESULT, {p.name for p in fn.params})
    dp = head_dim(graph, form, sizes)
    kname = f"{fn.name}_flash"
    path = fn.module_path or program.path
    text = program.sources[path] + kernel_text(graph, form, kname, out, dp, target)
    checked = check_source(text, path)
    if not checked.ok:  # the template or the rendering is wrong: the compiler's fault, said as such
        raise DiagnosticError([Diagnostic("E073", "the flash kernel generated for this attention does not check: "
                                          + "; ".join(d.message for d in checked.diagnostics), fn.node.name_span,
                                          "please report it; write the attention with std.attention's flash_fwd "
                                          "meanwhile")], program.sources)
    kernel = schedule(checked.program, kname, {}, target=target, smem_limit=smem_limit)
    tiles = ", ".join(f"{c.name}={c.value}" for c in checked.program.function(kname).params
                      if c.role == "const" and c.name.endswith("_") and c.name[:-1] in ("DP", "BM", "BN", "STAGES",
                                                                                         "THREADS"))
    launch = Launch(kernel, False, "attention", graph.text(graph.root),
                    tuple(graph.text(x) for x in (form.product, form.softmax, form.output)),
                    f"{tiles} (std.attention's flash_fwd, online softmax: no S x SK temporary)")
    result = Tensor(out, graph.out_dtype, graph.out_shape)
    return TileOpProgram(fn.name, tuple(p.name for p in fn.runtime_params), result, (), (launch,), (), fn.fuse)


def _long_math(kernel, flat: bool, chosen: str, where: tuple, smem_limit: int, sizes: dict, rules: Rules):
    """An element-wise kernel of 16-bit (or narrower) tensors whose math costs at least
    `rules.ew_long_math` instructions an element (element_cost.py), built again with
    `ew_long_runs` runs a thread and as many blocks per SM as its fragments,
    `LONG_MATH_REGISTERS` and `LONG_MATH_PER_FRAGMENT` for each fragment past two leave room
    for, at most `ew_long_blocks` (a note says so); others, and
    one whose blocks per SM the rules fix, as given."""
    cost = element_cost(kernel)
    if rules.min_blocks or not rules.ew_long_blocks or cost < rules.ew_long_math or \
            any(b.scope == "shared" for b in kernel.buffers) or \
            any(p.kind == "tensor" and p.dtype.itemsize > 2 for p in kernel.params):  # measured on 16-bit tensors
        return kernel, flat, chosen
    graph, program, part, group, kname, tensors, target = where
    b = KernelBuilder(graph, program, part, group, kname, dict(tensors), target)
    kernel, flat = elementwise_kernel(b, sizes, replace(rules, ew_runs=rules.ew_long_runs))
    kernel = finish(kernel, target, smem_limit, program.sources, batch=True)
    fragments = [f for f in kernel.buffers if f.scope == "fragment" and f.layout is not None]
    frags = sum(thread_registers(f) for f in fragments)
    besides = LONG_MATH_REGISTERS + LONG_MATH_PER_FRAGMENT * max(0, len(fragments) - 2)
    blocks = min(rules.ew_long_blocks, blocks_fitting(kernel.threads, frags + besides, targets.get(target)))
    note = (f"long math: about {cost} instructions an element (element_cost.py), so {rules.ew_long_runs} "
            f"run{'s' if rules.ew_long_runs > 1 else ''} a thread and {blocks} blocks per SM ({frags} registers of "
            f"fragments and {besides} besides, at most {rules.ew_long_blocks}): the other warps' "
            "math hides each one's loads")
    kernel = replace(kernel, min_blocks=blocks, notes=kernel.notes + (note,))
    return kernel, flat, f"block tile {list(kernel.buffers[-1].shape)}, threads={kernel.threads}, {blocks} blocks per SM"


def _row_kernel(graph: Graph, program, part, group, kname: str, tensors: dict, target: str, smem_limit: int,
                sizes: dict, rules: Rules):
    """(tiles, RowKernel, kernel) of a row group.  A column kernel's loop takes
    `rules.col_tiles_per_step` (`COL_TILES_PER_STEP`) tiles an iteration while its fragments'
    registers (`RowKernel.registers`, with the copies batched as they will be) are at most
    `rules.col_registers_max` (`COL_REGISTERS_MAX`); where they are more, the tiles' elements a
    thread halve (to one vector run) and their number a step doubles, the runs a thread has in
    flight the same (at most `COL_RUNS_IN_FLIGHT`) and its running values half the registers,
    and then the tiles a step halve: var_axis0's and logsumexp_axis0's three running values an
    element take eight [64, 64] tiles of 16 bits a step where four [128, 64] tiles did not fit
    (two did: half the bytes in flight).  H200, (16384, 8192), each output checked against
    float64 first (bench/results/col_reductions-h200-twentyfourth.txt): var_axis0 f16 76.1 ->
    70.0 us (0.83 -> 0.90 of copy), logsumexp_axis0 f16 lazily 99.4 -> 81.8 (four [128, 64],
    which spill: 82.5), var_axis0 f32 137.9 -> 123.3 (four [64, 64] where one [128, 64] was);
    sum_axis0 f16 66.0 either way."""
    full = row_tiles(group.axis, group.space, sizes, rules)
    column = group.axis != len(group.space) - 1 and full.step > 1
    for tiles in _column_candidates(full, tensors) if column else (full,):
        b = KernelBuilder(graph, program, part, group, kname, dict(tensors), target)
        rows = RowKernel(b, tiles)
        kernel = rows.kernel()
        if not column or tiles.step == 1:
            return tiles, rows, kernel
        laid = finish(kernel, target, smem_limit, program.sources, batch=rules_mod.COL_BATCH)
        if rows.registers(laid) <= rules.col_registers_max:
            return tiles, rows, kernel
    raise AssertionError("the last column candidate takes one tile a step")  # pragma: no cover


def _column_candidates(full, tensors: dict):
    """A column kernel's tiles, in the order `_row_kernel` tries them: at each number of tiles a
    step from `full.step` down to one, those tiles, then tiles of half the rows (half the elements
    a thread, at least one vector run) twice as many a step, where that is at most
    `COL_RUNS_IN_FLIGHT` runs a thread in flight."""
    per_thread = full.kept * full.reduced // full.threads
    run = rules_mod.vector([dtype for dtype, _ in tensors.values()])  # elements of a thread's vector run
    step = full.step
    while step >= 1:
        yield replace(full, step=step)
        half = per_thread // 2
        if step > 1 and half >= run and full.reduced % 2 == 0 and \
                2 * step * half // run <= rules_mod.COL_RUNS_IN_FLIGHT:
            yield replace(full, reduced=full.reduced // 2, step=2 * step)
        step //= 2


def _result_name(part) -> str:
    return part.groups[-1].dest
