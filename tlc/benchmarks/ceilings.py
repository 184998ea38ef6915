"""The ceilings every suite holds its kernels against, measured in the run itself by the same
method as the kernels (tlc.timing: CUDA events, L2 flushed, median): the device-to-device copy
bandwidth (the roof of a memory-bound kernel) and the tensor cores' f16 rate through cuBLAS
(the roof of a gemm).  Also the GPU's name as a file name's part."""
from __future__ import annotations

import re

from ..timing import compare

PEAK_N = 8192  # the tensor-core ceiling: an f16 torch.matmul of 8192^3 (cuBLAS, f32 accumulation)


def copy_bandwidth(torch, min_ms: float) -> float:
    """GB/s (bytes read plus written) of a device-to-device copy of 1 GiB."""
    n = 1 << 30
    src = torch.empty(n, dtype=torch.uint8, device="cuda")
    dst = torch.empty_like(src)
    ms = compare({"copy": lambda: dst.copy_(src)}, min_ms=min_ms)["copy"]
    return 2 * n / ms / 1e6


def tensor_core_tflops(torch, min_ms: float) -> float:
    """TFLOP/s of cuBLAS's f16 gemm at PEAK_N^3: what the tensor cores reach in practice (the
    roofline's flat roof; f8 and i8 gemms can pass it, they run at twice the rate)."""
    g = torch.Generator(device="cuda").manual_seed(0)
    a = torch.randn(PEAK_N, PEAK_N, device="cuda", dtype=torch.float16, generator=g)
    b = torch.randn(PEAK_N, PEAK_N, device="cuda", dtype=torch.float16, generator=g)
    ms = compare({"gemm": lambda: torch.matmul(a, b)}, min_ms=min_ms)["gemm"]
    return 2.0 * PEAK_N ** 3 / ms / 1e9


def measure(torch, results: dict, min_ms: float) -> float:
    """Both ceilings into `results` ("copy_GBps", "tc_peak_tflops"), said on stdout; returns
    the copy bandwidth."""
    results["copy_GBps"] = copy_bandwidth(torch, min_ms)
    results["tc_peak_tflops"] = tensor_core_tflops(torch, min_ms)
    print(f"device-to-device copy: {results['copy_GBps']:.0f} GB/s (read + write); "
          f"f16 cuBLAS {PEAK_N}^3: {results['tc_peak_tflops']:.0f} TFLOP/s")
    return results["copy_GBps"]


def gpu_slug(name: str) -> str:
    """'NVIDIA H200' -> 'h200': the GPU's part of a results file's name."""
    return re.sub(r"[^a-z0-9]+", "-", name.lower().replace("nvidia", "")).strip("-")


def device_facts(torch) -> dict:
    """The run's header: GPU, arch, SMs, PyTorch, date."""
    import datetime

    from ..runtime import target_arch

    props = torch.cuda.get_device_properties(0)
    return {"gpu": props.name, "arch": target_arch(), "sms": props.multi_processor_count, "torch": torch.__version__,
            "date": datetime.datetime.now().isoformat(timespec="seconds")}
