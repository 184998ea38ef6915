"""A written tensor that shares memory with another argument is refused (runtime/overlap.py) by
the interpreter's and the cpu target's binder, the GPU's general path and its fast path (which
hands it to the general path), with one message naming the kernel and both parameters;
read-only tensors may share memory, and arrays whose ranges interleave without a shared
element (two columns of one NumPy array) are accepted."""
import numpy as np
import pytest

import tlc
from runtime_kit import FakeCupyArray, FakeDeviceArray, axpy, generated_for, ir_kernel, overlap_pairs, stand_in_cupy
from tlc.interp import ArgumentError, run_kernel
from tlc.ir import samples
from tlc.runtime import fastpath, overlap
from tlc.runtime.args import Binder, LaunchArgumentError

AXPY, _ = axpy()
AXPY_SHARED = "'y' and 'x' share memory, and kernel 'axpy' writes 'y': pass arrays that do not overlap " \
              "(a copy of one of them)"
Y_REPEATS = "'y' has elements that share memory (a stride of 0, or strides that overlap), and kernel 'axpy' " \
            "writes it: pass an array of distinct elements (y.copy())"


def both_binders(kernel, args: dict) -> tuple:
    """The interpreter's error and the GPU binder's for `args` (NumPy), or None where each accepts."""
    errors = []
    for run, error in ((lambda: run_kernel(kernel, args), ArgumentError),
                       (lambda: Binder(kernel, generated_for(kernel)).bind(args, device=0), LaunchArgumentError)):
        try:
            run()
            errors.append(None)
        except error as e:
            errors.append(str(e))
    return tuple(errors)


def writable_repeats(n: int, step: int = 0) -> np.ndarray:
    base = np.zeros(n, np.float32)
    return np.lib.stride_tricks.as_strided(base, shape=(n,), strides=(step,), writeable=True)


@pytest.mark.parametrize("make, message", [
    (lambda x: (x, x), AXPY_SHARED),  # k(x, x)
    (lambda x: (x[1:], x[:-1]), AXPY_SHARED),  # views one element apart
    (lambda x: (x[::2], x[::2]), AXPY_SHARED),  # one strided view twice
    (lambda x: (x[:5], writable_repeats(5)), Y_REPEATS),  # a stride-0 output
])
def test_numpy_arguments_that_share_memory_with_the_output(make, message):
    x, y = make(np.ones(10, np.float32))
    assert both_binders(AXPY, {"x": x, "y": y, "alpha": 2.0}) == (message, message)


def test_arrays_that_share_no_element_are_accepted():
    pair = np.ones((300, 2), np.float32)  # two columns of one array: their byte ranges overlap
    args = {"x": pair[:, 0], "y": pair[:, 1], "alpha": 2.0}
    assert both_binders(AXPY, args) == (None, None)
    halves = np.ones(20, np.float32)
    assert both_binders(AXPY, {"x": halves[:10], "y": halves[10:], "alpha": 1.0}) == (None, None)
    empty = np.ones(10, np.float32)[4:4]  # an empty array points inside the other
    assert both_binders(samples.matmul(), {"A": np.ones((0, 3), np.float16), "B": np.ones((3, 4), np.float16),
                                           "C": np.ones((0, 4), np.float16)}) == (None, None)
    assert overlap.host_range(empty) == (0, 0)


def test_read_only_tensors_may_share_memory():
    a = np.ones((4, 4), np.float16)
    assert both_binders(samples.matmul(), {"A": a, "B": a, "C": np.zeros((4, 4), np.float16)}) == (None, None)
    message = "'C' and 'A' share memory, and kernel 'matmul' writes 'C': pass arrays that do not overlap " \
              "(a copy of one of them)"
    assert both_binders(samples.matmul(), {"A": a, "B": a, "C": a}) == (message, message)


def test_two_written_tensors_are_both_named():
    both = ir_kernel("axpy", AXPY.params, AXPY.grid, 128, writes=("x", "y"))
    x = np.ones(8, np.float32)
    message = "'x' and 'y' share memory, and kernel 'axpy' writes 'x' and 'y': pass arrays that do not overlap " \
              "(a copy of one of them)"
    assert both_binders(both, {"x": x, "y": x, "alpha": 1.0}) == (message, message)


def test_pairs_put_the_written_tensor_first_and_skip_read_only_pairs():
    assert overlap.pairs(("a", "b", "c", "d"), {"c"}) == ((2, 0), (2, 1), (2, 3))
    assert overlap.pairs(("a", "b", "c"), {"a", "c"}) == ((0, 1), (0, 2), (2, 1))
    assert overlap.pairs(("a", "b"), set()) == ()


@pytest.mark.parametrize("shape, strides, repeats", [
    ((4, 3), (12, 4), False),  # C order
    ((4, 3), (4, 16), False),  # F order
    ((4, 3), (-12, 4), False),  # a reversed axis
    ((4, 3), (0, 4), True),  # a broadcast row
    ((1, 3), (0, 4), False),  # a stride of 0 on an axis of 1 is never stepped
    ((3, 2), (8, 12), False),  # interleaved axes without a shared element: decided element by element
    ((3, 2), (4, 8), True),  # element (2, 0) is element (0, 1)
])
def test_repeated_elements(shape, strides, repeats):
    base = np.zeros(64, np.float32)
    start = base[32:]  # room for the negative stride
    a = np.lib.stride_tricks.as_strided(start, shape=shape, strides=strides)
    assert overlap.repeats_elements(a) is repeats


def test_device_arrays_that_overlap_are_refused_by_the_general_path():
    b = Binder(AXPY, generated_for(AXPY))
    x = FakeDeviceArray((10,), np.float32, ptr=0x7000_0000_0000)
    with pytest.raises(LaunchArgumentError) as e:
        b.bind({"x": x, "y": FakeDeviceArray((10,), np.float32, ptr=0x7000_0000_0000 + 36), "alpha": 1.0}, device=0)
    assert str(e.value) == AXPY_SHARED
    b.bind({"x": x, "y": FakeDeviceArray((10,), np.float32, ptr=0x7000_0000_0000 + 40), "alpha": 1.0}, device=0)


def test_the_fast_path_hands_overlaps_to_the_general_path(monkeypatch):
    from types import SimpleNamespace

    stand_in_cupy(monkeypatch)
    ir, gen = axpy()
    launches = []
    compiled = SimpleNamespace(params=ir.params, launch_fields=gen, overlap_pairs=overlap_pairs(ir),
                               block=(gen.threads, 1, 1), smem=gen.smem_bytes, _functions={0: lambda *a: launches.append(a)})
    fast = fastpath.build(compiled, fallback=lambda args: "general path")
    base = 0x7000_0000_0000

    def call(x, y, n=10):
        return fast({"x": FakeCupyArray((n,), ptr=x), "y": FakeCupyArray((n,), ptr=y), "alpha": 1.0})

    assert call(base, base) == "general path" and call(base, base + 36) == "general path"
    assert call(base + 36, base) == "general path"
    assert call(base, base + 40) is True and call(base + 40, base) is True and len(launches) == 2


def test_the_fast_path_compares_only_pairs_with_a_written_tensor(monkeypatch):
    from types import SimpleNamespace

    stand_in_cupy(monkeypatch)
    mm = samples.matmul()
    gen = generated_for(mm)
    compiled = SimpleNamespace(params=mm.params, launch_fields=gen, overlap_pairs=overlap_pairs(mm),
                               block=(gen.threads, 1, 1), smem=gen.smem_bytes, _functions={0: lambda *a: None})
    fast = fastpath.build(compiled, fallback=lambda args: "general path")
    a = FakeCupyArray((64, 64), np.float16)
    assert fast({"A": a, "B": a, "C": FakeCupyArray((64, 64), np.float16)}) is True
    assert fast({"A": a, "B": FakeCupyArray((64, 64), np.float16), "C": a}) == "general path"


CPU_AXPY = """
@kernel
def axpy(x: f32[N], y: f32[N], alpha: f32):
    with grid(cdiv(N, 64), threads=64) as bx:
        for i in parallel(64):
            if bx * 64 + i < N:
                y[bx * 64 + i] = alpha * x[bx * 64 + i] + y[bx * 64 + i]
"""


@pytest.mark.parametrize("target", ["interp", "cpp"])
def test_a_call_on_the_cpu_targets(target):
    mod = tlc.compile_source(CPU_AXPY, target=target, path="axpy.tl")
    x = np.ones(100, np.float32)
    with pytest.raises(tlc.TlcError) as e:
        mod.axpy(x, x, 2.0)
    assert str(e.value) == AXPY_SHARED
    y = np.zeros(100, np.float32)
    mod.axpy(x, y, 2.0)
    assert (y == 2.0).all()


@pytest.mark.gpu
def test_a_call_on_the_gpu_through_each_path():
    import cupy

    mod = tlc.compile_source(CPU_AXPY, target="cuda", path="axpy.tl")
    x = cupy.ones(1000, cupy.float32)
    for _ in range(3):  # the general path, then the fast path (made at the second call)
        with pytest.raises(LaunchArgumentError) as e:
            mod.axpy(x, x, 2.0)
        assert str(e.value) == AXPY_SHARED
        with pytest.raises(LaunchArgumentError) as e:
            mod.axpy(x[1:], x[:-1], 2.0)
        assert str(e.value) == AXPY_SHARED
    with pytest.raises(LaunchArgumentError) as e:
        mod.axpy.launcher(x, x, 2.0)
    assert str(e.value) == AXPY_SHARED
    y = cupy.zeros(1000, cupy.float32)
    mod.axpy(x, y, 2.0)
    mod.axpy.launcher(x, y, 1.0)()
    assert bool((y == 3.0).all())
