"""The cpu target's runtime: generated C++ compiled by the system's C++ compiler into a shared
library, cached on disk by the hash of its source and the compiler's command, loaded with
ctypes and called with NumPy arrays.

Owns the compiler's command (`CXXFLAGS`: -O3 -march=native -fopenmp, -fwrapv because integers
wrap in the language, -fno-trapping-math because no kernel reads the floating-point exceptions
and g++ then turns the selects of tl_cpu.h's math into vector blends, no -ffast-math because NaN
and the rounding of every operation are the interpreter's; `WIDE_VECTORS` on an AVX-512 CPU),
finding the compiler (`$CXX`, else g++; `compiler_unavailable_reason`), the
cache (`$TLC_CACHE_DIR/cpp/<hash>.so`, written atomically as the CUDA cache is; an entry that
does not load is a miss, `load`) and a call
(the interpreter's argument checks, contiguous copies where an array is not, the grid
evaluated as a launch evaluates it).  A compiler that rejects generated code is a tlc bug:
`CppCompileError` names the kept source.
"""
from __future__ import annotations

import ctypes
import functools
import hashlib
import os
import platform
import shutil
import subprocess
import tempfile
from pathlib import Path

import numpy as np

from .. import ir
from ..cachedir import cache_dir, replace_atomically
from ..diagnostics import TlcError
from ..ir.walk import written_names

CXXFLAGS = ("-std=c++17", "-O3", "-march=native", "-fopenmp", "-fwrapv", "-fno-math-errno", "-fno-trapping-math",
            "-shared", "-fPIC", "-w")
# Where the CPU has AVX-512 g++ still prefers 256-bit vectors; 512-bit ones, with tl::gemm's
# register blocks 8 rows high (16 zmm accumulators; 8 rows of ymm spill), ran examples/gemm.tl's
# 1024^3 f32 in 17 ms of one core, not 24, and examples/softmax.tl's (4096, 4096) in 40, not 52.
WIDE_VECTORS = ("-mprefer-vector-width=512", "-DTL_GEMM_ROWS=8")


class CppCompileError(TlcError):
    """The C++ compiler rejected generated code (a tlc bug)."""


@functools.lru_cache(maxsize=None)
def find_compiler() -> str | None:
    """The C++ compiler: `$CXX` where set, else g++ on the PATH; None when there is none."""
    name = os.environ.get("CXX") or "g++"
    return shutil.which(name)


def compiler_unavailable_reason() -> str | None:
    """Why no kernel can be compiled for the cpu target here, or None when one can."""
    if find_compiler() is None:
        name = os.environ.get("CXX") or "g++"
        return f"no C++ compiler: '{name}' is not on the PATH (set CXX to one with OpenMP)"
    return None


@functools.lru_cache(maxsize=None)
def cpu_flags() -> str:
    """The `flags` line of /proc/cpuinfo ("" where there is none)."""
    try:
        return next((line for line in Path("/proc/cpuinfo").read_text().splitlines() if line.startswith("flags")), "")
    except OSError:
        return ""


def compiler_flags() -> tuple:
    """CXXFLAGS, and WIDE_VECTORS where the CPU has AVX-512."""
    return CXXFLAGS + (WIDE_VECTORS if "avx512f" in cpu_flags().split() else ())


@functools.lru_cache(maxsize=None)
def toolchain() -> str:
    """What, besides the source, decides the library: the compiler's version line, its flags
    and the machine (-march=native makes the code this CPU's)."""
    cxx = find_compiler()
    version = subprocess.run([cxx, "--version"], capture_output=True, text=True).stdout.splitlines()[:1]
    return "\n".join([cxx, *version, " ".join(compiler_flags()), platform.machine(), cpu_flags()])


def library_path(source: str) -> Path:
    key = hashlib.sha256((toolchain() + "\n" + source).encode()).hexdigest()[:32]
    return cache_dir() / "cpp" / f"{key}.so"


def build(source: str, name: str, *, damaged: bool = False) -> Path:
    """The shared library of `source`, compiled once (the cache holds it afterwards); `damaged`:
    the cached one would not load, so it is compiled again over it."""
    path = library_path(source)
    if path.exists() and not damaged:
        return path
    with tempfile.TemporaryDirectory(prefix="tlc-cpp-") as tmp:
        cpp, lib = Path(tmp) / f"{name}.cpp", Path(tmp) / f"{name}.so"
        cpp.write_text(source, encoding="utf-8")
        done = subprocess.run([find_compiler(), *compiler_flags(), str(cpp), "-o", str(lib)], capture_output=True, text=True)
        if done.returncode != 0:
            kept = cache_dir() / "cpp" / "failed" / f"{name}.cpp"
            try:
                replace_atomically(kept, source.encode())
            except OSError:
                kept = cpp
            log = "\n".join(done.stderr.splitlines()[:20])
            raise CppCompileError(f"the C++ compiler rejected the code generated for '{name}' (a tlc bug; the "
                                  f"source is kept at {kept}):\n{log}")
        try:
            replace_atomically(path, lib.read_bytes())
        except OSError as e:  # TLC_CACHE_DIR a file, read-only, full: this process's copy instead
            return _uncached(lib, e)
    return path


class CppLoadError(TlcError):
    """A compiled library that the dynamic loader refuses, even outside the cache."""


def load(source: str, name: str) -> ctypes.CDLL:
    """The loaded library of `source`.  A cached library that does not load (truncated or
    damaged on disk) is a miss, as in the CUDA cache: compiled again over it.  One that still
    does not load from the cache (TLC_CACHE_DIR on a noexec mount) is loaded from a temporary
    copy, after the cache's warning."""
    path = build(source, name)
    try:
        return ctypes.CDLL(str(path))
    except OSError:
        path = build(source, name, damaged=True)
    try:
        return ctypes.CDLL(str(path))
    except OSError as e:
        if path.parent != cache_dir() / "cpp":  # already the temporary copy
            raise _load_error(name, path, e) from None
        kept = _uncached(path, e, "load libraries from", " that is not mounted noexec")
    try:
        return ctypes.CDLL(str(kept))
    except OSError as e:
        raise _load_error(name, kept, e) from None


def _load_error(name: str, path: Path, error: OSError) -> CppLoadError:
    return CppLoadError(f"the cpu target cannot load the library compiled for '{name}' ({path}): {error}")


_warned_uncached = False


def _uncached(lib: Path, error: OSError, cannot: str = "write", writable: str = "") -> Path:
    """`lib` kept outside the cache (a temporary file removed when the process ends), after one
    warning that the cache cannot be written (or its libraries loaded), as the CUDA kernel
    cache warns."""
    global _warned_uncached
    import atexit
    import warnings

    from ..cachedir import CacheWarning

    if not _warned_uncached:
        _warned_uncached = True
        warnings.warn(f"tlc: cannot {cannot} the cpu target's cache in {cache_dir() / 'cpp'} "
                      f"({error.strerror or error}); kernels will be compiled again in every process. Set "
                      f"TLC_CACHE_DIR to a writable directory{writable} to cache them.", CacheWarning, stacklevel=4)
    fd, kept = tempfile.mkstemp(prefix="tlc-cpp-", suffix=".so")
    with os.fdopen(fd, "wb") as f:
        f.write(lib.read_bytes())
    atexit.register(os.unlink, kept)  # loaded by then: the process keeps its mapping
    return Path(kept)


_CTYPES = {"bool": ctypes.c_bool, "i8": ctypes.c_int8, "i16": ctypes.c_int16, "i32": ctypes.c_int32,
           "i64": ctypes.c_int64, "u8": ctypes.c_uint8, "u16": ctypes.c_uint16, "u32": ctypes.c_uint32,
           "u64": ctypes.c_uint64, "f32": ctypes.c_float, "f64": ctypes.c_double,
           "f16": ctypes.c_float, "bf16": ctypes.c_float,  # 16- and 8-bit float scalars travel as float
           "f8e4m3": ctypes.c_float, "f8e5m2": ctypes.c_float}


class CppKernel:
    """One generated kernel loaded from its library; `call(values)` runs its whole grid."""

    def __init__(self, kernel: ir.Kernel, generated):
        self.kernel, self.generated = kernel, generated
        lib = load(generated.source, generated.name)
        self.fn = getattr(lib, generated.entry)
        self.fn.restype = ctypes.c_int
        self.fn.argtypes = [ctypes.c_void_p if a.kind == "tensor" else _CTYPES[a.dtype.name] for a in generated.args] \
            + [ctypes.c_longlong] * 3 + [ctypes.c_void_p]
        self._lib = lib  # kept: the function lives as long as its library
        self.written = written_names(kernel.body)  # the copies of these alone go back

    def _dense_copy(self, a, arr: np.ndarray) -> np.ndarray:
        """The C-contiguous copy the generated C++ indexes, in place of a strided view; where the
        memory cannot hold it (a stride-0 view of 2**31 elements takes 8 GiB), the call's error."""
        from ..kernel import allocated

        return allocated(lambda: np.ascontiguousarray(arr),
                         f"kernel '{self.kernel.name}' on the cpu target cannot copy '{a.name}' (strides "
                         f"{arr.strides}) into the contiguous array its C++ reads", a.dtype, arr.shape)

    def call(self, values: dict) -> None:
        """Run the grid over the NumPy arrays and numbers in `values` (by parameter name), writing
        the arrays in place; the interpreter's errors for arguments that do not fit."""
        from ..interp.args import InterpError, bind
        from .grid import GridError, grid_extents, launches_blocks

        bound = bind(self.kernel, values)
        scalars = {k: v.item() if isinstance(v, np.generic) else v for k, v in bound.scalars.items()}
        try:
            grid = grid_extents(self.kernel, scalars)
            grid += [1] * (3 - len(grid))
            if not launches_blocks(self.kernel.name, grid):
                return
        except GridError as e:
            raise InterpError(str(e)) from None
        args, copied = [], []
        for a in self.generated.args:
            if a.kind == "tensor":
                arr = bound.tensors[a.name]
                if not arr.flags.c_contiguous:
                    contiguous = self._dense_copy(a, arr)
                    if a.name in self.written:  # an input may be a read-only view (np.broadcast_to)
                        copied.append((arr, contiguous))
                    arr = contiguous
                args.append(arr.ctypes.data)
            else:  # a scalar, a shape symbol or a dimension the launch computes (schedule/host_dims.py)
                args.append(bound.dims[a.name] if a.kind == "dim" else scalars[a.name])
        from .. import device_assert

        record = np.zeros(device_assert.RECORD_WORDS, np.uint64)
        status = self.fn(*args, *grid, record.ctypes.data)
        for original, contiguous in copied:
            original[...] = contiguous
        if record[0]:  # a device_assert failed: the GPU's record, read as the GPU runtime reads it
            raise device_assert.decode(self.generated.assert_sites, [int(w) for w in record])
        if status:  # a while loop ran as long as the interpreter lets one, or a step was 0: the interpreter's error
            from ..interp.machine import WHILE_LIMIT, _line

            why, loop = self.generated.stops[status - 1]
            if why == "step 0":
                raise InterpError(f"kernel '{self.kernel.name}': loop '{loop.var}' has step 0")
            raise InterpError(f"kernel '{self.kernel.name}': a while loop{_line(loop)} ran {WHILE_LIMIT} times "
                              "without ending; the cpu target stops it there, as the interpreter does (an endless loop?)")
