"""Compiling generated CUDA C: NVRTC (through CuPy's bindings) for launches, `nvcc` for
`tlc build --emit ptx|cubin` on machines with no GPU, and the GPU facts both need.

Owns the compiler options, the choice of `-arch` from the device, and the errors: a compiler
that rejects generated code is a tlc bug, reported with the compiler's log and the path of the
kept `.cu`.  Does not own caching (`cache.py`) or launching (`launch.py`).

Why NVRTC directly and not `cupy.RawModule(code=...)`: CuPy's compile path appends `-ftz=true`
(flushing f32 denormals, unlike the reference interpreter and IEEE), picks `-arch=sm_90` where
Hopper kernels need `sm_90a`, and keys its own cache.  Calling `nvrtcCompileProgram` with tlc's
options and loading the cubin from bytes keeps the results IEEE and the cache tlc's.  CuPy is
imported lazily so that `import tlc` never needs it.
"""
from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

from .. import targets
from ..diagnostics import TlcError
from ..frozen import frozen

# IEEE float results, the same as the interpreter's: no flush to zero, exact division and sqrt
# (these are NVRTC's defaults too; spelled out so that no caller's defaults can change them)
COMMON_OPTIONS = ("--std=c++17", "-ftz=false", "-prec-div=true", "-prec-sqrt=true")


class CudaUnavailable(TlcError):
    """No CUDA GPU can be used from this process."""


class CudaCompileError(TlcError):
    """The CUDA compiler rejected code that tlc generated: a tlc bug."""


# ---- the GPU ----------------------------------------------------------------------------------

@functools.lru_cache(maxsize=None)
def cuda_unavailable_reason() -> str | None:
    """None when CuPy can use a CUDA GPU; otherwise why not, in a few words."""
    try:
        import cupy
    except ImportError:
        return "CuPy is not installed; pip install cupy-cuda13x"
    except Exception as e:  # a broken CuPy install raises anything at import
        return f"CuPy cannot be imported: {e}"
    try:
        n = cupy.cuda.runtime.getDeviceCount()
    except Exception as e:  # no driver, a driver too old for CuPy's CUDA, no device
        return f"CUDA reports: {e}"
    return None if n > 0 else "CUDA found no device"


def require_cuda() -> None:
    reason = cuda_unavailable_reason()
    if reason is not None:
        raise CudaUnavailable(f"no CUDA GPU is available ({reason}); use target='cpu'")


# the CUDA runtime's numbers of the attributes, where CuPy does not name them
_CAPABILITY = {"cudaDevAttrComputeCapabilityMajor": 75, "cudaDevAttrComputeCapabilityMinor": 76}


@functools.lru_cache(maxsize=None)
def device_capability(device_id: int) -> tuple[int, int]:
    """(major, minor) of GPU `device_id`, asked of the runtime attribute by attribute: CuPy's
    `Device(i).compute_capability` cost a cached first call on the H200 0.33 ms, two attributes 0.004."""
    from cupy.cuda import runtime

    return tuple(int(runtime.deviceGetAttribute(getattr(runtime, name, number), device_id))
                 for name, number in _CAPABILITY.items())


def current_device() -> int:
    import cupy

    return cupy.cuda.runtime.getDevice()


def codegen_arch(capability: tuple[int, int]) -> str:
    """The code generator's target for a GPU: the one the registered targets choose for its
    compute capability (`targets.for_capability`: sm_90a on 9.0, sm_89 on 8.9 and later
    others, sm_86 on 8.6 and 8.7, sm_80 on 8.0, or a plugin's)."""
    name = targets.chosen(capability)  # its module not imported: a launch from the caches needs no more
    if name is None:
        oldest = min((t for t in targets.registered().values() if not t.host), key=lambda t: t.capability, default=None)
        need = f"compute capability {oldest.served()}" if oldest else "a registered tlc target"
        raise CudaUnavailable(f"tlc kernels need a GPU of {need}; this one is {capability[0]}.{capability[1]}; "
                              f"use target='cpu'")
    return name


def nvrtc_arch(kernel_arch: str, capability: tuple[int, int], supported: tuple[int, ...]) -> str:
    """The `-arch` value that runs `kernel_arch` code on a GPU of `capability`, as its target
    says (`Arch.compile_arch`): a cubin for the device itself where this NVRTC knows it, else
    PTX (the driver compiles it for the device at load); arch-specific code for its own arch."""
    target = targets.arch(kernel_arch)  # tlc's own from its facts, its module not imported
    if not target.serves(capability):
        raise TlcError(f"a kernel generated for {kernel_arch} runs only on compute capability {target.served()}, "
                       f"not {capability[0]}.{capability[1]}")
    arch = target.compile_arch(capability, supported)
    if arch is None:
        raise CudaUnavailable(f"this NVRTC cannot compile for compute capability "
                              f"{capability[0]}.{capability[1]} (it knows {', '.join(map(str, supported))})")
    return arch


# ---- NVRTC ------------------------------------------------------------------------------------

# A program cache key needs NVRTC's version and the archs it knows (`nvrtc_toolchain`,
# `nvrtc_arch`), and CuPy 14 binds NVRTC at its first call in a process (cupy_backends'
# _cnvrtc.pxi: ctypes.CDLL of the soname for its CUDA major version, then each of 17 functions'
# address, each logged): 0.47 ms of a cached first call on the H200, which compiles nothing.  Where
# the process has loaded that library already (PyTorch's CUDA build links it), the two questions
# are asked of it directly: a library opened with RTLD_NOLOAD is the one loaded under that name,
# and any later dlopen of the name, CuPy's included, returns that same library, so the answers
# are those CuPy's NVRTC would give.  Elsewhere (not loaded yet, another CuPy, HIP) CuPy answers.
_NVRTC_SONAMES = {11: "libnvrtc.so.11.2", 12: "libnvrtc.so.12", 13: "libnvrtc.so.13"}  # as _cnvrtc.pxi names them


@functools.lru_cache(maxsize=1)
def _loaded_nvrtc():
    """The NVRTC library CuPy 14 calls, where this process has loaded it; else None."""
    try:
        import ctypes

        import cupy
        from cupy.cuda import runtime

        if runtime.is_hip or not cupy.__version__.startswith("14."):
            return None
        name = _NVRTC_SONAMES.get(runtime._getCUDAMajorVersion())
        return None if name is None else ctypes.CDLL(name, mode=os.RTLD_NOLOAD | os.RTLD_LAZY)
    except Exception:  # noqa: BLE001 - not loaded, or a CuPy without these: CuPy's own call answers
        return None


def _ask_loaded_nvrtc(function: str, count: int):
    """`count` ints that NVRTC's `function` writes through one pointer per int (nvrtcVersion) or
    one pointer to all of them; None where the loaded library cannot be asked."""
    lib = _loaded_nvrtc()
    if lib is None:
        return None
    import ctypes
    import struct

    try:
        fn = getattr(lib, function)
        # the answers' memory: a bytearray's, addressed through ctypes' c_char (NumPy's `.ctypes`
        # and a new ctypes array type each cost a process's first use tens of microseconds)
        out = bytearray(4 * max(count, 1))
        view = ctypes.c_char.from_buffer(out)
        address = ctypes.addressof(view)
        if function == "nvrtcVersion":
            fn.argtypes, fn.restype = [ctypes.c_void_p, ctypes.c_void_p], ctypes.c_int
            status = fn(address, address + 4)
        else:
            fn.argtypes, fn.restype = [ctypes.c_void_p], ctypes.c_int
            status = fn(address)
        del view
    except (AttributeError, OSError):
        return None
    return list(struct.unpack_from(f"{count}i", out)) if status == 0 else None


@functools.lru_cache(maxsize=None)
def nvrtc_version() -> tuple[int, int]:
    found = _ask_loaded_nvrtc("nvrtcVersion", 2)
    if found is not None:
        return tuple(found)
    from cupy.cuda import nvrtc

    return tuple(nvrtc.getVersion())


@functools.lru_cache(maxsize=None)
def nvrtc_supported_archs() -> tuple[int, ...]:
    count = _ask_loaded_nvrtc("nvrtcGetNumSupportedArchs", 1)
    found = _ask_loaded_nvrtc("nvrtcGetSupportedArchs", count[0]) if count and count[0] > 0 else None
    if found is not None:
        return tuple(found)
    from cupy.cuda import nvrtc

    return tuple(int(a) for a in nvrtc.getSupportedArchs())


@functools.lru_cache(maxsize=None)
def cuda_include_dir() -> str | None:
    """The CUDA toolkit's headers, for generated code that includes more than NVRTC builds in."""
    candidates = []
    try:
        from cuda import pathfinder

        found = pathfinder.find_nvidia_header_directory("cudart")
        if found:
            candidates.append(found)
    except Exception:  # pathfinder missing or too old: the other places are enough
        pass
    for env in ("CUDA_PATH", "CUDA_HOME"):
        if os.environ.get(env):
            candidates.append(os.path.join(os.environ[env], "include"))
    try:
        import cupy

        if cupy.cuda.get_cuda_path():
            candidates.append(os.path.join(cupy.cuda.get_cuda_path(), "include"))
    except Exception:  # CuPy without a toolkit path
        pass
    candidates.append("/usr/local/cuda/include")
    return next((c for c in candidates if os.path.isfile(os.path.join(c, "cuda_fp16.h"))), None)


# TLC_LINEINFO=1 (set by `tlc profile --ncu --source` for the run it profiles): NVRTC records
# line information (-lineinfo, which leaves the machine code as it is) with every line of a
# kernel under the `#line` of its .tl statement (pin_line_directives), for Nsight Compute's
# per-line samples.  Part of the options, so of the cache key.
LINEINFO_ENV = "TLC_LINEINFO"


def nvrtc_options(arch: str, include: bool = True) -> tuple[str, ...]:
    """NVRTC's options for `arch`; with `include`, the toolkit's headers' folder, which costs
    a search of the file system the first time (a cache hit needs no compiler: `nvrtc_toolchain`)."""
    folder = cuda_include_dir() if include else None
    lineinfo = ("-lineinfo",) if os.environ.get(LINEINFO_ENV) else ()
    return COMMON_OPTIONS + (f"-arch={arch}",) + lineinfo + ((f"-I{folder}",) if folder else ())


def pin_line_directives(source: str, file_name: str) -> str:
    """`source` with a statement's `#line N "f.tl"` repeated before each line of its code: a
    `#line` numbers the lines after it N, N+1, ..., so the code of a statement that spans
    lines would be charged to the .tl lines below it.  A line that closes a function at the
    left margin ends the run; the lines after it are numbered as in `file_name` again."""
    out, directive = [], None
    lines = source.split("\n")
    for number, line in enumerate(lines, 1):
        if line.startswith("#line "):
            directive = line
            out.append(line)
            continue
        if directive and line.strip() and not line.startswith("#") and not out[-1].endswith("\\"):
            out.append(directive)
        out.append(line)
        if directive and line == "}":
            directive = None
            out.append(f'#line {number + 1} "{file_name}"')
    return "\n".join(out)


def nvrtc_toolchain(arch: str) -> str:
    """What, besides the source, decides NVRTC's output: part of the cache key."""
    major, minor = nvrtc_version()
    return f"nvrtc {major}.{minor} " + " ".join(nvrtc_options(arch, include=False))


# NVRTC's first compile in a process costs ~200 ms more than the next (its optimizer starts:
# the H200 measured a kernel-less program at 227 ms first, 12 ms after; bench/nvrtc_time.py).
# A process about to compile starts that on a thread (`warm_up_nvrtc`) while Python schedules
# and generates the kernel; NVRTC runs without the GIL (Python beside it ran at 0.8 of its speed
# alone), and the real compile waits for it: std.gemm's then took 51 ms.  The warm-up reads the
# headers generated code includes and has code for ptxas, so that a machine's first compile
# finds them in memory too (the first on a fresh H200 took 1035 ms after a kernel-less warm-up).
# The program it compiles is templates/nvrtc_warm_up.cu; given the primitive files the kernels
# will inline, it compiles it after them and keeps them precompiled for the kernels (pch.py).
_warm_up = None


def warm_up_nvrtc(arch: str, primitive_files: tuple | None = None) -> None:
    """Start NVRTC for `arch` (an `-arch` value) on a thread, once per process; with
    `primitive_files` (`tlc.primitives`), precompile them for the compiles that follow."""
    global _warm_up
    if _warm_up is not None:
        return
    import threading

    from ..package_data import templates
    from . import pch

    options = nvrtc_options(arch)
    source = (templates() / "nvrtc_warm_up.cu").read_text()
    lineinfo = "-lineinfo" in options  # (the profiler's line tables name the .cu's lines: none through a PCH)

    def run():
        try:
            from cupy.cuda import nvrtc

            if primitive_files and not lineinfo and pch.available(nvrtc_version()):
                pch.made = pch.make(lambda text, opts, headers: _nvrtc_run(nvrtc, text, "tl_warm_up.cu", opts, headers),
                                    pch.guess(primitive_files), options, source)
                if pch.made is not None:
                    return
            _nvrtc_run(nvrtc, source, "tl_warm_up.cu", options)
        except Exception:  # noqa: BLE001 - whatever fails here, the real compile reports
            pass
    # not a daemon: a process that ends before the warm-up does waits for it, rather than have
    # NVRTC's static destructors run under a compile at exit
    _warm_up = threading.Thread(target=run, name="tlc-nvrtc-warm-up", daemon=False)
    _warm_up.start()


class _Rejected(Exception):
    def __init__(self, log: str):
        super().__init__(log)
        self.log = log


def _nvrtc_run(nvrtc, text: str, file_name: str, options: tuple, headers: dict | None = None, output=None):
    """Compile `text` (with the in-memory `headers`, name -> text); `output(prog)` of it, or
    `_Rejected` with NVRTC's log."""
    headers = headers or {}
    prog = nvrtc.createProgram(text, file_name, tuple(h.encode() for h in headers.values()),
                               tuple(n.encode() for n in headers))
    try:
        try:
            nvrtc.compileProgram(prog, options)
        except nvrtc.NVRTCError:
            raise _Rejected(nvrtc.getProgramLog(prog)) from None
        return output(prog) if output else None
    finally:
        nvrtc.destroyProgram(prog)


def nvrtc_compile(source: str, arch: str, name: str) -> bytes:
    """A cubin (or PTX for a `compute_XY` arch) of `source`; `CudaCompileError` on failure."""
    from cupy.cuda import nvrtc

    from . import pch

    options = nvrtc_options(arch)
    if _warm_up is not None:
        _warm_up.join()  # one compile at a time
    if "-lineinfo" in options:
        source = pin_line_directives(source, f"{name}.cu")
    output = nvrtc.getPTX if arch.startswith("compute_") else nvrtc.getCUBIN
    split = pch.usable_for(source, options)
    if split is not None:
        try:
            with pch.lock:
                return _nvrtc_run(nvrtc, split.program(source, name), f"{name}.cu",
                                  options + (f"--use-pch={pch.made.path}",), split.headers(), output)
        except _Rejected:
            pass  # the compile without the PCH below says why
    try:
        return _nvrtc_run(nvrtc, source, f"{name}.cu", options, output=output)
    except _Rejected as e:
        raise compile_error("NVRTC", name, arch, source, e.log) from None


def compile_error(compiler: str, name: str, arch: str, source: str, log: str) -> CudaCompileError:
    """The error for generated code that a compiler rejected, with the `.cu` kept on disk."""
    kept = keep_source(name, source)
    # the compilers name the file they were given; point at the copy that outlives them
    log = log.replace(f"{name}.cu", kept)
    log = "\n".join("    " + line for line in log.strip().splitlines())
    return CudaCompileError(
        f"internal compiler error: {compiler} rejected the CUDA C that tlc generated for kernel "
        f"'{name}' ({arch}). This is a bug in tlc, not in your program; please report it with "
        f"the .tl file and this message.\n  generated source: {kept}\n  {compiler} log:\n{log}")


def keep_source(name: str, source: str) -> str:
    """Write `source` where a person can find it after the process ends; return the path."""
    from .cache import default_dir

    for folder in (default_dir() / "failed", Path(tempfile.gettempdir()) / "tlc-failed"):
        try:
            folder.mkdir(parents=True, exist_ok=True)
            fd, path = tempfile.mkstemp(dir=folder, prefix=f"{name}-", suffix=".cu")
            with os.fdopen(fd, "w") as f:
                f.write(source)
            return path
        except OSError:
            continue
    return "(could not be written anywhere)"


# ---- nvcc (offline: tlc build --emit ptx|cubin) ------------------------------------------------

@frozen
class NvccOutput:
    binary: bytes  # the .ptx text as bytes, or the cubin
    log: str  # nvcc's and ptxas's messages (with ptxas_verbose, registers and shared memory)


TOOLKIT_ROOT = Path("/usr/local")  # where the CUDA toolkit's installers put cuda and cuda-X.Y


def cuda_toolkit_nvcc() -> str | None:
    """Where nvcc is, or None: on PATH, else in $CUDA_HOME/bin or $CUDA_PATH/bin, else in the
    toolkit's usual install folders (/usr/local/cuda, then the newest /usr/local/cuda-X.Y).
    The one search shared by `tlc build --emit ptx|cubin` and the test suite's nvcc tests."""
    found = shutil.which("nvcc")
    if found:
        return found
    folders = [os.environ[env] for env in ("CUDA_HOME", "CUDA_PATH") if os.environ.get(env)]
    versioned = sorted(TOOLKIT_ROOT.glob("cuda-*/bin/nvcc"), key=_toolkit_version, reverse=True)
    folders += [str(TOOLKIT_ROOT / "cuda"), *(str(p.parent.parent) for p in versioned)]
    for folder in folders:
        path = os.path.join(folder, "bin", "nvcc")
        if os.access(path, os.X_OK):
            return path
    return None


def _toolkit_version(nvcc: Path) -> tuple[int, ...]:
    """(13, 0) for /usr/local/cuda-13.0/bin/nvcc: 12.10 is newer than 12.9."""
    return tuple(int(n) for n in re.findall(r"\d+", nvcc.parent.parent.name.removeprefix("cuda-")))


def find_nvcc() -> str:
    found = cuda_toolkit_nvcc()
    if found:
        return found
    raise TlcError("nvcc, the CUDA compiler, was not found (looked on PATH, in $CUDA_HOME/bin, "
                   "$CUDA_PATH/bin, /usr/local/cuda/bin and /usr/local/cuda-*/bin); install the "
                   "CUDA toolkit, or emit the CUDA C with --emit cu")


def nvcc_compile(source: str, arch: str, emit: str, *, name: str = "kernel",
                 ptxas_verbose: bool = False, nvcc: str | None = None,
                 timeout: float = 600) -> NvccOutput:
    """Compile `source` for `arch` (`sm_80`, `sm_90a`, ...) to PTX or a cubin with nvcc, in a
    temporary directory; needs no GPU.  `ptxas_verbose` adds ptxas's resource report to the log
    (cubin only: PTX is not assembled)."""
    if emit not in ("ptx", "cubin"):
        raise TlcError(f"nvcc emits ptx or cubin, not '{emit}'")
    nvcc = nvcc or find_nvcc()
    with tempfile.TemporaryDirectory(prefix="tlc-nvcc-") as tmp:
        src, out = os.path.join(tmp, f"{name}.cu"), os.path.join(tmp, f"{name}.{emit}")
        with open(src, "w") as f:
            f.write(source)
        cmd = [nvcc, f"-arch={arch}", f"-{emit}", *COMMON_OPTIONS[1:], "-std=c++17", "-o", out, src]
        if ptxas_verbose and emit == "cubin":
            cmd[1:1] = ["-Xptxas", "-v"]
        try:
            done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        except FileNotFoundError:
            raise TlcError(f"nvcc could not be run from {nvcc}") from None
        except subprocess.TimeoutExpired:
            raise TlcError(f"nvcc did not finish compiling kernel '{name}' in {timeout:.0f} s") from None
        log = (done.stdout + done.stderr).replace(src, f"{name}.cu")
        if done.returncode != 0:
            if "Unsupported gpu architecture" in log or "is not defined for option 'gpu-architecture'" in log:
                raise TlcError(f"{nvcc} does not know the architecture {arch}; install a newer "
                               f"CUDA toolkit or choose another --arch\n{log.strip()}")
            raise compile_error("nvcc", name, arch, source, log)
        with open(out, "rb") as f:
            return NvccOutput(f.read(), log)
