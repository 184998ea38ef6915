"""sm_86, Ampere's consumer and workstation GPUs (RTX 30, A10, A40): sm_80's code under their
smaller limits, 99 KB of shared memory a block and 1536 threads and 16 blocks an SM (CUDA C
Programming Guide, compute capability 8.6), where sm_80's 163 KB would fail at launch.  It
serves 8.7 (Orin) too, whose blocks may have 163 KB: the smaller limits there are safe, not
its own."""
from .base import Target

SM86 = Target(name="sm_86", capability=(8, 6), generator="tlc.codegen.sm80:Sm80",
              smem_per_block=99 * 1024, threads_per_sm=1536, blocks_per_sm=16)
