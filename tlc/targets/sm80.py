"""sm_80, Ampere (A100) and every later GPU: mma.sync and ldmatrix, cp.async pipelines; f8
gemms convert their operands to f16 for the f16 mma (there is no f8 mma before sm_89)."""
from .base import Target

SM80 = Target(name="sm_80", capability=(8, 0), generator="tlc.codegen.sm80:Sm80",
              smem_per_block=163 * 1024)  # the most one block may opt into on the A100
