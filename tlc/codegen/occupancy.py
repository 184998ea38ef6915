"""How many blocks per SM a kernel asks ptxas for (`__launch_bounds__(THREADS, MIN_BLOCKS)`).

A kernel without gemm or shared memory (row-wise and element-wise kernels) is memory-bound: its
speed is the bytes in flight per SM, i.e. how many of its blocks are resident at once.  Left
alone, ptxas spends registers on instruction-level parallelism (up to 255 a thread under
`__launch_bounds__(THREADS)`: softmax at 256 threads took 128, two blocks per SM where four
fit), so such a kernel asks for as many blocks as its fragments leave room for: each thread's
fragment registers plus OVERHEAD for addresses, indices and temporaries, and at least one.  Kernels with gemm or
shared memory keep ptxas's choice (their occupancy is limited by shared memory and their
speed by instruction-level parallelism).

A kernel scheduled from a @kernel arrives with the scheduler's count already in `min_blocks`
(schedule/blocks_per_sm.py, which `--emit ir` notes), as do a tile op's row kernels; this
estimate serves the kernels that arrive without one (a tile op's element-wise kernels).
"""
from __future__ import annotations

from .. import ir
from ..ir.walk import statements
from ..schedule.layout import thread_registers
from ..schedule.sm_limits import BLOCKS_PER_SM, THREADS_PER_SM, blocks_fitting

OVERHEAD = 32             # registers a thread needs besides its fragments (std.nn without spills)


def fragment_registers(kernel: ir.Kernel) -> int:
    """32-bit registers per thread that the kernel's fragments take (16-bit elements pack two
    to a register; ptxas holds each 8-bit one, a bool, in a register of its own), all at once:
    an upper bound on what is live.  Counted four to a register, std.elementwise's logical_and
    of bool (three fragments of 32 a thread) asked for 9 blocks, 56 registers, and spilled 162
    bytes a thread to local memory (0.57 of copy on the H200)."""
    return sum(b.layout.registers if b.dtype.itemsize == 1 else thread_registers(b)
               for b in kernel.buffers if b.scope == "fragment" and b.layout is not None)


def min_blocks(kernel: ir.Kernel, threads: int, target=None) -> int | None:
    """Blocks per SM to ask for, or None to leave ptxas its choice.  A kernel's own
    `min_blocks` (a tile op's scheduling rule) wins, up to what the SM holds (`target`'s, a
    `tlc.targets.Target`; by default sm_limits' numbers)."""
    if kernel.min_blocks:
        blocks, threads_sm = (BLOCKS_PER_SM, THREADS_PER_SM) if target is None else \
            (target.blocks_per_sm, target.threads_per_sm)
        return max(1, min(kernel.min_blocks, blocks, threads_sm // threads))
    if any(b.scope == "shared" for b in kernel.buffers):
        return None
    if any(isinstance(s, ir.Gemm) for s in statements(kernel.body)):
        return None
    # At least 1: without a minimum ptxas may still hold registers to what two blocks allow,
    # and spill (layer_norm at 512 threads: 64 registers and spills; with (512, 1): 80, none).
    return blocks_fitting(threads, fragment_registers(kernel) + OVERHEAD, target)
