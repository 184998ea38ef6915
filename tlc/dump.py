"""`TLC_DUMP=DIR` and `--dump DIR`: every stage of one kernel's compile written out, for bug
reports.

Into `DIR/KERNEL.ARCH/`, files numbered in stage order: `00-options.json` (what was compiled
and how: tlc's version, the file, the kernel, the target, the constants, NVRTC's and nvcc's
options), `01-typed-ast.txt` (the kernel's typed AST with its constants bound, one node a line
with its type and line), then the tile IR after each scheduling pass (`02-ir-lower.txt`, ...:
the IR before a pass is the one after the pass before it; a kernel of several grids has one
set per grid, and defaults shrunk to fit shared memory (schedule/fit.py) show every try), the
`.cu`, and the PTX (nvcc's `-ptx` where nvcc is found, else NVRTC's where CuPy is, else a note
saying why there is none).  The stages are run again for the dump, through the pass hook of
`schedule.observing_passes`: the compile itself is not changed by dumping it.
"""
from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import re
import sys
from pathlib import Path

from . import __version__

ENV = "TLC_DUMP"


class _Writer:
    """Numbered files in one folder."""

    def __init__(self, folder: Path):
        self.folder = folder
        self.paths: list[Path] = []
        with self._writing():
            folder.mkdir(parents=True, exist_ok=True)
            for old in folder.glob("[0-9][0-9]-*"):  # a dump is one compile: no stale stages of another
                old.unlink()

    def write(self, stage: str, text: str) -> Path:
        path = self.folder / f"{len(self.paths):02d}-{stage}"
        with self._writing():
            path.write_text(text if text.endswith("\n") else text + "\n", encoding="utf-8")
        self.paths.append(path)
        return path

    @contextlib.contextmanager
    def _writing(self):
        """An OSError (a file where the folder would be, a read-only or full disk) as the CLI's
        usage error, where it was a traceback."""
        try:
            yield
        except OSError as e:
            from .files import FileError

            raise FileError(f"cannot write the compile's stages into {self.folder} (--dump, ${ENV}): "
                            f"{e.strerror or e}") from None


def dump_kernel(kernel, constants: dict, arch: str, folder) -> list[Path]:
    """Write every stage of compiling `kernel` (a `tlc.kernel.Kernel`) with `constants` for
    `arch` under `folder`; returns the files in stage order."""
    from .codegen import generate, generate_file
    from .ir import print_kernel
    from .schedule import bind_constants, observing_passes, schedule, schedule_grids
    from .schedule.fit import schedule_fitting

    program = kernel.module.program
    out = _Writer(Path(folder) / f"{_safe(kernel.name)}.{arch}")
    out.write("options.json", json.dumps(_options(kernel, constants, arch), indent=2))
    bound = bind_constants(program, program.function(kernel.name), constants)
    out.write("typed-ast.txt", typed_ast_text(bound))
    grids = kernel.grid_count

    def after(name, k):
        where = f"-grid{k.grid_of[1]}" if k.grid_of and grids > 1 else ""
        out.write(f"ir{where}-{name}.txt", print_kernel(k))

    with observing_passes(after):
        if grids > 1:
            scheduled = list(schedule_grids(program, kernel.name, constants, target=arch))
        else:
            scheduled = [schedule_fitting(program, kernel.name, constants, target=arch, schedule=schedule)]
    if len(scheduled) > 1 or scheduled[0].workspaces:
        source = generate_file(scheduled, arch, sources=program.sources)
    else:
        source = generate(scheduled[0], arch, sources=program.sources).source
    from . import targets

    if targets.get(arch).host:  # the cpu target's C++: no PTX
        out.write(f"{_safe(kernel.name)}.cpp", source)
        return out.paths
    out.write(f"{_safe(kernel.name)}.cu", source)
    ptx, how = _ptx(source, arch, kernel.name)
    out.write(f"{_safe(kernel.name)}.ptx" if ptx is not None else "ptx-none.txt", ptx if ptx is not None else how)
    return out.paths


def target_arch(kernel) -> str:
    """The architecture a kernel of a loaded module compiles for: the GPU's, or sm_80 for the
    interpreter (whose IR is the same as sm_80's), cpu for the cpu target."""
    if kernel.module.target == "cpu":
        return "sm_80"
    if kernel.module.target == "cpp":
        return "cpu"
    from .runtime.compile import codegen_arch, current_device, device_capability

    return codegen_arch(device_capability(current_device()))


def dump_from_env(kernel, constants: dict, arch: str) -> None:
    """`dump_kernel` into $TLC_DUMP when it is set (the Python API's compiles)."""
    folder = os.environ.get(ENV)
    if folder:
        dump_kernel(kernel, constants, arch, folder)


def _options(kernel, constants: dict, arch: str) -> dict:
    from .runtime.compile import COMMON_OPTIONS, cuda_include_dir

    include = cuda_include_dir()
    return {"tlc": __version__, "file": kernel.module.program.path, "kernel": kernel.name, "arch": arch,
            "constants": {k: _plain(v) for k, v in sorted(constants.items())},
            "nvrtc_options": [*COMMON_OPTIONS, f"-arch={arch}", *([f"-I{include}"] if include else [])],
            "nvcc_ptx": ["nvcc", f"-arch={arch}", "-ptx", *COMMON_OPTIONS[1:], "-std=c++17"],
            "python": sys.version.split()[0], "command": sys.argv}


def _ptx(source: str, arch: str, name: str) -> tuple[str | None, str]:
    """The PTX of `source` and how it was made, or None and why there is none."""
    from .diagnostics import TlcError
    from .runtime.compile import cuda_toolkit_nvcc, cuda_unavailable_reason, nvcc_compile, nvrtc_compile

    if cuda_toolkit_nvcc() is not None:
        try:
            return nvcc_compile(source, arch, "ptx", name=_safe(name)).binary.decode(), "nvcc"
        except TlcError as e:
            return None, f"nvcc could not make PTX:\n{e}"
    if cuda_unavailable_reason() is None or _has_cupy():
        try:
            ptx = nvrtc_compile(source, "compute_" + arch.removeprefix("sm_"), _safe(name))
            return (ptx.decode() if isinstance(ptx, bytes) else ptx), "NVRTC"
        except TlcError as e:
            return None, f"NVRTC could not make PTX:\n{e}"
        except Exception as e:  # noqa: BLE001 - NVRTC missing from this CuPy: say so in the dump
            return None, f"NVRTC could not be used: {e}"
    return None, "no PTX: neither nvcc nor CuPy's NVRTC is installed"


def _has_cupy() -> bool:
    try:
        import cupy  # noqa: F401
    except Exception:  # noqa: BLE001
        return False
    return True


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]", "_", name)


def _plain(v):
    return v if isinstance(v, (int, float, str, bool)) or v is None else str(v)


# ---- the typed AST as text ----------------------------------------------------------------------

def typed_ast_text(fn) -> str:
    """A checked function (`typecheck.CheckedFunction`) one node a line: its kind, its plain
    fields, `: type` where it has one, and `@line:col`."""
    params = ", ".join(f"{p.name}: {p.role} {p.type}" if p.type is not None else f"{p.name}: {p.role}"
                       for p in fn.params)
    lines = [f"{fn.kind} {fn.name}({params})"]
    lines += [f"  const {k} = {v}" for k, v in sorted(fn.constants.items(), key=lambda kv: kv[0])
              if isinstance(v, (int, float, bool, str))]
    for s in fn.body:
        _node(s, 1, lines)
    return "\n".join(lines)


def _node(node, depth: int, lines: list[str]) -> None:
    fields = [f for f in dataclasses.fields(node) if f.name not in ("span", "ty")] \
        if dataclasses.is_dataclass(node) else []
    plain = [f"{f.name}={getattr(node, f.name)!r}" for f in fields if _is_plain(getattr(node, f.name))]
    ty = getattr(node, "ty", None)
    span = getattr(node, "span", None)
    text = " ".join([type(node).__name__, *plain])
    if ty is not None:
        text += f" : {ty}"
    if span is not None:
        text += f"  @{span.line}:{span.col}"
    lines.append("  " * depth + text)
    for f in fields:
        value = getattr(node, f.name)
        children = [c for c in (value if isinstance(value, (tuple, list)) else (value,))
                    if dataclasses.is_dataclass(c) and not isinstance(c, type)]
        if children:
            lines.append("  " * (depth + 1) + f"{f.name}:")
        for child in children:
            _node(child, depth + 2, lines)


def _is_plain(v) -> bool:
    return v is None or isinstance(v, (bool, int, float, str))
