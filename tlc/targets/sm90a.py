"""sm_90a, Hopper (H100, H200): warpgroup tensor cores (wgmma, which dictates its gemm
accumulators' layout), TMA copies and mbarrier rings in warp-specialized pipelines.  The
arch-specific target: its code runs on compute capability 9.0 and nowhere else."""
from .base import Target

# f8_mma off though Hopper has it: its f8 gemms take wgmma, and one wgmma cannot take keeps the
# f16 path its GPU tests have checked (sm_89's f8 mma.sync runs on an H200 in tests/targets).
SM90A = Target(name="sm_90a", capability=(9, 0), exact=True, generator="tlc.codegen.sm90:Sm90",
               smem_per_block=227 * 1024, wgmma=True, tma=True)
