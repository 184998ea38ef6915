"""The Python API (LANGUAGE.md section 7): `tlc.load(path)`, `tlc.compile_source(text)`, and
the module they return, whose kernels (`kernel.Kernel`) and tile ops (`tileop.TileOp`) are
callable with arrays.

Owns loading, choosing the executor (`resolve_target`: the GPU, or the interpreter when there
is none) and the module object.  Binding a call's arguments, the caches of scheduled and
compiled kernels and the recorded configurations are the kernel's (tlc/kernel.py).
"""
from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from .diagnostics import DiagnosticError, TlcError
from .kernel import CallError, Kernel

# `import tlc` is the runtime: what a new process's call of a kernel from the caches runs
# (finding the file, the checked-module cache and its launch memo, the program cache, the
# launch).  The compiler is imported where a text is checked or a kernel is built (the parser
# and the type checker by `driver.check_source`, the scheduler and the code generator by
# `Kernel.scheduled` / `generated`): ~100 ms of data classes and tables that such a call never
# needs (issue #15; tests/runtime/test_cached_call_imports.py).
from . import driver  # noqa: E402
from .runtime import cache as _cache, checked_cache as _checked_cache, ir_codec as _ir_codec  # noqa: E402,F401
from .runtime import launch as _launch, tensormap as _tensormap  # noqa: E402,F401
from .ir import warpspec as _warpspec  # noqa: E402,F401 - a TMA kernel's program entry holds its TensorMapSpecs

if TYPE_CHECKING:
    from .typecheck import CheckedProgram

__all__ = ["load", "compile_source", "resolve_target", "Module", "Kernel", "TileOp", "CallError"]

# "cpu" and "interp": the reference interpreter; "cpp": the cpu target's C++ (tlc/codegen/cpp),
# or the interpreter, with warning E346, where there is no C++ compiler
TARGETS = ("auto", "cpu", "cuda", "interp", "cpp")
_said_cpu_fallback = False
_said_no_compiler = False


def load(path: str, target: str = "auto") -> "Module":
    """Parse and type-check a `.tl` file; raises `DiagnosticError` or `driver.SourceError`.
    For the GPU, a file checked before comes from the checked-module cache
    (`runtime.checked_cache`) and is checked again only when a kernel must be compiled."""
    path = _path_text(path)
    gpu = target == "cuda" or (target == "auto" and _gpu_available())
    if gpu:
        cached = _cached_module(path, target)
        if cached is not None:
            return cached
        from .runtime import warm_up

        warm_up()  # a module not checked before: its kernels are likely compiled; NVRTC starts now
    stamp = _stamp(path) if gpu else None  # taken before the text is read: the module record's
    result = driver.check_file(path)
    if not result.ok:
        raise DiagnosticError(result.diagnostics, result.sources)
    if gpu:
        from .runtime.checked_cache import LaunchMemo

        program = result.program
        text = program.sources[program.path]
        if _checked_cache.store(program, text, program.path):  # the next process's first calls find theirs
            entry, file = _checked_cache.key(text, program.path), driver.resolve_path(path)

            def keep(memo=None):  # the module record, with the launch memo where one is recorded
                _checked_cache.store_record(program.path, file, stamp, program, module._exports, entry, memo)
            module = Module(program, target, memo=LaunchMemo(entry, keep=keep if stamp is not None else None))
            if stamp is not None:
                keep()
            return module
    return Module(result.program, target)


def _path_text(path, takes: str = "tlc.load takes the path of a .tl file (a str or a pathlib.Path) or the name "
                                   "of a std module ('std.nn')") -> str:
    """A path argument as text: a str, or an os.PathLike (pathlib.Path) as its text; `takes` says
    what the caller takes where it is neither."""
    import os

    if isinstance(path, os.PathLike):
        path = os.fspath(path)
    if not isinstance(path, str):
        raise TlcError(f"{takes}, not {type(path).__name__}")
    return path


def _stamp(path: str):
    """The stat() of the file `tlc.load(path)` reads, or None."""
    import os

    try:
        return os.stat(driver.resolve_path(path))
    except OSError:
        return None


def _gpu_available() -> bool:
    from .runtime.compile import cuda_unavailable_reason

    return cuda_unavailable_reason() is None


def _cached_module(path: str, target: str) -> "Module | None":
    """The module of `path` from the checked-module cache, or None (then `driver.check_file`
    checks it, and reports what is wrong with the file)."""
    import os

    from .runtime import checked_cache

    file = driver.resolve_path(path)
    name = os.path.relpath(file) if not os.path.isabs(file) else file  # as check_file names it
    record = checked_cache.load_record(name)
    if record is not None:
        return _recorded_module(file, name, record, target)
    try:
        stamp = os.stat(file)  # before the text is read: the module record's
        text = driver.read_source(file)
    except (DiagnosticError, driver.SourceError, OSError):
        return None
    found = checked_cache.load(text, name)
    if found is None:
        return None
    program, exports, entry = found
    checked_cache.store_record(name, file, stamp, program, exports, entry)  # the next process's load
    from .runtime.checked_cache import LaunchMemo

    memo = LaunchMemo(entry, keep=lambda memo: checked_cache.store_record(name, file, stamp, program, exports, entry, memo)) \
        if target in ("cuda", "auto") else None

    return Module(program, target, check=lambda: _checked(text, name), exports=exports, memo=memo)


def _recorded_module(file: str, name: str, record, target: str) -> "Module":
    """The module of the file `file` (`name` as `check_file` names it) that its module record
    (`checked_cache.load_record`) vouches for: its exports and texts' digests now, its texts and
    checked signatures read when something first needs them (a launch from the launch memo
    needs neither).  A text that changed since this load is refused then, not taken: the
    module's kernels come from one text."""
    from .runtime.checked_cache import LaunchMemo

    def signatures():
        from .runtime import checked_cache
        from .runtime.cache import text_digest

        text = driver.read_source(file)
        if text_digest(text) != record.digests[name]:
            raise TlcError(f"{name} has changed since tlc.load read it; load it again")
        found = checked_cache.load(text, name)
        if found is not None:
            return found[0]
        return _checked(text, name)  # the entry is gone or damaged, the texts as recorded
    program = _Deferred(signatures)

    def check():
        return _checked(program.sources[name], name)
    memo = LaunchMemo(record.checked, record.memo, record.keep_memo) if target in ("cuda", "auto") else None
    return Module(program, target, check=check, exports=record.exports, memo=memo, digests=record.digests)


def _checked(text: str, name: str):
    result = driver.check_source(text, name)
    if not result.ok:  # cannot happen for a text that checked before, with the same tlc
        raise DiagnosticError(result.diagnostics, result.sources)
    return result.program


class _Deferred:
    """A program made by `make()` at the first read of one of its fields."""

    def __init__(self, make):
        self._make, self._made = make, None

    def __getattr__(self, attr: str):
        if attr.startswith("__"):
            raise AttributeError(attr)
        if self._made is None:
            self._made = self._make()
        return getattr(self._made, attr)


def compile_source(text: str, target: str = "auto", path: str = "<string>") -> "Module":
    if not isinstance(text, str):
        raise TlcError(f"tlc.compile_source takes the text of a module as a str, not {type(text).__name__}"
                       + (" (decode it: text.decode('utf-8'))" if isinstance(text, bytes) else ""))
    path = "<string>" if path is None else _path_text(
        path, "tlc.compile_source's path= names the text in diagnostics: a str or a pathlib.Path")
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


def __getattr__(name: str):
    if name == "TileOp":  # imported at first use: it brings the tile-op scheduler
        from .tileop import TileOp
        return TileOp
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class Module:
    def __init__(self, program: CheckedProgram, target: str = "auto", check=None, exports: dict | None = None,
                 memo=None, digests: dict | None = None):
        # `check`: for a program of signatures only (runtime.checked_cache), the full check,
        # run the first time anything reads `program`; `exports`: its kernels' and tile ops'
        # (qualname, kind) by name, which a checked program's functions say; `memo`: the
        # launch memo of such a program's entry (runtime.checked_cache.LaunchMemo), for its
        # kernels' first calls; `digests`: its files' texts' SHA-256 where a module record gave them
        self._program, self._check, self._memo, self._digests = program, check, memo, digests
        self.target = resolve_target(target)
        if exports is None:
            exports = {name: (q, program.functions[q].kind) for name, q in program.names.items()
                       if program.functions[q].kind in ("kernel", "tile_op")
                       and program.functions[q].module_path == program.path}
        self._exports, self._kernels = exports, {}

    def __getattr__(self, name: str):
        exports = self.__dict__.get("_exports", {})
        if name in exports:
            return self._kernel(name)
        raise AttributeError(f"{self._program.path} has no kernel or tile op '{name}'"
                             + (f"; it has: {', '.join(exports)}" if exports else ""))

    def _kernel(self, name: str):
        """The kernel or tile op `name`, made at its first use (a cached module decodes only the
        signatures it uses) and kept as an attribute: a call in a loop finds it directly."""
        found = self._kernels.get(name)
        if found is None:
            q, kind = self._exports[name]

            def fn():
                try:
                    return self._program.functions[q]
                except ValueError:  # a cached signature that cannot be read (ir_codec.BadEntry): check the text
                    return self.program.functions[q]
            if kind == "tile_op":
                from .tileop import TileOp  # with the tile-op scheduler, when a module has one
                found = TileOp(self, fn())
            elif self._memo is not None and self.target == "cuda":  # its signature decoded at its first use
                found = Kernel(self, fn, name=name, memo=self._memo)
            else:
                found = Kernel(self, fn())
            self._kernels[name] = found
            self.__dict__[name] = found
        return found

    def __dir__(self):
        return sorted(set(super().__dir__()) | set(self._exports))

    @property
    def program(self) -> CheckedProgram:
        """The checked program (checked now if the module came from the checked-module cache)."""
        if self._check is not None:
            self._program, self._check = self._check(), None
        return self._program

    @property
    def sources(self) -> dict:
        """The text of every file of the program, by name (what the kernel cache is keyed by)."""
        return self._program.sources

    @property
    def source_digests(self) -> dict:
        """The SHA-256 of every file's text, by name (`cache.program_key_of`'s)."""
        if self._digests is None:
            from .runtime.cache import text_digest

            self._digests = {name: text_digest(text) for name, text in self.sources.items()}
        return self._digests

    @property
    def kernels(self) -> dict:
        return {name: self._kernel(name) for name in self._exports}


