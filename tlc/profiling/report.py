"""What `tlc profile` reports, as data and text; no GPU here (profiling/gpu.py measures).

A kernel's resources are what the driver says of its loaded cubin (registers a thread, local
memory a thread (ptxas's spills and stack), static and dynamic shared memory, the most threads
a block may have at those registers); its occupancy the blocks an SM holds at once, from the
driver's occupancy calculator where there is a GPU, else from the target's limits (`blocks_per_sm`
below: the same arithmetic, tested against a fake record on the CPU).
"""
from __future__ import annotations

import json
from dataclasses import asdict, field

from ..frozen import frozen, record
from .source import SourceView, format_source_view


@frozen
class Resources:
    """One compiled kernel's resource usage (CU_FUNC_ATTRIBUTE_*)."""

    registers: int            # per thread
    local_bytes: int          # per thread: spills and stack
    static_smem: int          # bytes a block, declared in the kernel
    dynamic_smem: int         # bytes a block, asked for at launch
    max_threads_per_block: int
    threads: int              # the block size tlc launches


@frozen
class SmLimits:
    """What one SM holds (the target's numbers, the GPU's shared memory)."""

    registers: int = 65536
    threads: int = 2048
    blocks: int = 32
    smem: int = 233472        # an H100's 228 KB; the GPU's MaxSharedMemoryPerMultiprocessor on a GPU
    smem_per_block_reserved: int = 1024  # the driver keeps 1 KB of each block's share


def blocks_per_sm(r: Resources, limits: SmLimits) -> tuple[int, str]:
    """Blocks of this kernel one SM holds at once, and what limits it (registers are given
    out per warp in units of 256, threads and blocks per SM, shared memory with the driver's
    reserve per block)."""
    warps = -(-r.threads // 32)
    regs_per_warp = -(-max(r.registers, 1) * 32 // 256) * 256
    by = {"blocks per SM": limits.blocks,
          "threads per SM": limits.threads // max(r.threads, 1),
          "registers": limits.registers // (regs_per_warp * warps)}
    smem = r.static_smem + r.dynamic_smem
    if smem:
        by["shared memory"] = limits.smem // (smem + limits.smem_per_block_reserved)
    why = min(by, key=lambda k: by[k])
    return max(by[why], 0), why


@record
class GridProfile:
    """One kernel (one grid of a @kernel) profiled."""

    name: str
    resources: Resources
    blocks_per_sm: int
    occupancy_limit: str      # what limits the blocks per SM
    warps_per_sm_max: int     # the SM's warp slots (threads per SM / 32)
    ms: float                 # median time of one launch
    bytes_moved: int          # the array arguments' bytes, each moved once
    flops: float | None       # None: not known (no gemm and no hint)

    @property
    def occupancy(self) -> float:
        """The fraction of the SM's warp slots the resident blocks fill."""
        return self.blocks_per_sm * -(-self.resources.threads // 32) / self.warps_per_sm_max

    @property
    def gbps(self) -> float:
        return self.bytes_moved / self.ms / 1e6

    @property
    def tflops(self) -> float | None:
        return None if self.flops is None else self.flops / self.ms / 1e9


@record
class Profile:
    """`tlc profile`'s result: each grid's profile and the measured ceilings."""

    kernel: str
    device: str
    arch: str
    grids: list[GridProfile]
    copy_gbps: float                  # device-to-device copy bandwidth, measured in this process
    peak_tflops: float | None = None  # a large f16 cuBLAS gemm, measured when a FLOP count is known
    trace: str | None = None          # the Chrome-trace file written
    ncu: dict = field(default_factory=dict)  # Nsight Compute's counters, name -> (value, unit)
    source: SourceView | None = None  # Nsight Compute's samples per .tl line (--source)
    ncu_grid: str | None = None  # the grid whose counters (and samples) those are (--grid)
    constants: dict = field(default_factory=dict)  # what the kernel was compiled with (config.json's included)


def format_report(p: Profile) -> str:
    """The text `tlc profile` prints."""
    lines = [f"{p.kernel} on {p.device} ({p.arch}); copy bandwidth measured {p.copy_gbps:.0f} GB/s"
             + (f", f16 gemm {p.peak_tflops:.0f} TFLOP/s" if p.peak_tflops else "")]
    for g in p.grids:
        r = g.resources
        rate = [f"{g.gbps:.1f} GB/s ({g.gbps / p.copy_gbps:.0%} of copy)"]
        if g.tflops is not None:
            rate.append(f"{g.tflops:.2f} TFLOP/s" + (f" ({g.tflops / p.peak_tflops:.0%} of gemm)" if p.peak_tflops else ""))
        lines += [f"  {g.name}: {g.ms * 1e3:.2f} us a launch, " + ", ".join(rate),
                  f"    registers {r.registers} a thread, local memory (spills, stack) {r.local_bytes} B a thread"
                  + ("  <- spills" if r.local_bytes else ""),
                  f"    shared memory {r.static_smem + r.dynamic_smem} B a block ({r.static_smem} static, "
                  f"{r.dynamic_smem} dynamic), {r.threads} threads a block (at most {r.max_threads_per_block})",
                  f"    occupancy {g.blocks_per_sm} block{'s' * (g.blocks_per_sm != 1)} an SM, "
                  f"{g.occupancy:.0%} of the warp slots (limited by {g.occupancy_limit})"]
    if p.ncu:
        lines.append("  Nsight Compute:" if p.ncu_grid is None or len(p.grids) == 1
                     else f"  Nsight Compute, {p.ncu_grid}:")
        lines += [f"    {name}: {value} {unit}".rstrip() for name, (value, unit) in p.ncu.items()]
    if p.source is not None:
        lines += format_source_view(p.source)
    if p.trace:
        lines.append(f"  trace: {p.trace} (chrome://tracing or ui.perfetto.dev)")
    return "\n".join(lines)


def to_json(p: Profile) -> str:
    out = asdict(p)
    out["constants"] = {k: v if isinstance(v, (bool, int, float, str)) else str(v) for k, v in p.constants.items()}
    for g, d in zip(p.grids, out["grids"]):
        d.update(occupancy=g.occupancy, gbps=g.gbps, tflops=g.tflops)
    return json.dumps(out, indent=2)


def chrome_trace(launches, device: str) -> dict:
    """A Chrome-trace / Perfetto document of `launches`: (name, start_us, duration_us, args)
    per launch, relative to the first; one complete event ("ph": "X") each, on one stream."""
    events = [{"name": "process_name", "ph": "M", "pid": 0, "args": {"name": device}},
              {"name": "thread_name", "ph": "M", "pid": 0, "tid": 0, "args": {"name": "stream"}}]
    for name, start, duration, args in launches:
        events.append({"name": name, "cat": "kernel", "ph": "X", "pid": 0, "tid": 0,
                       "ts": round(start, 3), "dur": round(duration, 3), "args": args})
    return {"traceEvents": events, "displayTimeUnit": "ns"}
