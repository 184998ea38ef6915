"""`tlc check`'s second half: every kernel and tile op of a checked file scheduled and
generated for one target, with its default constants (or `-D` ones), as `tlc build` would do
it, so that `check` reports what `build` would (shared memory over the limit, a `@fuse` that
cannot fuse, what the target cannot generate) at the same file:line:col.

Owns which kernels can be scheduled without a call (every constant known: a default, a `-D`,
or a dtype parameter's default) and collecting their diagnostics; the decisions themselves
stay in the scheduler and the code generator, reached through the same `kernel.Kernel` and
`tileop.TileOp` methods that `tlc build` uses (so a configuration that fits, tlc.schedule.fit,
is chosen here as there).
"""
from __future__ import annotations

from .diagnostics import Diagnostic, DiagnosticError, TlcError
from .typecheck import CheckedProgram


def schedule_all(program: CheckedProgram, arch: str, constants: dict, sizes: dict | None = None) -> list[Diagnostic]:
    """The diagnostics of scheduling and generating each kernel and tile op of `program`'s main
    file for `arch`, with `constants` (name -> value, `-D`'s) over the defaults and `sizes`
    (shape symbol -> size, `--shape`'s: a tile op's tiles, a kernel's symbols compiled in); a
    kernel with a constant that only a call can give (a dtype parameter without a default, a
    shape symbol used as a size) is left out."""
    sizes = sizes or {}
    from .api import Module
    from .codegen import generate
    from .targets import get

    try:
        get(arch)  # E071 for an unknown one, whether or not the file has kernels
    except DiagnosticError as e:
        return e.diagnostics
    module = Module(program, target="cpu")
    unused = set(constants) - {name for k in module.kernels.values()
                               for name in (*(p.name for p in k.fn.params), *k.fn.from_arrays)}
    if unused:
        raise TlcError(f"-D {', '.join(sorted(unused))}: no kernel of {program.path} has such a constant")
    found: list[Diagnostic] = []
    for k in module.kernels.values():
        own = {c: v for c, v in constants.items() if k.fn.param(c) is not None or c in k.fn.from_arrays}
        if any(p.role in ("const", "dtype") and not p.has_default and p.name not in own for p in k.fn.params):
            continue  # only a call can give it
        try:
            if k.fn.kind == "tile_op":
                kernels = k.program(own, arch, {s: v for s, v in sizes.items() if s in k.fn.shape_symbols}).kernels
            else:
                own.update({s: v for s, v in sizes.items() if s in k.fn.from_arrays and s not in own})
                # a kernel of several grids is scheduled into one kernel per grid
                kernels = k.scheduled_grids(own, arch) if hasattr(k, "scheduled_grids") else (k.scheduled(own, arch),)
            for kernel in kernels:
                generate(kernel, arch, sources=program.sources)
        except DiagnosticError as e:
            found.extend(d for d in e.diagnostics if d.code != NEEDS_A_SIZE and d not in found)
    return found


# A shape symbol compiled in as a constant, with no size: only a call's arrays (or -D) give one,
# so the kernel cannot be scheduled here, which is no error of the program's.
NEEDS_A_SIZE = "E240"
