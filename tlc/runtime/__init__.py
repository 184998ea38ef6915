"""The GPU runtime: generated CUDA C compiled through NVRTC (CuPy's bindings), cached on disk,
and launched with NumPy, CuPy or PyTorch arrays; plus `nvcc` for offline PTX and cubins.

Modules: `compile` (NVRTC, nvcc, the device's architecture), `cache` (the on-disk binaries),
`args` (checking launch arguments; no GPU needed), `grid` (grid extents on the host), `launch`
(loading and launching), `device_array` (device buffers of any tlc dtype).  CuPy is imported
only when a kernel is compiled or launched, so `import tlc` never needs it.
"""
from __future__ import annotations

from ..ir.nodes import Kernel
from .args import LaunchArgumentError
from .cache import CacheWarning, KernelCache, cache_key, default_cache
from .compile import (CudaCompileError, CudaUnavailable, NvccOutput, codegen_arch,
                      cuda_unavailable_reason, nvcc_compile, require_cuda)
from .device_array import DeviceArray
from .launch import CompiledKernel, LaunchError


def target_arch(device: int | None = None) -> str:
    """The code generator's arch for a GPU (the current one by default): `sm_90a` on compute
    capability 9.0, `sm_80` on other GPUs from Ampere on."""
    from . import compile as c

    require_cuda()
    return codegen_arch(c.device_capability(c.current_device() if device is None else device))


def compile_kernel(kernel: Kernel, generated, *, cache: KernelCache | None = None) -> CompiledKernel:
    """`generated` (a `tlc.codegen.GeneratedKernel` of `kernel`) compiled by NVRTC for the
    current GPU, from the cache when it holds it; raises `CudaCompileError` when NVRTC rejects
    the code (a tlc bug, with the log and the kept `.cu`)."""
    from . import compile as c

    require_cuda()
    arch = c.nvrtc_arch(generated.arch, c.device_capability(c.current_device()), c.nvrtc_supported_archs())
    key = cache_key(generated.source, kernel.constants, arch, c.nvrtc_toolchain(arch))
    cache = cache or default_cache()
    binary = cache.get_or_compile(key, generated.source,
                                  lambda: c.nvrtc_compile(generated.source, arch, generated.name))
    return CompiledKernel(kernel, generated, binary, arch)


def benchmark(compiled: CompiledKernel, args: dict, *, warmup: int = 3, repeat: int = 20) -> list[float]:
    """Milliseconds per launch, `repeat` times, timed with CUDA events on the current stream.
    NumPy arguments are uploaded once first, so the times are the kernel's alone."""
    import cupy
    import numpy as np

    from .args import TORCH, array_kind

    device_args = {k: DeviceArray.from_numpy(v) if isinstance(v, np.ndarray) else v for k, v in args.items()}
    for _ in range(warmup):
        compiled(device_args)
    torch_args = [v for v in args.values() if array_kind(v) == TORCH]
    # time on the stream the launches go to: PyTorch's when a PyTorch tensor is passed
    stream = compiled.torch_stream(torch_args[0].get_device()) if torch_args else cupy.cuda.get_current_stream()
    times = []
    for _ in range(repeat):
        start, stop = cupy.cuda.Event(), cupy.cuda.Event()
        start.record(stream)
        compiled(device_args)
        stop.record(stream)
        stop.synchronize()
        times.append(cupy.cuda.get_elapsed_time(start, stop))
    return times


__all__ = ["compile_kernel", "target_arch", "benchmark", "CompiledKernel", "DeviceArray", "KernelCache",
           "default_cache", "cache_key", "nvcc_compile", "NvccOutput", "cuda_unavailable_reason",
           "require_cuda", "codegen_arch", "CacheWarning", "CudaCompileError", "CudaUnavailable",
           "LaunchArgumentError", "LaunchError"]
