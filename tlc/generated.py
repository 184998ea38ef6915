"""What the code generator hands to the runtime for one kernel: its C source, the C arguments
in order, the launch's block, shared memory and grid (`GeneratedKernel`).  A leaf module (the
IR and dtypes only), so that a kernel loaded from the cache, which stores these, is launched
without importing the code generator."""
from __future__ import annotations

from .dtypes import DType
from .frozen import frozen


@frozen
class KernelArg:
    name: str
    kind: str  # tensor | scalar | shape
    dtype: DType
    c_type: str


@frozen
class GeneratedKernel:
    name: str
    launcher: str
    source: str
    args: tuple[KernelArg, ...]
    threads: int  # the block size a launch uses (a warp-specialized kernel adds a producer warpgroup)
    smem_bytes: int
    grid: tuple
    arch: str
    tensor_maps: tuple = ()  # ir.TensorMapSpec per TMA tensor map, passed after `args`
    # `grid` counts tiles; True: launch min(tiles, SMs) blocks that loop over them; "fill": min(tiles,
    # SMs x the blocks an SM holds) (schedule/pipeline_rows.py)
    persistent: bool | str = False
    cluster: int = 1  # blocks per cluster (__cluster_dims__); a persistent grid is a multiple of it
    # what a launch must satisfy for the build with TL_WHOLE_RUNS (codegen/whole_runs.py):
    # ((tensor, its last size's symbol or "", the run that size must be a multiple of; a negative run: a
    # multiple of -run or 1, its copies running only where it is not 1), ...); None: no such build; ():
    # no such copy (the build is the same code, and NVRTC takes it through the precompiled primitives)
    whole_runs: tuple | None = None
