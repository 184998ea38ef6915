"""reduce_absmax of floats takes |x| as fabsf, which ptxas folds into the max's operand
(FMNMX R, |x|): `x < 0 ? -x : x` (templates/tl/reduce.cuh's prepare) was a compare and a select
an element, in every std.quant kernel's absmax pass (quantize_per_token i8, f16 [16384, 8192]
at BN = 4096 on 256 threads, sm_90a: 864 -> 800 SASS instructions for a thread's 32 elements,
against ~26 an element that 0.9 of the H200's copy allows).  NaN is still left out of the
maximum, and a -0.0 now counts as +0.0, as the interpreter's |x| does."""
import re

import numpy as np
import pytest

from kit_codegen import generated_source
from nvcc import cubin_sass
from tlc import compile_source

SOURCE = """
@kernel
def k(x: {T}[M, N], amax: f32[M]):
    with grid(cdiv(M, 4), threads=128) as bx:
        t = fragment({T}[4, 256])
        a = fragment(f32[4])
        copy(x[bx * 4, 0], t)
        reduce_absmax(t, a, dim=1)
        copy(a, amax[bx * 4])
"""


@pytest.mark.nvcc
@pytest.mark.parametrize("dtype", ["f16", "f32"])
def test_the_absolute_value_folds_into_the_maximum(dtype, tmp_path):
    """[4, 256] on 128 threads: 8 elements a thread, each one FMNMX of |x| (the f16 widened
    first), no FSEL or compare beside it; 0 bytes spilled."""
    source = generated_source(SOURCE.format(T=dtype), arch="sm_90a", line_directives=False).source
    sass, log = cubin_sass("#define TL_WHOLE_RUNS 1\n" + source, "sm_90a", tmp_path)
    assert "FSEL" not in sass and "FSETP" not in sass
    assert len(re.findall(r"\bFMNMX R\d+, (?:RZ|R\d+), \|R\d+\|", sass)) == 8
    assert "0 bytes spill stores" in log


@pytest.mark.gpu
def test_nan_is_left_out_and_negative_zero_counts_as_zero():
    """On the GPU as on the interpreter: a NaN among values is left out of the maximum, a row
    of -0.0 gives +0.0, partial rows of the last block included."""
    x = np.array([[np.nan, -3.0, 2.0] + [0.0] * 253, [-0.0] * 256, [-1.0] * 256, [5.0, -np.nan] + [-6.0] * 254,
                  [-0.0, np.nan] * 128], np.float32)
    for target in ("cpu", "cuda"):
        amax = np.full(5, 7.0, np.float32)
        compile_source(SOURCE.format(T="f32"), target=target).kernels["k"](x, amax)
        assert amax.tolist() == [3.0, 0.0, 1.0, 6.0, 0.0] and not np.signbit(amax[[1, 4]]).any(), target
