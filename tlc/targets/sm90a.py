"""sm_90a, Hopper (H100, H200): warpgroup tensor cores (wgmma, which dictates its gemm
accumulators' layout), TMA copies and mbarrier rings in warp-specialized pipelines.  The
arch-specific target: its code runs on compute capability 9.0 and nowhere else."""
from .base import Target

SM90A = Target(name="sm_90a", capability=(9, 0), exact=True, generator="tlc.codegen.sm90:Sm90",
               smem_per_block=227 * 1024, f8_mma=True, wgmma=True, tma=True)
