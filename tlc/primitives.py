"""The C++ primitives a generated CUDA kernel inlines (`templates/tl/*.cuh`), per code
generator: the files of each (`Sm80.primitive_files`, `Sm90.primitive_files`) and their text as
kernel.cu.j2 places it.  A leaf module, apart from tlc.codegen, so that the runtime's NVRTC
warm-up thread can precompile them (runtime/compile.py, `warm_up_nvrtc`) without importing the
code generator, which the main thread may be importing at the same time."""
from __future__ import annotations

import functools

from . import package_data

SM80 = ("types.cuh", "copy.cuh", "layout.cuh", "mma.cuh", "reduce.cuh", "scan.cuh", "host_grid.cuh", "assert.cuh")
SM90 = SM80 + ("wgmma.cuh", "tma.cuh", "tma_store.cuh")
# each generator's files by the "module:Class" a target names it with (`tlc.targets.Target.generator`)
BY_GENERATOR = {"tlc.codegen.sm80:Sm80": SM80, "tlc.codegen.sm90:Sm90": SM90}

# how kernel.cu.j2 guards them (a file of several kernels holds them once)
GUARD_START = "#ifndef TL_PRIMITIVES\n#define TL_PRIMITIVES\n"
GUARD_END = "#endif  // TL_PRIMITIVES\n"


@functools.lru_cache(maxsize=None)
def text(files: tuple) -> str:
    root = package_data.templates() / "tl"
    return "\n".join((root / f).read_text(encoding="utf-8") for f in files)


def guarded(files: tuple) -> str:
    """The primitives of `files` as a generated kernel holds them, guard lines included."""
    return GUARD_START + text(files) + "\n" + GUARD_END
