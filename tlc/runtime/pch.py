"""The tl primitives precompiled for NVRTC (#15, time to first result).

Every generated kernel inlines ~150 KB of C++ primitives (`tlc.primitives`, templates/tl/*.cuh)
after CUDA's fp16/bf16 headers: about half of NVRTC's front end for std.gemm's matmul (sm_90a,
NVRTC 13.0, this 2-core machine: front end 57-105 ms without, 27-47 ms with a precompiled
header of them; the cubin bit for bit the same).  NVRTC 12.8+ precompiles headers
(`--create-pch`, `--use-pch`), but takes a PCH only in the library instance that made it (one
from another process is refused, warning #20282-D: the file records its heap's address), so
none can be kept on disk for the next process.  The warm-up thread (`compile.warm_up_nvrtc`),
which a process starts where a compile is likely to follow, makes one while Python checks,
schedules and generates the kernel, and the kernel's compile includes the primitives from it.

A PCH holds the preprocessing up to the first token of the file that made it, and serves a
program only if that program's preprocessing starts the same way (else NVRTC warns, #630-D, and
compiles it from the text).  So both programs start with `Split.prefix`: the macros the
primitives read (TL_WHOLE_RUNS, TL_HAS_FP8, as the source defines them before its primitives),
CUDA's headers, the primitives as the header `HEADER`, and `STOP`, a declaration that ends the
PCH.  The kernel's source follows whole, renumbered from its line 1: its own `#include`s and
guarded primitives are then no-ops, so the program is the source's.  The file is unlinked once
made and read as /proc/self/fd/N, so no process leaves one behind; anything that goes wrong
(an older NVRTC, no /proc, a full disk, a kernel whose macros differ from the guess, a compile
that fails through the PCH) leaves the compile as it was without one."""
from __future__ import annotations

import os
import tempfile
import threading

from .. import primitives
from ..frozen import frozen
from .whole_runs import DEFINE as WHOLE_RUNS

HEADER = "tl_primitives.cuh"
STOP = "namespace tl {}  // the precompiled header ends here\n"
FIRST_VERSION = (12, 8)  # NVRTC's first with --create-pch / --use-pch
FD_FOLDER = "/proc/self/fd"
_CUDA = "#include <cuda_fp16.h>\n#include <cuda_bf16.h>\n"
_FP8 = "#include <cuda_fp8.h>\n#define TL_HAS_FP8 1\n"
# the directives kernel.cu.j2 may place before the primitives, besides the macros above
_CUDA_LINES = tuple(_CUDA.splitlines())
KERNEL_MACROS = ("#define TL_TMA_FLAGS ",)  # before the primitives, read by the kernel alone
_FP8_LINES = tuple(_FP8.splitlines())


@frozen
class Split:
    """A generated source's primitives (`header`, with their guard lines) and what a program
    must start with to include them from a PCH (`prefix`, ending with `STOP`)."""
    prefix: str
    header: str

    def program(self, source: str, name: str) -> str:
        """The text NVRTC compiles through the PCH: the prefix, then `source` numbered as `name`.cu."""
        return f'{self.prefix}#line 1 "{name}.cu"\n{source}'

    def headers(self) -> dict:
        return {HEADER: self.header}


def prefix(whole_runs: bool, fp8: bool) -> str:
    return (WHOLE_RUNS if whole_runs else "") + _CUDA + (_FP8 if fp8 else "") + f'#include "{HEADER}"\n' + STOP


def guess(files: tuple) -> Split:
    """What the warm-up precompiles for a generator inlining `files`: the build for launches
    whose runs are whole (`TL_WHOLE_RUNS`, the runtime's first build of a kernel that has
    one), no f8."""
    return Split(prefix(True, False), primitives.guarded(files))


def split(source: str) -> Split | None:
    """`source`'s primitives and prefix; None where its lines before the primitives hold
    anything but comments, CUDA's headers, the host-only block and the macros `prefix` knows."""
    start = source.find(primitives.GUARD_START)
    end = source.find(primitives.GUARD_END, start)
    if start < 0 or end < 0:
        return None
    whole_runs, seen, host = False, set(), 0
    for line in source[:start].splitlines():
        text = line.strip()
        if host:  # the host launcher's includes: not compiled by NVRTC
            host += 1 if text.startswith("#if") else -1 if text.startswith("#endif") else 0
        elif text == "#ifndef __CUDACC_RTC__":
            host = 1
        elif line + "\n" == WHOLE_RUNS:
            whole_runs = True
        elif text in _CUDA_LINES + _FP8_LINES:
            seen.add(text)
        elif text and not text.startswith("//") and not text.startswith(KERNEL_MACROS):
            return None  # (the TMA flags are read by the kernel only)
    fp8 = bool(seen & set(_FP8_LINES))
    if host or seen != set(_CUDA_LINES + (_FP8_LINES if fp8 else ())):
        return None
    return Split(prefix(whole_runs, fp8), source[start:end + len(primitives.GUARD_END)])


@frozen
class Made:
    """A PCH made in this process: read through `path`, for programs of `split` compiled with `options`."""
    path: str
    split: Split
    options: tuple


made: Made | None = None  # set by the warm-up thread, read after it has ended
lock = threading.Lock()  # one compile through the PCH at a time


def available(version: tuple) -> bool:
    return tuple(version) >= FIRST_VERSION and os.path.isdir(FD_FOLDER)


def make(compile_program, split_: Split, options: tuple, code: str) -> Made | None:
    """Compile `split_`'s prefix then `code` with --create-pch (`compile_program(text, options,
    headers)` raises on failure) and keep the file open, unlinked; None where no PCH came of it."""
    folder = tempfile.mkdtemp(prefix="tlc-pch-")
    path = os.path.join(folder, "primitives.pch")
    try:
        compile_program(split_.prefix + code, options + (f"--create-pch={path}",), split_.headers())
        if os.path.getsize(path) == 0:
            return None
        fd = os.open(path, os.O_RDONLY)
        return Made(f"{FD_FOLDER}/{fd}", split_, tuple(options))
    except Exception:  # noqa: BLE001 - no PCH (a full disk, an NVRTC that refuses): compiles go without
        return None
    finally:
        for remove in (lambda: os.unlink(path), lambda: os.rmdir(folder)):
            try:
                remove()
            except OSError:
                pass


def usable_for(source: str, options: tuple) -> Split | None:
    """`source`'s split where the PCH made in this process serves it with `options`."""
    if made is None or tuple(options) != made.options:
        return None
    found = split(source)
    return found if found == made.split else None
