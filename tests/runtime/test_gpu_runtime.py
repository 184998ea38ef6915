"""The runtime on a GPU (`pytest -m gpu`): NVRTC compiles, the cache, launches with NumPy, CuPy
and PyTorch arrays on the caller's stream, IEEE results, large shared memory, and the measured
cache-hit load time and per-launch overhead (printed, not asserted)."""
import time
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

from runtime_kit import AXPY_SOURCE, axpy, scale_bf16
from tlc.dtypes import F32, I32
from tlc.runtime import (CudaCompileError, DeviceArray, KernelCache, LaunchArgumentError, benchmark,
                         compile_kernel, target_arch)
from tlc.runtime import compile as rc

pytestmark = pytest.mark.gpu
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@pytest.fixture
def cache(tmp_path):
    return KernelCache(tmp_path / "cache")


@pytest.fixture
def axpy_kernel(cache):
    return compile_kernel(*axpy(), cache=cache)


def test_target_arch_of_this_gpu():
    import cupy

    cc = cupy.cuda.Device().compute_capability
    assert target_arch() == ("sm_90a" if cc == "90" else "sm_89" if int(cc) >= 89 else "sm_86" if int(cc) >= 86 else "sm_80")


def test_device_capability_is_cupys_compute_capability():
    import cupy

    from tlc.runtime.compile import device_capability

    cc = cupy.cuda.Device(0).compute_capability
    assert device_capability(0) == (int(cc[:-1]), int(cc[-1]))


def test_numpy_inputs_are_copied_and_outputs_written_back(axpy_kernel):
    x = np.arange(1000, dtype=np.float32)
    y = np.ones(1000, np.float32)
    x0 = x.copy()
    axpy_kernel({"x": x, "y": y, "alpha": 2})
    np.testing.assert_array_equal(y, 2 * x0 + 1)
    np.testing.assert_array_equal(x, x0)


def test_strided_numpy_output(axpy_kernel):
    x = np.arange(20, dtype=np.float32)[::2]
    y = np.zeros(20, np.float32)
    axpy_kernel({"x": x, "y": y[1::2], "alpha": 1.0})
    np.testing.assert_array_equal(y[1::2], x)
    np.testing.assert_array_equal(y[::2], 0)


def test_cupy_arrays_in_place_on_the_current_stream(axpy_kernel):
    import cupy

    x = cupy.arange(4097, dtype=cupy.float32)
    y = cupy.zeros(4097, cupy.float32)
    s = cupy.cuda.Stream(non_blocking=True)
    with s:
        y.fill(3)  # queued on s: the launch must come after it
        axpy_kernel({"x": x, "y": y, "alpha": 0.5})
    s.synchronize()
    np.testing.assert_array_equal(y.get(), 0.5 * np.arange(4097, dtype=np.float32) + 3)


def test_torch_tensors_on_torchs_current_stream(axpy_kernel):
    import torch
    x = torch.arange(3000, dtype=torch.float32, device="cuda")
    y = torch.empty(3000, dtype=torch.float32, device="cuda")
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        y.fill_(1.0)
        axpy_kernel({"x": x, "y": y, "alpha": 2.0})
        y.mul_(2)
    s.synchronize()
    assert torch.equal(y.cpu(), (2 * torch.arange(3000, dtype=torch.float32) + 1) * 2)


def test_numpy_mixed_with_cupy(axpy_kernel):
    import cupy

    y = cupy.ones(100, cupy.float32)
    axpy_kernel({"x": np.full(100, 2, np.float32), "y": y, "alpha": 3.0})
    np.testing.assert_array_equal(y.get(), np.full(100, 7, np.float32))


def test_bf16_from_torch_and_numpy_with_f16_and_i64_scalars(cache):
    import torch
    k = compile_kernel(*scale_bf16(), cache=cache)
    x = torch.linspace(-4, 4, 999, device="cuda").to(torch.bfloat16)
    y = torch.empty_like(x)
    k({"x": x, "y": y, "s": 0.5, "offset": 3})
    expected = (0.5 * x.float() + 3).to(torch.bfloat16)
    assert torch.equal(y, expected)
    xn = x.float().cpu().numpy().astype(ml_dtypes.bfloat16)
    yn = np.zeros(999, ml_dtypes.bfloat16)
    k({"x": xn, "y": yn, "s": np.float16(0.5), "offset": np.int64(3)})
    np.testing.assert_array_equal(yn.astype(np.float32), expected.float().cpu().numpy())


def test_denormals_survive(axpy_kernel):
    # flush-to-zero (CuPy's default for its own compiles) would turn these into 0
    x = np.full(8, 1e-40, np.float32)
    y = np.zeros(8, np.float32)
    axpy_kernel({"x": x, "y": y, "alpha": 1.0})
    np.testing.assert_array_equal(y, x)
    assert (y != 0).all()


SMEM_SOURCE = r"""
extern "C" __global__ void smem_reverse(const float* __restrict__ x, float* __restrict__ y, int N) {
    extern __shared__ float buf[];
    const int n = 96 * 1024 / 4;
    for (int i = threadIdx.x; i < n; i += blockDim.x) buf[i] = i < N ? x[i] : 0.0f;
    __syncthreads();
    for (int i = threadIdx.x; i < N && i < n; i += blockDim.x) y[i] = buf[n - 1 - i];
}
"""


def test_more_than_48kb_of_dynamic_shared_memory(cache):
    from runtime_kit import GeneratedKernel, KernelArg, i32, ir_kernel
    from tlc.ir import Param

    params = [Param("x", "tensor", F32, ("N",)), Param("y", "tensor", F32, ("N",))]
    gen = GeneratedKernel("smem_reverse", "", SMEM_SOURCE,
                          (KernelArg("x", "tensor", F32, "const float*"), KernelArg("y", "tensor", F32, "float*"),
                           KernelArg("N", "shape", I32, "int")), 256, 96 * 1024, (i32(1),), "sm_80")
    k = compile_kernel(ir_kernel("smem_reverse", params, gen.grid, 256), gen, cache=cache)
    n = 96 * 1024 // 4
    x = np.arange(n, dtype=np.float32)
    y = np.zeros(n, np.float32)
    k({"x": x, "y": y})
    np.testing.assert_array_equal(y, x[::-1])


def test_an_empty_grid_launches_nothing(axpy_kernel, monkeypatch):
    def no_launch(device):
        raise AssertionError("launched an empty grid")
    monkeypatch.setattr(axpy_kernel, "function", no_launch)
    axpy_kernel({"x": np.zeros(0, np.float32), "y": np.zeros(0, np.float32), "alpha": 1.0})


def test_gpu_argument_errors(axpy_kernel):
    import cupy

    x = cupy.zeros(20, cupy.float32)
    with pytest.raises(LaunchArgumentError) as e:
        axpy_kernel({"x": x[::2], "y": cupy.zeros(10, cupy.float32), "alpha": 1.0})
    assert str(e.value) == ("'x' is not C-contiguous; tlc kernels read tensors as dense row-major arrays: "
                            "pass cupy.ascontiguousarray(x)")
    with pytest.raises(LaunchArgumentError, match="^'y' has dtype f64 but the kernel expects f32$"):
        axpy_kernel({"x": x, "y": cupy.zeros(20, cupy.float64), "alpha": 1.0})
    import torch
    with pytest.raises(LaunchArgumentError, match="^'y' is a PyTorch tensor on the CPU"):
        axpy_kernel({"x": x, "y": torch.zeros(20), "alpha": 1.0})


def test_the_fast_path_takes_plain_cupy_calls_and_declines_the_rest(axpy_kernel):
    import cupy

    from tlc.runtime import fastpath

    fast = fastpath.build(axpy_kernel, fallback=lambda args: False)
    x, y = cupy.ones(300, cupy.float32), cupy.zeros(300, cupy.float32)
    assert not fast({"x": x, "y": y, "alpha": 2.0})  # not loaded on this GPU yet
    axpy_kernel({"x": x, "y": y, "alpha": 0.0})  # the general path loads it
    assert fast({"x": x, "y": y, "alpha": 2.0})
    assert fast({"x": x, "y": y, "alpha": 2})
    np.testing.assert_array_equal(y.get(), 4.0)
    declined = [
        {"x": x.get(), "y": y, "alpha": 1.0},  # NumPy: copies
        {"x": x, "y": y, "alpha": np.float32(1.0)},  # a NumPy scalar
        {"x": x, "y": y, "alpha": 1.0, "z": 0},  # unexpected argument
        {"x": x, "alpha": 1.0, "z": 0},  # missing argument
        {"x": x.astype(cupy.float64), "y": y, "alpha": 1.0},  # dtype
        {"x": x[:200], "y": y, "alpha": 1.0},  # shape symbol disagrees
        {"x": x.reshape(3, 100), "y": y, "alpha": 1.0},  # rank
        {"x": x[::2], "y": y[::2], "alpha": 1.0},  # not contiguous
        {"x": x[:0], "y": y[:0], "alpha": 1.0},  # empty grid
        {"x": x, "y": y, "alpha": 2**60},  # beyond an exact float
    ]
    for args in declined:
        assert not fast(args), args
    np.testing.assert_array_equal(y.get(), 4.0)  # and none of them launched


def test_nvrtc_rejecting_generated_code_is_a_tlc_bug(cache, tmp_path, monkeypatch):
    monkeypatch.setenv("TLC_CACHE_DIR", str(tmp_path))
    bad = AXPY_SOURCE.replace("alpha * x[i]", "alpha * undefined_name")
    with pytest.raises(CudaCompileError) as e:
        compile_kernel(*axpy(source=bad), cache=cache)
    message = str(e.value)
    assert message.startswith("internal compiler error: NVRTC rejected the CUDA C that tlc generated for "
                              "kernel 'axpy'")
    assert 'identifier "undefined_name" is undefined' in message
    kept = message.split("generated source: ")[1].split("\n")[0]
    assert Path(kept).read_text() == bad


def test_device_array_and_benchmark(axpy_kernel):
    x = DeviceArray.from_numpy(np.ones(1 << 20, np.float32))
    y = DeviceArray.from_numpy(np.zeros(1 << 20, np.float32))
    ms = benchmark(axpy_kernel, {"x": x, "y": y, "alpha": 1.0}, min_ms=20)
    assert ms > 0
    got = y.numpy()
    assert got[0] >= 2 and (got == got[0]).all()  # y += x ran once per launch, every element alike
    print(f"\naxpy over 2^20 f32: {ms * 1e3:.1f} us per launch")


def test_benchmark_with_torch_tensors_times_torchs_stream(axpy_kernel):
    import torch

    x = torch.ones(1 << 16, device="cuda")
    y = torch.zeros(1 << 16, device="cuda")
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        ms = benchmark(axpy_kernel, {"x": x, "y": y, "alpha": 1.0}, min_ms=20)
    s.synchronize()
    assert ms > 0
    assert y[0].item() >= 2 and torch.equal(y, torch.full_like(y, y[0].item()))


def test_cache_hit_skips_nvrtc_and_measures_load(tmp_path, monkeypatch):
    root = tmp_path / "cache"
    t0 = time.perf_counter()
    compile_kernel(*axpy(), cache=KernelCache(root))
    t1 = time.perf_counter()

    def no_nvrtc(*args):
        raise AssertionError("NVRTC ran on a cache hit")
    monkeypatch.setattr(rc, "nvrtc_compile", no_nvrtc)
    fresh = KernelCache(root)  # as another process would
    t2 = time.perf_counter()
    k = compile_kernel(*axpy(), cache=fresh)
    import cupy
    k.function(cupy.cuda.runtime.getDevice())  # module load
    t3 = time.perf_counter()
    print(f"\ncompile (NVRTC, miss): {(t1 - t0) * 1e3:.1f} ms; cache hit incl. module load: {(t3 - t2) * 1e3:.2f} ms")


def test_per_launch_overhead_against_a_bare_rawkernel(axpy_kernel):
    import cupy

    import tlc

    n = 1024
    x, y, out = cupy.ones(n, cupy.float32), cupy.zeros(n, cupy.float32), cupy.zeros(n, cupy.float32)
    raw = cupy.RawKernel(AXPY_SOURCE, "axpy", options=("--std=c++17",))
    grid, block = ((n + 255) // 256,), (256,)
    args = {"x": x, "y": y, "alpha": 1.0}
    raw_args = (x, y, np.float32(1.0), np.int32(n))
    mod = tlc.load(str(EXAMPLES / "vector_add.tl"), target="cuda")
    candidates = {
        # what a RawKernel caller writes: the scalars wrapped in their C types on each call
        "bare RawKernel": lambda: raw(grid, block, (x, y, np.float32(1.0), np.int32(n))),
        "bare RawKernel, scalars made once": lambda: raw(grid, block, raw_args),
        "tlc CompiledKernel": lambda: axpy_kernel(args),
        "tlc CompiledKernel.call": lambda: axpy_kernel.call(args),
        "tlc module call": lambda: mod.vector_add(x, y, out, 1.0),
    }
    best = dict.fromkeys(candidates, float("inf"))
    for _ in range(2):  # warm-up: module loads, caches
        for fn in candidates.values():
            fn()
    for _ in range(30):  # interleaved rounds, so that clock drift hits every candidate alike
        for name, fn in candidates.items():
            cupy.cuda.Device().synchronize()
            t = time.perf_counter()
            for _ in range(200):  # fewer than the launch queue holds: host time, not GPU time
                fn()
            best[name] = min(best[name], (time.perf_counter() - t) / 200 * 1e6)
    cupy.cuda.Device().synchronize()
    bare = best["bare RawKernel"]
    print("\nper launch, host time: " + ", ".join(f"{k} {v:.2f} us" for k, v in best.items())
          + f"; CompiledKernel overhead {best['tlc CompiledKernel'] - bare:+.2f} us (goal: within 1 us), "
          f"module call overhead {best['tlc module call'] - bare:+.2f} us")


def test_end_to_end_vector_add_against_the_interpreter():
    import tlc

    gpu = tlc.load(str(EXAMPLES / "vector_add.tl"), target="cuda")
    cpu = tlc.load(str(EXAMPLES / "vector_add.tl"), target="cpu")
    rng = np.random.default_rng(0)
    for n in (1, 1000, 4099):
        x, y = rng.standard_normal(n, np.float32), rng.standard_normal(n, np.float32)
        out_gpu, out_cpu = np.zeros(n, np.float32), np.zeros(n, np.float32)
        gpu.vector_add(x, y, out_gpu, 1.5)
        cpu.vector_add(x, y, out_cpu, 1.5)
        np.testing.assert_allclose(out_gpu, out_cpu, rtol=1e-6, atol=1e-6)
