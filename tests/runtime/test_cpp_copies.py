"""The cpu target's copies of non-contiguous arrays (runtime/cpp.py): each is passed dense, and
only the copies of the tensors the kernel writes go back; a read-only view among the inputs
(np.broadcast_to) raised NumPy's ValueError, "assignment destination is read-only", out of the
call once the kernel had run."""
import numpy as np

import tlc
from test_overlap import CPU_AXPY


def test_a_read_only_view_in_and_a_strided_output_out():
    mod = tlc.compile_source(CPU_AXPY, target="cpp", path="axpy.tl")
    x = np.broadcast_to(np.float32(3.0), (100,))  # read-only, stride 0
    y = np.zeros(200, np.float32)
    mod.axpy(x, y[::2], 2.0)
    assert (y[::2] == 6.0).all() and (y[1::2] == 0.0).all()
