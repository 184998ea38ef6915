"""What one SM holds on the targets (sm_80 and sm_90 alike), and the grid and block a launch
may have (checked by the type checker for constant grids, the C launcher and the Python
runtime); how many blocks of a kernel fit on one SM by registers: shared by the row kernels'
rule (tileops/rules.py) and the code generator's estimate for other kernels without shared
memory (codegen/occupancy.py), which differ only in how many registers they count a thread."""
from __future__ import annotations

REGISTERS_PER_SM = 65536
THREADS_PER_SM = 2048
BLOCKS_PER_SM = 32  # ptxas rejects a larger minimum in __launch_bounds__
from ..targets.base import MAX_GRID, MAX_THREADS_PER_BLOCK, MAX_TILES  # noqa: F401  (a launch's, any target's)


def blocks_fitting(threads: int, registers: int, target=None) -> int:
    """Blocks of `threads` threads that fit on one SM when each thread needs `registers`
    (registers are given out 8 at a time), within the SM's thread and block limits (`target`'s,
    a `tlc.targets.Target`; by default the numbers above, sm_80's and sm_90a's); at least 1."""
    granted = -(-registers // 8) * 8
    blocks, threads_sm, registers_sm = (BLOCKS_PER_SM, THREADS_PER_SM, REGISTERS_PER_SM) if target is None else \
        (target.blocks_per_sm, target.threads_per_sm, target.registers_per_sm)
    return max(1, min(blocks, threads_sm // threads, registers_sm // (threads * granted)))
