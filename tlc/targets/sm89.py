"""sm_89, Ada (L4, L40, RTX 40): sm_80's code with the f8 mma.sync (m16n8k32, e4m3/e5m2
operands, f32 accumulator) for f8 gemms; less shared memory and fewer threads per SM than
Ampere's A100 (CUDA C Programming Guide, compute capability 8.9)."""
from .base import Target

SM89 = Target(name="sm_89", capability=(8, 9), generator="tlc.codegen.sm80:Sm80",
              smem_per_block=99 * 1024, threads_per_sm=1536, blocks_per_sm=24, f8_mma=True)
