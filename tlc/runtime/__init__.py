"""The GPU runtime: generated CUDA C compiled through NVRTC (CuPy's bindings), cached on disk,
and launched with NumPy, CuPy or PyTorch arrays; plus `nvcc` for offline PTX and cubins.

Modules: `compile` (NVRTC, nvcc, the device's architecture), `cache` (the on-disk binaries),
`args` (checking launch arguments; no GPU needed), `grid` (grid extents on the host), `launch`
(loading and launching), `device_array` (device buffers of any tlc dtype).  CuPy is imported
only when a kernel is compiled or launched, so `import tlc` never needs it.
"""
from __future__ import annotations

import importlib

from .compile import (CudaCompileError, CudaUnavailable, NvccOutput, codegen_arch,
                      cuda_unavailable_reason, nvcc_compile, require_cuda)

# the names this package offers from its modules, each imported at its first use: `import tlc`
# reaches this package (kernel.py), and the launcher's modules bring in the code generator's
# and the scheduler's packages, which a call served from the caches never needs
_LAZY = {"LaunchArgumentError": "args", "CacheWarning": "cache", "KernelCache": "cache", "cache_key": "cache",
         "default_cache": "cache", "program_key": "cache", "DeviceArray": "device_array", "GridError": "grid",
         "CompiledKernel": "launch", "LaunchError": "launch"}


def __getattr__(name: str):
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def target_arch(device: int | None = None) -> str:
    """The code generator's arch for a GPU (the current one by default): the registered target
    that serves its compute capability (`compile.codegen_arch`)."""
    from . import compile as c

    require_cuda()
    return codegen_arch(c.device_capability(c.current_device() if device is None else device))


def warm_up(device: int | None = None) -> None:
    """Start NVRTC on a thread for the GPU `device` (the current one by default), where a
    compile is likely to follow (`compile.warm_up_nvrtc`): a module loaded for the GPU that had
    to be parsed and checked.  Nothing is said of a GPU NVRTC cannot serve: the compile will.
    The parsing and checking leave it time to precompile the target's primitives too (pch.py).
    The target and NVRTC's arch are found here, before the thread starts: finding them on it
    (session 26's WARM_UP_FINDS_ARCH) loaded no faster on the H200 (load median 354.2 ms
    against 340.1, bench/results/q_H_cold_steps-h200-twentyeighth.txt)."""
    from .. import primitives, targets
    from . import compile as c

    try:
        device = c.current_device() if device is None else device
        arch = target_arch(device)
        c.warm_up_nvrtc(c.nvrtc_arch(arch, c.device_capability(device), c.nvrtc_supported_archs()),
                        primitives.BY_GENERATOR.get(targets.get(arch).generator))
    except Exception:  # noqa: BLE001 - no GPU NVRTC serves, no CuPy: the compile reports it
        pass


def built_source(generated, asserts, generic: bool = False) -> str:
    """`generated.source` as the runtime compiles it: for launches whose tensor maps all encode
    (`tensormap.built_flags`) and whose copies keep whole runs (`whole_runs`), each a `#define`
    line before the source, unless `generic` (or, for the whole runs, the kernel `asserts`, whose
    record was read from one module: host_asserts.whole_runs_build).  The profiler's PTX compiles
    the same text, so that its line numbers are the binary's (tlc/profiling/gpu.py)."""
    source = generated.source
    if generated.tensor_maps and not generic:
        from .tensormap import built_flags, with_flags

        source = with_flags(source, built_flags(generated.tensor_maps, asserts))
    if generated.whole_runs is not None and not generic:
        from .host_asserts import whole_runs_build
        from .whole_runs import with_whole_runs

        if whole_runs_build(asserts):
            source = with_whole_runs(source, generated.whole_runs)
    return source


def compile_kernel(kernel, generated, *, cache=None, generic: bool = False):
    """`generated` (a `tlc.codegen.GeneratedKernel` of `kernel`) compiled by NVRTC for the
    current GPU, from the cache when it holds it; raises `CudaCompileError` when NVRTC rejects
    the code (a tlc bug, with the log and the kept `.cu`).  A kernel that takes tensor maps is
    compiled for launches whose maps all encode (`tensormap.built_flags`) and one whose copies
    move whole runs for launches that keep them whole (`whole_runs`), unless `generic`; the `CompiledKernel` compiles the others if a launch needs them."""
    from . import compile as c
    from .args import LaunchFacts
    from .cache import cache_key, default_cache
    from .launch import CompiledKernel

    require_cuda()
    arch = c.nvrtc_arch(generated.arch, c.device_capability(c.current_device()), c.nvrtc_supported_archs())
    source = built_source(generated, LaunchFacts.of(kernel).asserts, generic)
    key = cache_key(source, kernel.constants, arch, c.nvrtc_toolchain(arch))
    cache = cache or default_cache()
    binary = cache.get_or_compile(key, source, lambda: c.nvrtc_compile(source, arch, generated.name))
    return CompiledKernel(kernel, generated, binary, arch, generic=generic)


def compile_program_kernel(sources: dict, name: str, constants: dict, device: int, build):
    """The kernel `name` of a program (its files' texts in `sources`) with `constants`, compiled
    for GPU `device`: from the cache by a key of what it is compiled from (no scheduling, code
    generation or NVRTC on a hit), else `build(arch)` -> (ir.Kernel, GeneratedKernel), compiled
    and stored (`program_entry`)."""
    from . import compile as c
    from .cache import default_cache, text_digest

    digests = {k: text_digest(v) for k, v in sources.items()}
    arch, nvrtc, key = _program_entry(digests, name, sorted((k, str(v)) for k, v in constants.items()), device)
    cache = default_cache()
    blob = cache.load(key)
    if blob is not None:
        try:
            return read_program_entry(blob)
        except Exception:  # noqa: BLE001 - an entry from another tlc, or damaged: rebuild it
            pass
    # NVRTC starts on a thread while the kernel is scheduled and generated: not time enough to
    # precompile the primitives too (pch.py), whose compile would wait for them
    c.warm_up_nvrtc(nvrtc)
    kernel, generated = build(arch)
    compiled = compile_kernel(kernel, generated, cache=cache)
    from . import ir_codec

    try:
        entry = program_entry(kernel, generated, compiled.binary, compiled.arch)
    except ir_codec.NotData:  # a value the format cannot hold: run it, build it again next time
        return compiled
    cache.store(key, generated.source, entry)
    return compiled


def _program_entry(digests: dict, name: str, constants_key, device: int) -> tuple:
    """(arch, NVRTC's -arch, program cache key) of the kernel `name` of a program whose files'
    texts have the SHA-256 `digests`, with constants `constants_key` (their names and `str`
    values, sorted), for GPU `device`."""
    from . import compile as c
    from .cache import program_key_of

    require_cuda()
    arch = target_arch(device)
    nvrtc = c.nvrtc_arch(arch, c.device_capability(device), c.nvrtc_supported_archs())
    return arch, nvrtc, program_key_of(digests, name, constants_key, arch, c.nvrtc_toolchain(nvrtc))


def cached_program_kernel(digests: dict, name: str, constants_key, device: int, arch: str):
    """The kernel `name` of a program (its files' texts' SHA-256 `digests`, by name) with
    constants `constants_key` (as `_program_entry` takes them) from the program cache, where GPU
    `device`'s arch is `arch` and the cache holds it; else None (nothing is built: the launch
    memo's hit, `checked_cache.LaunchMemo`)."""
    from .cache import default_cache

    found, _, key = _program_entry(digests, name, constants_key, device)
    blob = default_cache().load(key) if found == arch else None
    if blob is None:
        return None
    try:
        return read_program_entry(blob)
    except Exception:  # noqa: BLE001 - damaged or another tlc's: the general path rebuilds it
        return None


# The program cache's entry: this line, a JSON line of what a launch reads (the kernel's
# `LaunchFacts`, its generated code's `GeneratedLaunch` fields, the binary's arch, the sizes of the
# parts after it), then the binary as it is, the generated kernel's JSON and the IR's JSON, each
# deflated (zlib; std.gemm's: 152 KB of JSON in 47 KB, which a launch reads and checksums with
# the rest: on this 2-core machine each 100 KB read, hashed and copied cost ~0.1 ms).  A launch
# decodes the line alone: tlc's data classes that `import tlc` has loaded, a few hundred values;
# the C source, the IR (a few thousand objects) and `tlc.generated` are inflated and decoded when
# something reads `CompiledKernel.generated` or `.kernel`.  JSON data only (`ir_codec`), so a
# planted entry cannot run code, and a part inflates to at most `ir_codec.DEFLATED_LIMIT` bytes.
PROGRAM_MAGIC = b"tlc-program-8\n"  # 8: no one-part flag (ONE_PART_BUILD removed); 7: LaunchFacts.loops


def program_entry(kernel, generated, binary: bytes, arch: str) -> bytes:
    """The program cache's entry of `kernel`; `ir_codec.NotData` for a value the format cannot hold."""
    from . import ir_codec
    from .args import LaunchFacts
    from .launch import GeneratedLaunch

    parts = (bytes(binary), ir_codec.dumps_deflated(generated), ir_codec.dumps_deflated(kernel))
    head = (LaunchFacts.of(kernel), *GeneratedLaunch.fields_of(generated), arch, tuple(len(p) for p in parts))
    return PROGRAM_MAGIC + ir_codec.dumps_text(head).encode() + b"\n" + b"".join(parts)


def read_program_entry(blob: bytes):
    """The `CompiledKernel` of a program cache entry; `ir_codec.BadEntry` (or another error of a
    damaged entry) when it is not one."""
    from . import ir_codec
    from .args import LaunchFacts
    from .launch import CompiledKernel, GeneratedLaunch

    if not blob.startswith(PROGRAM_MAGIC):
        raise ir_codec.BadEntry("not a program entry of this tlc")
    head_end = blob.find(b"\n", len(PROGRAM_MAGIC))
    if head_end < 0:
        raise ir_codec.BadEntry("damaged entry: not a program entry")
    facts, fields, args, arch, sizes = ir_codec.loads_text(blob[len(PROGRAM_MAGIC):head_end].decode())
    rest = memoryview(blob)[head_end + 1:]  # the parts after the line are sliced, not copied
    if not (isinstance(facts, LaunchFacts) and isinstance(fields, dict) and isinstance(arch, str)
            and len(sizes) == 3 and all(type(n) is int and n >= 0 for n in sizes) and sum(sizes) == len(rest)):
        raise ir_codec.BadEntry("damaged entry: not a program entry")
    binary, gen_text, ir_text = bytes(rest[:sizes[0]]), rest[sizes[0]:sizes[0] + sizes[1]], rest[sizes[0] + sizes[1]:]
    generated = GeneratedLaunch(fields, args, lambda: ir_codec.loads_deflated(gen_text))
    return CompiledKernel(lambda: ir_codec.loads_deflated(ir_text), generated, binary, arch, facts)


def benchmark(compiled, args: dict, *, min_ms: float = 300.0) -> float:
    """Median milliseconds of one launch, by the method of every tlc benchmark (`tlc.timing`:
    warm-up, L2 flushed before each run, at least `min_ms` of runs).  NumPy arguments are
    uploaded once first, so the time is the kernel's alone."""
    import numpy as np

    from ..timing import bench
    from .args import TORCH, array_kind
    from .device_array import DeviceArray

    device_args = {k: DeviceArray.from_numpy(v) if isinstance(v, np.ndarray) else v for k, v in args.items()}
    torch_args = [v for v in args.values() if array_kind(v) == TORCH]
    if not torch_args:
        return bench(lambda: compiled(device_args), min_ms=min_ms)
    # PyTorch tensors launch on PyTorch's current stream: make it CuPy's too, so the events
    # that time the runs are recorded where the runs go.
    with compiled.torch_stream(torch_args[0].get_device()):
        return bench(lambda: compiled(device_args), min_ms=min_ms)


__all__ = ["compile_kernel", "target_arch", "benchmark", "CompiledKernel", "DeviceArray", "KernelCache",
           "default_cache", "cache_key", "nvcc_compile", "NvccOutput", "cuda_unavailable_reason",
           "require_cuda", "codegen_arch", "CacheWarning", "CudaCompileError", "CudaUnavailable",
           "GridError", "LaunchArgumentError", "LaunchError"]
