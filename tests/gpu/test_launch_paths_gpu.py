"""Launches by the fast paths on the GPU: PyTorch tensors through a module call (after the
first call, which opens the fast path to PyTorch) and through `launcher()`, on a non-default
stream in order with PyTorch's own work there; CuPy arrays through `launcher()`."""
from pathlib import Path

import numpy as np
import pytest

import tlc

pytestmark = pytest.mark.gpu
TINY = str(Path(__file__).resolve().parents[2] / "bench" / "tiny.tl")


@pytest.fixture(scope="module")
def mod():
    return tlc.load(TINY, target="cuda")


def test_torch_tensors_take_the_fast_path_on_torchs_stream(mod):
    import torch
    x = torch.arange(64, dtype=torch.float32, device="cuda")
    y, z = torch.ones(64, device="cuda"), torch.zeros(64, device="cuda")
    mod.tiny_axpy(x, y, z, 2.0)  # the general path: loads, and opens the fast path to PyTorch
    compiled = mod.tiny_axpy.compiled({})
    assert compiled._torch
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        for k in range(50):  # queued behind each other on s: each launch must see the fill before it
            y.fill_(float(k))
            mod.tiny_axpy(x, y, z, 2.0)
            z.mul_(2)
    s.synchronize()
    expected = np.zeros(64, np.float32)
    expected[:32] = (2 * np.arange(32) + 49) * 2
    np.testing.assert_array_equal(z.cpu().numpy(), expected)


def test_torch_launcher_launches_on_the_current_stream_of_each_call(mod):
    import torch
    x, y, z = torch.ones(64, device="cuda"), torch.ones(64, device="cuda"), torch.zeros(64, device="cuda")
    run = mod.tiny_axpy.launcher(x, y, z, 3.0)
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        torch.cuda._sleep(1_000_000)  # s is busy: a launch elsewhere would run before the fill
        y.fill_(5.0)
        run()
        z.add_(1)
    s.synchronize()
    assert z[:32].tolist() == [9.0] * 32 and z[32:].tolist() == [1.0] * 32  # 3 * 1 + 5, then + 1


def test_cupy_launcher_and_its_errors(mod):
    import cupy
    x, y, z = cupy.ones(64, cupy.float32), cupy.ones(64, cupy.float32), cupy.zeros(64, cupy.float32)
    run = mod.tiny_axpy.launcher(x, y, z, 0.5)
    for _ in range(3):
        run()
    assert z.get()[:32].tolist() == [1.5] * 32
    with pytest.raises(tlc.TlcError) as e:
        mod.tiny_axpy.launcher(x, y, cupy.zeros(64, cupy.float64), 0.5)
    assert str(e.value) == "'z' has dtype f64 but the kernel expects f32"
    with pytest.raises(tlc.TlcError) as e:
        mod.tiny_axpy.launcher(x, y, z[::2], 0.5)
    assert str(e.value) == "shape symbol 'N' is 64 in 'x' (axis 0) but 32 in 'z' (axis 0)"
    with pytest.raises(tlc.TlcError) as e:
        mod.tiny_axpy.launcher(x, y, np.zeros(64, np.float32), 0.5)
    assert str(e.value).startswith("'z' is a NumPy array, which a launch copies to the GPU each time")


def test_a_module_from_the_checked_cache_launches_without_a_check(tmp_path, monkeypatch):
    import cupy
    monkeypatch.setenv("TLC_CACHE_DIR", str(tmp_path))
    x, y, z = cupy.ones(64, cupy.float32), cupy.ones(64, cupy.float32), cupy.zeros(64, cupy.float32)
    tlc.load(TINY, target="cuda").tiny_axpy(x, y, z, 1.0)  # checked, stored; compiled, stored
    again = tlc.load(TINY, target="cuda")
    assert again._check is not None  # from the checked-module cache
    again.tiny_axpy(x, y, z, 4.0)
    assert z.get()[:32].tolist() == [5.0] * 32
    assert again._check is not None  # the kernel came from the kernel cache: nothing was checked


def test_a_tma_kernel_takes_its_generic_build_for_rows_the_driver_cannot_map():
    """The runtime builds a TMA kernel for launches whose maps all encode (TL_TMA_FLAGS); a
    launch with unaligned rows (N = 130 halves: 260-byte rows) needs the element-by-element
    copies, compiled then as the generic build, and both give the product."""
    import cupy

    k = tlc.load("std.gemm", target="cuda").matmul.compiled({})
    if k.built_flags is None:
        pytest.skip("this GPU's matmul copies without the TMA")

    def product(M, K, N):
        a = cupy.random.standard_normal((M, K), dtype=cupy.float32).astype(cupy.float16)
        b = cupy.random.standard_normal((K, N), dtype=cupy.float32).astype(cupy.float16)
        c = cupy.full((M, N), cupy.nan, cupy.float16)
        k({"A": a, "B": b, "C": c})
        want = a.astype(cupy.float32) @ b.astype(cupy.float32)
        assert float(cupy.abs(c.astype(cupy.float32) - want).max() / cupy.abs(want).max()) < 1e-2

    product(256, 192, 256)
    assert k._generic is None  # every map encoded: the built kernel
    product(200, 192, 130)
    assert k._generic is not None and k._generic.built_flags is None
    generic = k._generic
    product(256, 192, 256)
    product(136, 64, 130)
    assert k._generic is generic  # compiled once
