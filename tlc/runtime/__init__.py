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
    to be parsed and checked.  Nothing is said of a GPU NVRTC cannot serve: the compile will."""
    from . import compile as c

    try:
        device = c.current_device() if device is None else device
        c.warm_up_nvrtc(c.nvrtc_arch(target_arch(device), c.device_capability(device), c.nvrtc_supported_archs()))
    except Exception:  # noqa: BLE001 - no GPU NVRTC serves, no CuPy: the compile reports it
        pass


def compile_kernel(kernel, generated, *, cache=None):
    """`generated` (a `tlc.codegen.GeneratedKernel` of `kernel`) compiled by NVRTC for the
    current GPU, from the cache when it holds it; raises `CudaCompileError` when NVRTC rejects
    the code (a tlc bug, with the log and the kept `.cu`)."""
    from . import compile as c
    from .cache import cache_key, default_cache
    from .launch import CompiledKernel

    require_cuda()
    arch = c.nvrtc_arch(generated.arch, c.device_capability(c.current_device()), c.nvrtc_supported_archs())
    key = cache_key(generated.source, kernel.constants, arch, c.nvrtc_toolchain(arch))
    cache = cache or default_cache()
    binary = cache.get_or_compile(key, generated.source,
                                  lambda: c.nvrtc_compile(generated.source, arch, generated.name))
    return CompiledKernel(kernel, generated, binary, arch)


def compile_program_kernel(sources: dict, name: str, constants: dict, device: int, build):
    """The kernel `name` of a program (its files' texts in `sources`) with `constants`, compiled
    for GPU `device`: from the cache by a key of what it is compiled from (no scheduling, code
    generation or NVRTC on a hit), else `build(arch)` -> (ir.Kernel, GeneratedKernel), compiled
    and stored.  The entry is JSON data (`ir_codec`): tlc's own IR and the binary, read back
    as tlc's data classes and nothing else, so a planted entry cannot run code.  The IR is
    held as JSON text within it, decoded when something reads `CompiledKernel.kernel`; a
    launch reads only the kernel's `LaunchFacts`, stored beside it."""
    from . import compile as c, ir_codec
    from .args import LaunchFacts
    from .cache import default_cache, program_key
    from .launch import CompiledKernel

    require_cuda()
    arch = target_arch(device)
    nvrtc = c.nvrtc_arch(arch, c.device_capability(device), c.nvrtc_supported_archs())
    cache = default_cache()
    key = program_key(sources, name, sorted((k, str(v)) for k, v in constants.items()), arch, c.nvrtc_toolchain(nvrtc))
    blob = cache.load(key)
    if blob is not None:
        try:
            facts, ir_text, generated, binary, built_arch = ir_codec.loads(blob)
            if not (isinstance(facts, LaunchFacts) and isinstance(ir_text, str)):
                raise ir_codec.BadEntry("not a program entry")
            return CompiledKernel(lambda: ir_codec.loads_text(ir_text), generated, binary, built_arch, facts)
        except Exception:  # noqa: BLE001 - an entry from another tlc, or damaged: rebuild it
            pass
    c.warm_up_nvrtc(nvrtc)  # NVRTC starts on a thread while the kernel is scheduled and generated
    kernel, generated = build(arch)
    compiled = compile_kernel(kernel, generated, cache=cache)
    try:
        entry = ir_codec.dumps((LaunchFacts.of(kernel), ir_codec.dumps_text(kernel), generated, compiled.binary,
                                compiled.arch))
    except ir_codec.NotData:  # a value the format cannot hold: run it, build it again next time
        return compiled
    cache.store(key, generated.source, entry)
    return compiled


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
