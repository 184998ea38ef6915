"""The Python API (LANGUAGE.md section 7): `tlc.load(path)`, `tlc.compile_source(text)`, and
the module they return, whose kernels (`kernel.Kernel`) and tile ops (`tileop.TileOp`) are
callable with arrays.

Owns loading, choosing the executor (`resolve_target`: the GPU, or the interpreter when there
is none) and the module object.  Binding a call's arguments, the caches of scheduled and
compiled kernels and the recorded configurations are the kernel's (tlc/kernel.py).
"""
from __future__ import annotations

import sys

from . import driver
from .diagnostics import DiagnosticError, TlcError
from .kernel import CallError, Kernel
from .tileop import TileOp
from .typecheck import CheckedProgram

__all__ = ["load", "compile_source", "resolve_target", "Module", "Kernel", "TileOp", "CallError"]

# "cpu" and "interp": the reference interpreter; "cpp": the cpu target's C++ (tlc/codegen/cpp),
# or the interpreter, with warning E346, where there is no C++ compiler
TARGETS = ("auto", "cpu", "cuda", "interp", "cpp")
_said_cpu_fallback = False
_said_no_compiler = False


def load(path: str, target: str = "auto") -> "Module":
    """Parse and type-check a `.tl` file; raises `DiagnosticError` or `driver.SourceError`."""
    result = driver.check_file(path)
    if not result.ok:
        raise DiagnosticError(result.diagnostics, result.sources)
    return Module(result.program, target)


def compile_source(text: str, target: str = "auto", path: str = "<string>") -> "Module":
    result = driver.check_source(text, path)
    if not result.ok:
        raise DiagnosticError(result.diagnostics, result.sources)
    return Module(result.program, target)


def resolve_target(target: str) -> str:
    """The executor a target name means here: "cuda" needs a GPU that CuPy can use, "auto"
    takes one when there is one and otherwise runs on the interpreter (and says so once);
    "cpu" and "interp" are the interpreter, "cpp" the cpu target where a C++ compiler is."""
    global _said_cpu_fallback, _said_no_compiler
    if target not in TARGETS:
        raise TlcError(f"unknown target '{target}'; choose one of {', '.join(TARGETS)}")
    if target in ("cpu", "interp"):
        return "cpu"
    if target == "cpp":
        from .runtime.cpp import compiler_unavailable_reason

        reason = compiler_unavailable_reason()
        if reason is None:
            return "cpp"
        if not _said_no_compiler:
            from .cpu_executor import no_compiler
            from .diagnostics import render

            print(render(no_compiler(reason)), file=sys.stderr)
            _said_no_compiler = True
        return "cpu"
    from .runtime import compile as rc

    if target == "cuda":
        rc.require_cuda()
        return target
    reason = rc.cuda_unavailable_reason()
    if reason is None:
        return "cuda"
    if not _said_cpu_fallback:
        print(f"tlc: running kernels on the CPU reference interpreter (no CUDA GPU: {reason})",
              file=sys.stderr)
        _said_cpu_fallback = True
    return "cpu"


class Module:
    def __init__(self, program: CheckedProgram, target: str = "auto"):
        self.program = program
        self.target = resolve_target(target)
        self._kernels = {name: (TileOp if program.functions[q].kind == "tile_op" else Kernel)(self, program.functions[q])
                         for name, q in program.names.items()
                         if program.functions[q].kind in ("kernel", "tile_op")
                         and program.functions[q].module_path == program.path}

    def __getattr__(self, name: str):
        kernels = self.__dict__.get("_kernels", {})
        if name in kernels:
            return kernels[name]
        raise AttributeError(f"{self.program.path} has no kernel or tile op '{name}'"
                             + (f"; it has: {', '.join(kernels)}" if kernels else ""))

    def __dir__(self):
        return sorted(set(super().__dir__()) | set(self._kernels))

    @property
    def kernels(self) -> dict:
        return dict(self._kernels)


