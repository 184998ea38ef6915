"""The cpu target's copies of non-contiguous arrays (runtime/cpp.py): each is passed dense, and
only the copies of the tensors the kernel writes go back; a read-only view among the inputs
(np.broadcast_to) raised NumPy's ValueError, "assignment destination is read-only", out of the
call once the kernel had run."""
import numpy as np
import pytest

import tlc
from test_overlap import CPU_AXPY


def test_a_read_only_view_in_and_a_strided_output_out():
    mod = tlc.compile_source(CPU_AXPY, target="cpp", path="axpy.tl")
    x = np.broadcast_to(np.float32(3.0), (100,))  # read-only, stride 0
    y = np.zeros(200, np.float32)
    mod.axpy(x, y[::2], 2.0)
    assert (y[::2] == 6.0).all() and (y[1::2] == 0.0).all()


CORNER = """
@kernel
def corner(x: f32[M, N], out: f32[1]):
    with grid(1, threads=32) as bx:
        for i in parallel(32):
            if i == 0:
                out[0] = x[M - 1, N - 1]
"""


@pytest.mark.slow  # a g++ build of its own
def test_a_view_whose_dense_copy_the_memory_cannot_hold_is_the_calls_error():
    # 2**60 elements of one value (stride 0): the dense copy raised NumPy's MemoryError out of
    # the call, a traceback; the interpreter reads the view as it is
    x = np.broadcast_to(np.float32(1.0), (2**30, 2**30))
    out = np.zeros(1, np.float32)
    tlc.compile_source(CORNER, target="interp", path="corner.tl").corner(x, out)
    assert out[0] == 1.0
    with pytest.raises(tlc.TlcError) as e:
        tlc.compile_source(CORNER, target="cpp", path="corner.tl").corner(x, out)
    assert str(e.value) == ("kernel 'corner' on the cpu target cannot copy 'x' (strides (0, 0)) into the contiguous "
                            "array its C++ reads: f32[1073741824, 1073741824] takes 4294967296.0 GiB")
