"""The generated fast launch path, without a GPU: a stand-in `cupy` module provides the array
type and records launches.  The fast path must launch exactly what the general path would for
plain CuPy calls, and hand everything else to the general path (here a fallback returning
False) without launching."""
import sys
import types
from types import SimpleNamespace

import numpy as np
import pytest

from runtime_kit import (FakeCupyArray as FakeArray, axpy, generated_for, kernel, made_up_address, overlap_pairs,
                         scalar, stand_in_cupy)
from tlc.dtypes import DTYPES
from tlc.ir import samples
from tlc.runtime import fastpath


@pytest.fixture
def gpus(monkeypatch):
    """`gpus(n, current=0)`: a stand-in CuPy seeing `n` GPUs."""
    return lambda n, current=0: stand_in_cupy(monkeypatch, n, current)


def build(ir, gen, loaded=(0,)):
    launches = []
    compiled = SimpleNamespace(params=ir.params, launch_fields=gen, overlap_pairs=overlap_pairs(ir),
                               block=(gen.threads, 1, 1), smem=gen.smem_bytes,
                               _functions={d: lambda *a, d=d: launches.append((d, *a)) for d in loaded})
    return fastpath.build(compiled, fallback=lambda args: False), launches


def test_a_plain_call_launches_with_c_typed_scalars(gpus):
    gpus(1)
    fast, launches = build(*axpy())
    x, y = FakeArray((1000,), ptr=0x7e0000001000), FakeArray((1000,), ptr=0x7e0000002000)
    assert fast({"x": x, "y": y, "alpha": 2.0})
    [(device, grid, block, args, smem, stream)] = launches
    assert (device, grid, block, smem, stream) == (0, (4, 1, 1), (256, 1, 1), 0, None)
    assert args[:2] == [0x7e0000001000, 0x7e0000002000] and type(args[0]) is np.uint64  # by address
    assert type(args[2]) is np.float32 and args[2] == 2.0
    assert type(args[3]) is np.int32 and args[3] == 1000


def test_cached_scalars_keep_the_sign_of_zero(gpus):
    gpus(1)
    fast, launches = build(*axpy())
    x, y = FakeArray((10,)), FakeArray((10,))
    for alpha in (0.0, -0.0, 3, 3.0, -0.0):
        assert fast({"x": x, "y": y, "alpha": alpha})
    alphas = [a[3][2] for a in launches]
    assert [float(a) for a in alphas] == [0.0, 0.0, 3.0, 3.0, 0.0]
    assert [bool(np.signbit(a)) for a in alphas] == [False, True, False, False, True]


def test_declines_what_it_is_not_sure_of(gpus):
    gpus(1)
    fast, launches = build(*axpy())
    x, y = FakeArray((300,)), FakeArray((300,))
    for args in [
        {"x": np.ones(300, np.float32), "y": y, "alpha": 1.0},  # NumPy
        {"x": x, "y": y, "alpha": np.float32(1.0)},  # a NumPy scalar
        {"x": x, "y": y, "alpha": True},  # a bool for a float
        {"x": x, "y": y, "alpha": "1"},
        {"x": x, "y": y, "alpha": 2**60},  # not exact in a float
        {"x": x, "y": y, "alpha": 1.0, "z": 0},  # unexpected
        {"x": x, "alpha": 1.0, "z": 0},  # missing
        {"x": FakeArray((300,), np.float64), "y": y, "alpha": 1.0},  # dtype
        {"x": FakeArray((200,)), "y": y, "alpha": 1.0},  # shape symbol
        {"x": FakeArray((3, 100)), "y": y, "alpha": 1.0},  # rank
        {"x": FakeArray((300,), contiguous=False), "y": y, "alpha": 1.0},
        {"x": FakeArray((0,)), "y": FakeArray((0,)), "alpha": 1.0},  # an empty grid
        {"x": FakeArray((2**31,)), "y": FakeArray((2**31,)), "alpha": 1.0},  # beyond i32
    ]:
        assert not fast(args), args
    assert launches == []


def test_not_loaded_on_this_gpu_yet(gpus):
    gpus(1)
    fast, launches = build(*axpy(), loaded=())
    assert not fast({"x": FakeArray((8,)), "y": FakeArray((8,)), "alpha": 1.0})


def test_several_gpus_check_each_array(gpus):
    gpus(2, current=1)
    fast, launches = build(*axpy(), loaded=(0, 1))
    assert not fast({"x": FakeArray((8,), device=1), "y": FakeArray((8,), device=0), "alpha": 1.0})
    assert fast({"x": FakeArray((8,), device=1), "y": FakeArray((8,), device=1), "alpha": 1.0})
    assert [d for d, *_ in launches] == [1]


def test_shape_symbols_across_tensors(gpus):
    gpus(1)
    mm = samples.matmul()
    fast, launches = build(mm, generated_for(mm))
    A, B, C = FakeArray((300, 64), np.float16), FakeArray((64, 200), np.float16), FakeArray((300, 200), np.float16)
    assert fast({"A": A, "B": B, "C": C})
    assert launches[0][1] == (2, 3, 1)  # (cdiv(N, 128), cdiv(M, 128))
    assert [int(a) for a in launches[0][3][3:]] == [300, 64, 200]
    assert not fast({"A": A, "B": FakeArray((65, 200), np.float16), "C": C})
    assert not fast({"A": A, "B": B, "C": FakeArray((300, 201), np.float16)})


@pytest.mark.parametrize("dtype, c_type, ok, bad", [
    ("i32", "int", [7, -2**31, 2**31 - 1], [2**31, 7.0, True, np.int32(7)]),
    ("u8", "unsigned char", [0, 255], [-1, 256]),
    ("bool", "bool", [True, False], [1, 0.0]),
    ("f16", "float", [0.5, 2, 65504.0, -65504], [np.float16(0.5), 65505.0, 70000, float("nan"), "1"]),
    ("f32", "float", [3e38, 2**53], [1e39, 2**53 + 1, float("inf"), None]),
])
def test_scalar_types(gpus, dtype, c_type, ok, bad):
    gpus(1)
    k = kernel([scalar("a", DTYPES[dtype])])
    gen = generated_for(k)
    gen = type(gen)(**{**gen.__dict__, "args": (type(gen.args[0])("a", "scalar", DTYPES[dtype], c_type),)})
    fast, launches = build(k, gen)
    for v in ok:
        assert fast({"a": v}), v
    for v in bad:
        assert not fast({"a": v}), v
    expected = {"int": np.int32, "unsigned char": np.uint8, "bool": np.bool_, "float": np.float32}[c_type]
    assert [type(a[3][0]) for a in launches] == [expected] * len(ok)
    assert [a[3][0] for a in launches] == [expected(v) for v in ok]


def test_contiguity_through_flags_where_cupy_lacks_the_attribute(gpus, monkeypatch):
    class OtherArray:  # a CuPy whose arrays expose contiguity only through `flags`
        def __init__(self, contiguous):
            self.shape, self.dtype = (8,), np.dtype(np.float32)
            self.flags = SimpleNamespace(c_contiguous=contiguous)
            self.data = SimpleNamespace(device_id=0, ptr=made_up_address())
    gpus(1)
    monkeypatch.setattr(sys.modules["cupy"], "ndarray", OtherArray)
    fast, launches = build(*axpy())
    assert fast({"x": OtherArray(True), "y": OtherArray(True), "alpha": 1.0})
    assert not fast({"x": OtherArray(False), "y": OtherArray(True), "alpha": 1.0})


class FakeTensor:
    """A stand-in PyTorch tensor: what the fast path reads of one."""
    __slots__ = ("shape", "dtype", "is_cuda", "_contiguous", "_ptr", "_device")

    def __init__(self, shape, dtype="float32", ptr=None, device=0, contiguous=True):
        ptr = made_up_address() if ptr is None else ptr
        self.shape, self.dtype, self._ptr, self._contiguous = tuple(shape), dtype, ptr, contiguous
        self.is_cuda, self._device = device >= 0, device

    def is_contiguous(self):
        return self._contiguous

    def data_ptr(self):
        return self._ptr

    def get_device(self):
        return self._device


@pytest.fixture
def fake_torch(monkeypatch):
    """A stand-in `torch` whose current stream on GPU d is the raw stream 1000 + d."""
    from tlc.runtime import launch

    torch = types.ModuleType("torch")
    torch.Tensor = FakeTensor
    torch.nn = SimpleNamespace(Parameter=type("Parameter", (FakeTensor,), {"__slots__": ()}))
    torch.float32, torch.float16 = "float32", "float16"  # dtypes are compared by identity
    torch._C = SimpleNamespace(_cuda_getCurrentRawStream=lambda d: 1000 + d)
    monkeypatch.setitem(sys.modules, "torch", torch)
    monkeypatch.setattr(launch, "_raw_stream", None)
    return torch


def build_torch(ir, gen, loaded=(0,), streams=None):
    launches = []
    compiled = SimpleNamespace(params=ir.params, launch_fields=gen, overlap_pairs=overlap_pairs(ir),
                               block=(gen.threads, 1, 1), smem=gen.smem_bytes,
                               _functions={d: lambda *a, d=d: launches.append((d, *a)) for d in loaded},
                               _streams={1000: "stream 1000", 1001: "stream 1001"} if streams is None else streams)
    return fastpath.build(compiled, fallback=lambda args: False, positional=True), launches


def test_torch_tensors_launch_by_pointer_on_torchs_stream_once_enabled(gpus, fake_torch):
    gpus(1)
    fast, launches = build_torch(*axpy())
    x, y = FakeTensor((1000,), ptr=0x7f0000001000), FakeTensor((1000,), ptr=0x7f0000002000)
    assert not fast((x, y, 2.0))  # PyTorch not yet in use: the general path takes it
    fastpath.enable_torch(fast)
    assert fast((x, y, 2.0))
    weight = fake_torch.nn.Parameter((1000,), ptr=0x7f0000003000)
    assert fast((weight, y, 2.0))  # a parameter is a tensor too
    [(device, grid, block, args, smem, stream), (_, _, _, args2, _, _)] = launches
    assert (device, grid, block, smem, stream) == (0, (4, 1, 1), (256, 1, 1), 0, "stream 1000")
    assert args[:2] == [0x7f0000001000, 0x7f0000002000] and type(args[0]) is np.uint64
    assert type(args[2]) is np.float32 and args[2] == 2.0
    assert type(args[3]) is np.int32 and args[3] == 1000
    assert args2[0] == 0x7f0000003000 and args2[1] is args[1]  # an address seen before: its C value kept


def test_torch_declines_what_it_is_not_sure_of(gpus, fake_torch):
    gpus(1)
    fast, launches = build_torch(*axpy())
    fastpath.enable_torch(fast)
    x, y = FakeTensor((300,)), FakeTensor((300,))
    for args in [
        (x, FakeArray((300,)), 1.0),  # a CuPy array with a tensor
        (FakeArray((300,)), y, 1.0),
        (x, np.ones(300, np.float32), 1.0),
        (FakeTensor((300,), "float16"), y, 1.0),  # dtype
        (x, FakeTensor((300,), contiguous=False), 1.0),
        (x, FakeTensor((300,), device=-1), 1.0),  # on the CPU
        (x, FakeTensor((299,)), 1.0),  # shape symbol
        (FakeTensor((3, 100)), y, 1.0),  # rank
        (FakeTensor((0,)), FakeTensor((0,)), 1.0),  # an empty grid
        (x, x, 1.0),  # y is x: the general path refuses it (runtime/overlap.py)
        (x, y, np.float32(1.0)),  # a NumPy scalar
    ]:
        assert not fast(args), args
    assert launches == []


def test_torch_stream_not_made_yet_falls_back(gpus, fake_torch):
    gpus(1)
    fast, launches = build_torch(*axpy(), streams={})
    fastpath.enable_torch(fast)
    assert not fast((FakeTensor((8,)), FakeTensor((8,)), 1.0))
    assert launches == []


def test_torch_on_several_gpus_checks_each_tensor(gpus, fake_torch):
    gpus(2, current=1)
    fast, launches = build_torch(*axpy(), loaded=(0, 1))
    fastpath.enable_torch(fast)
    assert not fast((FakeTensor((8,), device=1), FakeTensor((8,), device=0), 1.0))
    assert fast((FakeTensor((8,), device=1), FakeTensor((8,), device=1), 1.0))
    assert [(d, s) for d, _, _, _, _, s in launches] == [(1, "stream 1001")]


def test_a_kernel_built_for_its_maps_hands_other_flags_to_the_general_path(gpus):
    """A kernel with tensor maps built for every map encoded (`tensormap.built_flags`): the
    fast path launches it when the launch's maps all encode, and leaves a launch whose flags
    differ (an unaligned array) to the general path, which launches the generic build."""
    import dataclasses

    from tlc.codegen.warpspec import TensorMapSpec
    from tlc.runtime.tensormap import FLAGS

    gpus(1)
    ir, gen = axpy()
    gen = dataclasses.replace(gen, tensor_maps=(TensorMapSpec("x", DTYPES["f32"], ("N",), 1, 32),))
    launches = []

    def maps(pointers, sizes):
        return [np.void(bytes(128)), FLAGS[1 if pointers[0] % 16 == 0 else 0]]

    compiled = SimpleNamespace(params=ir.params, launch_fields=gen, overlap_pairs=overlap_pairs(ir),
                               block=(gen.threads, 1, 1), smem=gen.smem_bytes,
                               tensor_maps=maps, built_flags=FLAGS[1], _functions={0: lambda *a: launches.append(a)})
    fast = fastpath.build(compiled, fallback=lambda args: False)
    y = FakeArray((1000,), ptr=0x7e0000002000)
    assert fast({"x": FakeArray((1000,), ptr=0x7e0000001000), "y": y, "alpha": 2.0})
    assert len(launches) == 1 and launches[0][2][-1] is FLAGS[1]
    assert fast({"x": FakeArray((1000,), ptr=0x7e0000001004), "y": y, "alpha": 2.0}) is False and len(launches) == 1


def test_a_dimension_expression_that_divides_by_zero_goes_to_the_general_path(gpus):
    """HK = 0 in y's HK * (H // HK) (std.attention's GQA check): the general path, whose binder
    says what divides by zero (tests/runtime/test_launch_dim_expressions.py), where the fast
    path raised ZeroDivisionError out of the call; H a multiple of HK launches."""
    import tlc
    from tlc.codegen import generate

    from test_launch_dim_expressions import GROUPS

    gpus(1)
    ir = tlc.compile_source(GROUPS, target="cpu", path="groups.tl").groups.scheduled({}, "sm_80")
    fast, launches = build(ir, generate(ir, "sm_80"))
    assert fast({"x": FakeArray((2,)), "heads": FakeArray((0,)), "y": FakeArray((2,))}) is False and not launches
    assert fast({"x": FakeArray((4,)), "heads": FakeArray((2,)), "y": FakeArray((4,))}) and len(launches) == 1
