"""Specialization on the GPU (LANGUAGE.md section 1): a kernel whose buffer is sized by a shape
symbol runs for two sizes as two compiled kernels, two entries of the on-disk cache; a kernel
whose symbols stay dynamic runs for two sizes from one.  Results against NumPy, CuPy arrays and
NumPy arrays alike, and `tlc run` on the GPU with the size from --shape."""
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

import tlc
from tlc.cli import main

pytestmark = pytest.mark.gpu

SOURCE = (Path(__file__).resolve().parents[1] / "programs" / "specialize.tl").read_text()


def entries(root) -> int:
    """Compiled kernels in the cache, by the entries keyed by what they are compiled from."""
    return len(list(root.glob("p*.bin")))


@pytest.fixture
def module(tmp_path, monkeypatch):
    monkeypatch.setenv("TLC_CACHE_DIR", str(tmp_path / "cache"))
    return tlc.compile_source(SOURCE, target="cuda", path="norm.tl")


def test_a_specialized_symbol_compiles_one_kernel_per_size(module, tmp_path):
    import cupy

    rng = np.random.default_rng(1)
    for m, n in ((37, 256), (5, 200), (9, 256)):
        a = rng.standard_normal((m, n)).astype(np.float32)
        b = cupy.zeros((m, n), cupy.float32)
        module.rms_norm(cupy.asarray(a), b)
        want = a / np.sqrt((a * a).mean(axis=1, keepdims=True) + 1e-12)
        np.testing.assert_allclose(b.get(), want, rtol=1e-5, atol=1e-6)
    assert entries(tmp_path / "cache") == 2


def test_dynamic_symbols_share_one_kernel(module, tmp_path):
    rng = np.random.default_rng(2)
    for n in (1000, 77):
        a, b = rng.random(n, dtype=np.float32), rng.random(n, dtype=np.float32)
        c = np.zeros_like(a)
        module.add(a, b, c)
        np.testing.assert_array_equal(c, a + b)
    assert entries(tmp_path / "cache") == 1


def test_a_second_array_of_another_size_is_refused(module):
    with pytest.raises(tlc.TlcError, match=r"'B' axis 1 has size 32 but the kernel expects 64"):
        module.rms_norm(np.zeros((4, 64), np.float32), np.zeros((4, 32), np.float32))


def test_run_on_the_gpu_takes_the_size_from_the_shapes(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "norm.tl").write_text(SOURCE)
    r = CliRunner().invoke(main, ["run", "norm.tl", "-k", "rms_norm", "--shape", "M=33,N=160", "--check"])
    assert r.exit_code == 0, r.stdout + r.stderr
    assert "check against the interpreter: largest relative error" in r.stdout


def test_a_region_over_a_shape_symbol(module):
    import cupy

    for n in (64, 200):
        a = np.random.default_rng(n).standard_normal((33, n)).astype(np.float32)
        b = cupy.zeros((33, n), cupy.float32)
        module.rms_norm_regions(cupy.asarray(a), b)
        want = a / np.sqrt((a * a).mean(axis=1, keepdims=True) + 1e-12)
        np.testing.assert_allclose(b.get(), want, rtol=1e-5, atol=1e-6)


ADD_BIAS = """
@kernel
def add_bias(x: f32[M, N], b: f32[K], y: f32[M, N]):
    with grid(M, threads=32) as i:
        for j in range(N):
            if K == 1:
                y[i, j] = x[i, j] + b[0]
            else:
                y[i, j] = x[i, j] + b[j]
"""


def test_a_size_compared_with_1_compiles_one_kernel_for_1_and_one_for_the_rest(tmp_path, monkeypatch):
    """`if K == 1:` specializes K on being 1 alone: three calls, two entries, each launch right."""
    import cupy

    monkeypatch.setenv("TLC_CACHE_DIR", str(tmp_path / "cache"))
    m = tlc.compile_source(ADD_BIAS, target="cuda", path="bias.tl")
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    for b in (np.float32([5]), np.float32([1, 2, 3, 4]), np.float32([7])):
        y = cupy.zeros((3, 4), cupy.float32)
        m.add_bias(cupy.asarray(x), cupy.asarray(b), y)
        np.testing.assert_array_equal(y.get(), x + b)
    assert entries(tmp_path / "cache") == 2
