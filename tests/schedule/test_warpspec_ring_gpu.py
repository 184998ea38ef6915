"""On a Hopper GPU, each warp-specialized std.gemm kernel gives what the interpreter gives when
it runs the same kernel's IR, ring and tile order included (tlc/interp/ring.py): the record the
GPU's code was rendered from is the one the CPU suite checks."""
import numpy as np
import pytest

import tlc
from tlc.interp import run_kernel
from tlc.ir.walk import written_names
from test_warpspec_interp import STD, _arguments

pytestmark = pytest.mark.gpu

# the f16 kernels (NumPy carries their arrays to the GPU as they are)
KERNELS = ["matmul", "matmul_nt", "matmul_batched", "matmul_epilogue", "matmul_skinny", "matmul_grouped",
           "matmul_splitk"]


@pytest.mark.parametrize("name", KERNELS)
def test_the_gpu_agrees_with_the_interpreted_ring(name):
    import cupy

    if cupy.cuda.Device().compute_capability != "90":
        pytest.skip("the warp-specialized pipeline is sm_90a's")
    kernel = getattr(tlc.load(str(STD), target="cuda"), name)
    (ring,) = kernel.scheduled_grids({}, "sm_90a")
    assert ring.warp_spec is not None
    args = _arguments(ring, np.random.default_rng(11))
    (out,) = [p.name for p in ring.params if p.name in written_names(ring.body)]
    want = {k: v.copy() if isinstance(v, np.ndarray) else v for k, v in args.items()}
    run_kernel(ring, want)
    got = {k: v.copy() if isinstance(v, np.ndarray) else v for k, v in args.items()}
    kernel(**got)
    diff = np.abs(got[out].astype(np.float64) - want[out].astype(np.float64))
    assert np.isfinite(diff).all() and diff.max() <= 0.02 * np.abs(want[out].astype(np.float64)).max()
