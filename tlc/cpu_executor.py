"""Running scheduled kernels on the cpu target (`target="cpp"`, `tlc run --target cpu`): each
kernel generated as C++ (tlc/codegen/cpp), compiled and loaded once (tlc/runtime/cpp.py), and
called with the NumPy arrays.  A kernel the target does not generate yet (E345), or whose
generated code the compiler rejects (E347), runs on the reference interpreter instead, and a
warning says so once per kernel: never a wrong result, never a stop.

Owns that choice and the per-process table of loaded kernels; the diagnostics' texts are here.
"""
from __future__ import annotations

import sys

from . import ir
from .diagnostics import Diagnostic, render

_loaded: dict[int, tuple] = {}  # id of a scheduled kernel -> (the kernel, its CppKernel or None)


def unsupported(what: str, span, kernel: str) -> Diagnostic:
    return Diagnostic("E345", f"the cpu target does not generate {what} yet", span,
                      f"'{kernel}' runs on the CPU reference interpreter instead", severity="warning")


def no_compiler(reason: str) -> Diagnostic:
    return Diagnostic("E346", f"the cpu target cannot compile here: {reason}", None,
                      "kernels run on the CPU reference interpreter instead", severity="warning")


def rejected(message: str, kernel: str) -> Diagnostic:
    return Diagnostic("E347", message, None, f"'{kernel}' runs on the CPU reference interpreter instead",
                      severity="warning")


def loaded(kernel: ir.Kernel, sources: dict | None = None):
    """`kernel` compiled and loaded for the cpu target, or None (after its warning) where it
    runs on the interpreter."""
    got = _loaded.get(id(kernel))
    if got is not None and got[0] is kernel:
        return got[1]
    from .codegen import cpp
    from .runtime.cpp import CppCompileError, CppKernel

    compiled, warning = None, None
    try:
        compiled = CppKernel(kernel, cpp.generate(kernel))
    except cpp.Unsupported as e:
        warning = unsupported(e.what, e.span or kernel.span, kernel.name)
    except CppCompileError as e:
        warning = rejected(str(e), kernel.name)
    if warning is not None:
        print(render(warning, sources or {}), file=sys.stderr)
    _loaded[id(kernel)] = (kernel, compiled)
    return compiled


def run(kernels, values: dict, sources: dict | None = None) -> None:
    """Run each scheduled kernel in order over `values` (NumPy arrays, written in place)."""
    from .interp import run_kernel

    for kernel in kernels:
        compiled = loaded(kernel, sources)
        if compiled is None:
            run_kernel(kernel, values)
        else:
            compiled.call(values)
