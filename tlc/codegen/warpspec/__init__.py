"""Warp-specialized pipelines for the sm_90a target: a `pipelined` loop that copies tiles from
global into shared memory and computes on them becomes a producer/consumer ring.

The block gets one more warpgroup than the kernel asks for (threads THREADS .. THREADS+127),
the producer.  It gives most of its registers away (`setmaxnreg`) and fills the stages: one
elected thread issues a TMA copy per 128-byte column segment of each tile and the stage's
"full" mbarrier completes when their bytes have landed.  The consumer warpgroups (the
kernel's own THREADS threads, so every layout the scheduler chose still holds) take the
registers, wait on "full", compute, and arrive on the stage's "empty" mbarrier, which the
producer waits on before it overwrites the stage.  A single wgmma gemm keeps one group in
flight across iterations: a stage is released one iteration late, once its wgmma is done.

The TMA needs a tensor map per tensor, encoded on the host (`runtime/tensormap.py`, and the C
launcher); the driver refuses tensors whose base or row pitch is not 16-byte aligned.  The
kernel then gets `tl_tma` without bit 0 and its producer warpgroup copies element by element
instead (without bit 1, the epilogue stores from registers), so every shape stays correct and
only unaligned ones are slow.  The kernel takes the flags as `tl_tma_flags`; compiled with
`TL_TMA_FLAGS` defined, `tl_tma` is that constant instead and the paths it turns off are
compiled out: the runtime builds its kernels so, for launches whose maps all encode (half of
std.gemm's NVRTC time and cubin were the element-by-element copies), and compiles the generic
kernel only when a launch's maps do not (runtime/launch.py `function_for`).

Which loop, the stages, the barriers, the registers, the tile order and the clusters are the
scheduler's (`schedule/warpspec.py`), recorded on the kernel as an `ir.WarpSpecialization`;
this package only renders it.  A kernel without one (a copy the TMA cannot express, a statement
that synchronizes the block inside the loop, work before the loop that extra threads must not
do) gets the sm_80 style cp.async pipeline.
"""
from __future__ import annotations

from .emit import WarpSpecEmission
from .plan import TensorMapSpec, WarpSpecPlanning, consumer_registers, tma_dtype

__all__ = ["TensorMapSpec", "WarpSpecialized", "consumer_registers", "tma_dtype"]


class WarpSpecialized(WarpSpecPlanning, WarpSpecEmission):
    """Mixed into the sm_90a generator (`Sm90`): the decisions and the C."""
