"""Grids and element counts at their limits on the GPU: a grid beyond the GPU's limits is an
error naming the dimension, from Python and from the C launcher (never an empty launch that
succeeds), and a flattened element-wise tile op over more than 2^31 elements is right at its
far end (its count is an i64, its tile offsets 64-bit)."""
from __future__ import annotations

import ctypes
import subprocess

import numpy as np
import pytest

import tlc
from tlc.runtime.grid import GridError

pytestmark = pytest.mark.gpu

FILL = """
@kernel
def ones(x: f32[N], n: i64):
    with grid(n, threads=32) as bx:
        for i in parallel(32):
            x[bx * 32 + i] = 1.0
"""


def test_python_refuses_a_grid_beyond_the_limits_and_runs_one_within():
    import cupy

    mod = tlc.compile_source(FILL, target="cuda", path="fill.tl")
    x = cupy.zeros(320, cupy.float32)
    for n, axis_value in [(2**40, "1099511627776"), (-5, "-5"), (2**31, "2147483648")]:
        with pytest.raises(GridError) as e:
            mod.ones(x, n)
        assert str(e.value) == f"grid dimension x of kernel 'ones' is {axis_value}; the GPU allows 1 to 2147483647"
    assert float(x.sum()) == 0.0
    mod.ones(x, 0)  # empty: nothing runs
    assert float(x.sum()) == 0.0
    mod.ones(x, 5)
    assert float(x.sum()) == 160.0


def test_the_c_launcher_returns_an_error_code_for_a_grid_beyond_the_limits(tmp_path):
    import cupy

    from tlc.runtime import target_arch
    from tlc.runtime.compile import cuda_toolkit_nvcc

    (tmp_path / "fill.tl").write_text(FILL)
    from click.testing import CliRunner
    from tlc.cli import main

    arch = target_arch()
    r = CliRunner().invoke(main, ["build", str(tmp_path / "fill.tl"), "--arch", arch, "-o", str(tmp_path / "fill.cu")])
    assert r.exit_code == 0, r.output
    flags = ["-gencode=arch=compute_90a,code=sm_90a"] if arch == "sm_90a" else [f"-arch={arch}"]
    subprocess.run([cuda_toolkit_nvcc(), "-std=c++17", *flags, "-shared", "-Xcompiler", "-fPIC", "fill.cu", "-o", "libfill.so"],
                   cwd=tmp_path, check=True, capture_output=True, timeout=300)
    lib = ctypes.CDLL(str(tmp_path / "libfill.so"))
    lib.launch_ones.restype = ctypes.c_int
    lib.launch_ones.argtypes = [ctypes.c_void_p, ctypes.c_longlong, ctypes.c_int, ctypes.c_void_p]
    x = cupy.zeros(320, cupy.float32)
    for n in (2**40, 2**32, -5):  # 2**32 was 0 blocks as an unsigned: a launch that "succeeded"
        assert lib.launch_ones(x.data.ptr, n, 320, None) == 9  # cudaErrorInvalidConfiguration
    assert lib.launch_ones(x.data.ptr, 0, 320, None) == 0
    cupy.cuda.runtime.deviceSynchronize()
    assert float(x.sum()) == 0.0
    assert lib.launch_ones(x.data.ptr, 5, 320, None) == 0
    cupy.cuda.runtime.deviceSynchronize()
    assert float(x.sum()) == 160.0


CHAIN = """
@tile_op
def chain(x: f16[M, N], y: f16[M, N]) -> f16[M, N]:
    return x * y + exp(x)
"""


def test_a_flat_elementwise_op_over_more_than_2_31_elements():
    import cupy

    M, N = 65539, 32769  # 2147680291 elements, 2^31 + 196643: the last tiles lie past 2^31
    assert M * N > 2**31
    if cupy.cuda.Device().mem_info[0] < 64 * 2**30:  # the operands, the index and the f32 reference
        pytest.skip("needs about 64 GB of free GPU memory")
    mod = tlc.compile_source(CHAIN, target="cuda", path="chain.tl")
    i = cupy.arange(M * N, dtype=cupy.int64)
    x = ((i % 997).astype(cupy.float32) / 997).astype(cupy.float16).reshape(M, N)
    y = (((i // 7) % 991).astype(cupy.float32) / 991).astype(cupy.float16).reshape(M, N)
    del i
    out = mod.chain(x, y)
    assert out.shape == (M, N)
    want = (x * y).astype(cupy.float32) + cupy.exp(x).astype(cupy.float32)
    err = cupy.abs(out.astype(cupy.float32) - want)
    assert float(err.max()) < 1e-2, int(err.argmax())
    # the far end, past 2^31, computed on the host
    xs, ys, got = (cupy.asnumpy(a[-1, -64:]) for a in (x, y, out))
    ref = (xs * ys).astype(np.float32) + np.exp(xs).astype(np.float32)
    assert np.allclose(got.astype(np.float32), ref, atol=1e-2)


def test_cdiv_at_the_top_of_an_i32_on_the_gpu():
    """The lowering of tests/schedule/test_cdiv_lowering.py, in the generated C."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "schedule"))
    from test_cdiv_lowering import SRC, TOP, WANT

    out = np.zeros(4, np.int32)
    tlc.compile_source(SRC, target="cuda", path="c.tl").ceil_div(out, TOP)
    assert out.tolist() == WANT
