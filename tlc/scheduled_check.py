"""`tlc check`'s second half: every kernel and tile op of a checked file scheduled and
generated for one target, with its default constants (or `-D` ones), as `tlc build` would do
it, so that `check` reports what `build` would (shared memory over the limit, a `@fuse` that
cannot fuse, what the target cannot generate) at the same file:line:col.

Owns which kernels can be scheduled without a call (every constant known: a default, a `-D`,
or a dtype parameter's default) and collecting their diagnostics; the decisions themselves
stay in the scheduler and the code generator, reached through the same `api.Kernel` and
`tileop.TileOp` methods that `tlc build` uses (so a configuration that fits, tlc.schedule.fit,
is chosen here as there).
"""
from __future__ import annotations

from .diagnostics import Diagnostic, DiagnosticError, TlcError
from .typecheck import CheckedProgram


def schedule_all(program: CheckedProgram, arch: str, constants: dict) -> list[Diagnostic]:
    """The diagnostics of scheduling and generating each kernel and tile op of `program`'s main
    file for `arch`, with `constants` (name -> value, `-D`'s) over the defaults; a kernel with
    a constant that only a call can give (a shape symbol used as a size) is left out."""
    from .api import Module

    module = Module(program, target="cpu")
    unused = set(constants) - {p.name for k in module.kernels.values() for p in k.fn.params}
    if unused:
        raise TlcError(f"-D {', '.join(sorted(unused))}: no kernel of {program.path} has such a constant")
    found: list[Diagnostic] = []
    for name, k in module.kernels.items():
        own = {c: v for c, v in constants.items() if k.fn.param(c) is not None or c in k.fn.from_arrays}
        if not schedulable(k.fn, own):
            continue
        try:
            if k.fn.kind == "tile_op":
                from .codegen import generate

                for kernel in k.program(own, arch, {}).kernels:
                    generate(kernel, arch, sources=program.sources)
            else:
                k.generated(own, arch)
        except DiagnosticError as e:
            found.extend(d for d in e.diagnostics if d not in found)
    return found


def schedulable(fn, constants: dict) -> bool:
    """Whether `fn` can be scheduled with `constants` and its defaults alone."""
    missing = [p for p in fn.params if p.role in ("const", "dtype") and not p.has_default and p.name not in constants]
    return not missing and all(s in constants for s in fn.to_specialize)
