"""Block reductions alternate between two scratch arrays in shared memory, so a reduction into
registers takes one __syncthreads (between the warps' partials and their reads), not two: a
one-tile softmax row (max, then sum) passes 2 barriers.  The reductions of a loop flip the
phase at run time, so any number of them per iteration stays safe; tests/gpu run them."""
import re

import tlc
from tlc.codegen import generate_file
from nvcc import cubin_sass

SRC = """
@tile_op
def smax(x: f16[M, N]) -> f16[M, N]:
    return softmax(x, axis=1)
"""


def test_a_softmax_row_passes_one_barrier_per_reduction(tmp_path):
    mod = tlc.compile_source(SRC, target="cpu", path="ops.tl")
    kernels = mod.smax.program({}, "sm_90a", {"M": 4096, "N": 8192}).kernels
    src = generate_file(kernels, "sm_90a", sources=mod.program.sources, source_name="ops.tl")
    assert "int tl_red_phase = 0;" in src and src.count("tl_red_phase ^= 1;") == 6
    sass, _ = cubin_sass(src, "sm_90a", tmp_path)
    # the one-tile paths (N == 8192 unmasked, and shorter rows): max and sum; the tiled path: a
    # tile's max and sum
    assert len(re.findall(r"\bBAR\.SYNC", sass)) == 6
