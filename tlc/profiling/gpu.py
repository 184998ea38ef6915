"""The GPU side of `tlc profile`: a compiled kernel's resources from the driver, the measured
ceilings, a timed sequence of launches, and Nsight Compute's counters.  Needs CuPy."""
from __future__ import annotations

import csv
import functools
import io
import os
import shutil
import subprocess

from ..diagnostics import TlcError
from .report import Resources, SmLimits, blocks_per_sm

# Nsight Compute's counters that say where a kernel's time goes (--ncu)
NCU_METRICS = ("gpu__time_duration.sum", "sm__throughput.avg.pct_of_peak_sustained_elapsed",
               "dram__throughput.avg.pct_of_peak_sustained_elapsed", "launch__registers_per_thread",
               "sm__warps_active.avg.pct_of_peak_sustained_active", "launch__occupancy_limit_registers",
               "l1tex__t_bytes.sum", "lts__t_bytes.sum", "dram__bytes.sum")


def resources(compiled, device: int) -> Resources:
    """What the driver says of the loaded cubin of `compiled` (a `runtime.CompiledKernel`)."""
    from cupy.cuda import driver

    fn = compiled.function(device).ptr

    def get(which):
        return int(driver.funcGetAttribute(which, fn))

    return Resources(registers=get(driver.CU_FUNC_ATTRIBUTE_NUM_REGS),
                     local_bytes=get(driver.CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES),
                     static_smem=get(driver.CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES),
                     dynamic_smem=int(compiled.smem),
                     max_threads_per_block=get(driver.CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK),
                     threads=int(compiled.block[0]))


def occupancy(compiled, device: int, r: Resources, target) -> tuple[int, str, int]:
    """(blocks an SM holds, what limits them, the SM's warp slots): the driver's count where
    CuPy offers its calculator, the limit named from the target's numbers and the GPU's
    shared memory."""
    import cupy
    from cupy.cuda import driver

    attrs = cupy.cuda.Device(device).attributes
    limits = SmLimits(registers=int(attrs.get("MaxRegistersPerMultiprocessor", target.registers_per_sm)),
                      threads=int(attrs.get("MaxThreadsPerMultiProcessor", target.threads_per_sm)),
                      blocks=int(attrs.get("MaxBlocksPerMultiprocessor", target.blocks_per_sm)),
                      smem=int(attrs.get("MaxSharedMemoryPerMultiprocessor", SmLimits.smem)))
    blocks, why = blocks_per_sm(r, limits)
    calculator = getattr(driver, "occupancyMaxActiveBlocksPerMultiprocessor", None)
    if calculator is not None:
        blocks = int(calculator(compiled.function(device).ptr, r.threads, r.dynamic_smem))
    return blocks, why, limits.threads // 32


@functools.lru_cache(maxsize=None)
def copy_gbps(device: int, nbytes: int = 1 << 30) -> float:
    """Device-to-device copy bandwidth (bytes read plus written a second), measured once per
    process: the ceiling a memory-bound kernel is held against."""
    import cupy

    from ..timing import bench

    with cupy.cuda.Device(device):
        src = cupy.ones(nbytes // 4, cupy.float32)
        dst = cupy.empty_like(src)
        ms = bench(lambda: cupy.copyto(dst, src), min_ms=100.0, flush_l2=False)
        del src, dst
    return 2 * nbytes / ms / 1e6


@functools.lru_cache(maxsize=None)
def gemm_tflops(device: int, n: int = 8192) -> float:
    """A large f16 gemm's rate through CuPy (cuBLAS, f32 accumulation), measured once per
    process: the ceiling a gemm kernel is held against."""
    import cupy

    from ..timing import bench

    with cupy.cuda.Device(device):
        a = cupy.ones((n, n), cupy.float16)
        b = cupy.ones((n, n), cupy.float16)
        ms = bench(lambda: cupy.matmul(a, b), min_ms=100.0, flush_l2=False)
    return 2.0 * n ** 3 / ms / 1e9


def timed_sequence(launches, count: int) -> list[tuple[str, float, float]]:
    """Runs `launches` ((name, launch) in order) `count` times back to back on the current
    stream, an event before and after each: (name, start us after the first, duration us)."""
    import cupy

    stream = cupy.cuda.get_current_stream()
    marks = []
    for _ in range(count):
        for name, launch in launches:
            start, end = cupy.cuda.Event(), cupy.cuda.Event()
            start.record(stream)
            launch()
            end.record(stream)
            marks.append((name, start, end))
    stream.synchronize()
    first = marks[0][1]
    return [(name, cupy.cuda.get_elapsed_time(first, s) * 1e3, cupy.cuda.get_elapsed_time(s, e) * 1e3)
            for name, s, e in marks]


def find_ncu() -> str | None:
    """Nsight Compute's command line, on PATH or in the CUDA toolkit."""
    found = shutil.which("ncu")
    if found:
        return found
    for root in (os.environ.get("CUDA_HOME"), "/usr/local/cuda"):
        if root and os.path.isfile(os.path.join(root, "bin", "ncu")):
            return os.path.join(root, "bin", "ncu")
    return None


def require_ncu() -> str:
    """Nsight Compute's command line, or a TlcError saying it is not installed."""
    ncu = find_ncu()
    if ncu is None:
        raise TlcError("--ncu: Nsight Compute (ncu) is not installed (not on PATH, nor in $CUDA_HOME/bin or "
                       "/usr/local/cuda/bin); install it with the CUDA toolkit, or profile without --ncu")
    return ncu


def ncu_counters(kernel_name: str, command: list[str]) -> dict:
    """Nsight Compute's NCU_METRICS for the first launch of `kernel_name` in `command` (a
    `tlc profile` of one launch), name -> (value, unit)."""
    ncu = require_ncu()
    cmd = [ncu, "--csv", "--page", "raw", "--kernel-name", kernel_name, "--launch-count", "1",
           "--metrics", ",".join(NCU_METRICS), *command]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        raise TlcError(f"--ncu: Nsight Compute failed (exit {done.returncode}):\n{(done.stdout + done.stderr)[-2000:]}")
    return parse_ncu_csv(done.stdout)


def parse_ncu_csv(text: str) -> dict:
    """The metrics of ncu's `--csv --page raw` output (a header row of names, a row of units,
    a row per launch), name -> (value, unit), for the first launch."""
    rows = [r for r in csv.reader(io.StringIO(text)) if r]
    header = next((i for i, r in enumerate(rows) if "Kernel Name" in r), None)
    if header is None or header + 2 >= len(rows):
        return {}
    names, units, values = rows[header], rows[header + 1], rows[header + 2]
    return {n: (v, u) for n, u, v in zip(names, units, values) if n in NCU_METRICS}


def ncu_source(kernel_name: str, command: list[str]) -> str:
    """Nsight Compute's source page (`--page source --print-source cuda,sass --csv`, the
    SourceCounters section's warp stall sampling) for the first launch of `kernel_name` in
    `command` (a `tlc profile` of one launch), that run compiled with line information
    (TLC_LINEINFO=1: runtime.compile.pin_line_directives); the CSV text (source.py reads it)."""
    from ..runtime.compile import LINEINFO_ENV

    ncu = require_ncu()
    cmd = [ncu, "--csv", "--page", "source", "--print-source", "cuda,sass", "--section", "SourceCounters",
           "--kernel-name", kernel_name, "--launch-count", "1", *command]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=600, env={**os.environ, LINEINFO_ENV: "1"})
    if done.returncode != 0:
        raise TlcError(f"--source: Nsight Compute failed (exit {done.returncode}):\n{(done.stdout + done.stderr)[-2000:]}")
    return done.stdout


def lineinfo_ptx(compiled) -> str:
    """The PTX of `compiled`'s source as the --source run compiles it (NVRTC, -lineinfo, the
    `#line` directives pinned): its `.loc ... inlined_at` records place the templates' lines.
    The source is the build the profiled launches ran (`runtime.built_source`: the TMA-flags and
    whole-runs builds begin with a `#define` line, which moves every line of the `.cu` that
    Nsight Compute names; without it the templates' samples found no `.tl` line)."""
    from ..runtime import built_source
    from ..runtime import compile as c

    arch = compiled.arch if compiled.arch.startswith("compute_") else "compute_" + compiled.arch.removeprefix("sm_")
    saved = os.environ.get(c.LINEINFO_ENV)
    os.environ[c.LINEINFO_ENV] = "1"
    try:
        source = built_source(compiled.generated, compiled.assert_sites, generic=compiled.launched_generic)
        ptx = c.nvrtc_compile(source, arch, compiled.name)
    finally:
        if saved is None:
            del os.environ[c.LINEINFO_ENV]
        else:
            os.environ[c.LINEINFO_ENV] = saved
    return ptx.decode() if isinstance(ptx, bytes) else ptx
