"""Checking GPU launch arguments without a GPU: NumPy arrays, duck-typed device arrays
(`__cuda_array_interface__`) and a stand-in for PyTorch tensors.  Every mistake the interpreter
reports is reported here in the same words; the GPU adds contiguity, devices and C types."""
import datetime
import sys
import types

import ml_dtypes
import numpy as np
import pytest

from runtime_kit import FakeDeviceArray, axpy, generated_for, kernel, scalar, scale_bf16, tensor
from tlc.diagnostics import TlcError
from tlc.dtypes import BF16, DTYPES, F16, F32, I32
from tlc.interp import ArgumentError, run_kernel
from tlc.ir import Const, Parallel, Store, Var, samples
from tlc.runtime.args import (Binder, LaunchArgumentError, LaunchContractError, array_dtype,
                              tl_dtype_of_torch, torch_dtype)
from tlc.runtime.device_array import DeviceArray

MATMUL = samples.matmul()


def binder(kernel=MATMUL):
    return Binder(kernel, generated_for(kernel))


def mm_args(M=8, K=6, N=4, K2=None, dtype=np.float16):
    return dict(A=np.ones((M, K), dtype), B=np.ones((K if K2 is None else K2, N), dtype),
                C=np.zeros((M, N), dtype))


def on_device(args):
    return {k: FakeDeviceArray(v.shape, v.dtype) if isinstance(v, np.ndarray) else v for k, v in args.items()}


CASES = [
    ({**mm_args(), "D": np.ones(2)}, "unexpected argument 'D'; kernel 'matmul' takes A, B, C"),
    ({k: x for k, x in mm_args().items() if k != "B"}, "missing argument 'B'"),
    (mm_args(dtype=np.float32), "'A' has dtype f32 but the kernel expects f16"),
    ({**mm_args(), "C": np.zeros((8, 4, 1), np.float16)},
     "'C' has rank 3 but the kernel expects rank 2 (f16[M, N])"),
    (mm_args(K=100, K2=96), "shape symbol 'K' is 100 in 'A' (axis 1) but 96 in 'B' (axis 0)"),
    ({**mm_args(), "C": np.zeros((8, 5), np.float16)},
     "shape symbol 'N' is 4 in 'B' (axis 1) but 5 in 'C' (axis 1)"),
    ({**mm_args(), "A": np.ones((8, 6), ml_dtypes.bfloat16)},
     "'A' has dtype bf16 but the kernel expects f16"),
]


@pytest.mark.parametrize("args, message", CASES)
def test_numpy_arguments_fail_as_on_the_interpreter(args, message):
    with pytest.raises(ArgumentError) as interp:
        run_kernel(MATMUL, args)
    with pytest.raises(LaunchArgumentError) as gpu:
        binder().bind(args, device=0)
    assert str(gpu.value) == str(interp.value) == message
    assert isinstance(gpu.value, TlcError)


@pytest.mark.parametrize("args, message", CASES[2:-1])
def test_device_arrays_fail_the_same_way(args, message):
    with pytest.raises(LaunchArgumentError) as e:
        binder().bind(on_device(args), device=0)
    assert str(e.value) == message


def test_not_an_array():
    with pytest.raises(LaunchArgumentError) as e:
        binder().bind({**mm_args(), "B": [[1.0]]}, device=0)
    assert str(e.value) == "'B' must be a NumPy, CuPy or PyTorch array (f16[K, N]); got list"


def test_fixed_dimension_and_read_only_output():
    k = kernel([tensor("x", F32, 4), tensor("y", F32, "n")],
               [Parallel(("i",), (4,), [Store("y", (Var("i", I32),), Const(1.0, F32))])])
    b = binder(k)
    with pytest.raises(LaunchArgumentError, match=r"^'x' axis 0 has size 5 but the kernel expects 4$"):
        b.bind(dict(x=np.ones(5, np.float32), y=np.ones(4, np.float32)), device=0)
    y = np.ones(4, np.float32)
    y.flags.writeable = False
    with pytest.raises(LaunchArgumentError, match=r"^'y' is read-only but the kernel writes it$"):
        b.bind(dict(x=np.ones(4, np.float32), y=y), device=0)
    with pytest.raises(LaunchArgumentError, match=r"^'y' is read-only but the kernel writes it$"):
        b.bind(dict(x=FakeDeviceArray((4,), np.float32), y=FakeDeviceArray((4,), np.float32, readonly=True)),
               device=0)
    x = np.ones(4, np.float32)
    x.flags.writeable = False  # read-only inputs are fine
    b.bind(dict(x=x, y=np.ones(4, np.float32)), device=0)


# ---- what a bound launch holds -----------------------------------------------------------------

def test_bound_values_in_c_parameter_order():
    ir, gen = axpy()
    x, y = FakeDeviceArray((1000,), np.float32, ptr=0x1000), FakeDeviceArray((1000,), np.float32, ptr=0x2000)
    bound = Binder(ir, gen).bind(dict(x=x, y=y, alpha=2), device=0)
    assert [type(a) for a in bound.args] == [np.uint64, np.uint64, np.float32, np.int32]
    assert [int(a) for a in bound.args] == [0x1000, 0x2000, 2, 1000]
    assert bound.values[2:] == [2.0, 1000]
    assert bound.host == [] and bound.torch_device == -1


def test_numpy_arrays_are_recorded_for_copies_and_write_back():
    ir, gen = axpy()
    x, y = np.ones(10, np.float32), np.zeros(10, np.float32)
    bound = Binder(ir, gen).bind(dict(x=x, y=y, alpha=1.0), device=0)
    assert [(slot, arr is {0: x, 1: y}[slot], written) for slot, arr, written in bound.host] == \
        [(0, True, False), (1, True, True)]
    assert bound.args[:2] == [None, None]  # pointers come with the copies


def test_numpy_mixes_with_device_arrays():
    ir, gen = axpy()
    bound = Binder(ir, gen).bind(dict(x=np.ones(7, np.float32), y=FakeDeviceArray((7,), np.float32, ptr=64),
                                      alpha=np.float64(0.5)), device=0)
    assert [slot for slot, _, _ in bound.host] == [0]
    assert bound.args[1] == np.uint64(64) and bound.args[2] == np.float32(0.5)
    assert bound.args[3] == np.int32(7)


def test_strided_numpy_arrays_are_accepted():  # they are copied densely anyway
    ir, gen = axpy()
    x = np.ones(20, np.float32)[::2]
    Binder(ir, gen).bind(dict(x=x, y=np.ones(10, np.float32), alpha=1.0), device=0)


@pytest.mark.parametrize("strides, ok", [
    (None, True), ((24, 4), True), ((4, 12), False), ((48, 8), False),
])
def test_device_arrays_must_be_c_contiguous(strides, ok):
    b = binder()
    args = on_device(mm_args(M=8, K=6, N=4, dtype=np.float32))
    args = {k: FakeDeviceArray(v.__cuda_array_interface__["shape"], np.float16) for k, v in args.items()}
    args["A"] = FakeDeviceArray((8, 6), np.float16, strides=None if strides is None else
                                tuple(s // 2 for s in strides))
    if ok:
        b.bind(args, device=0)
    else:
        with pytest.raises(LaunchArgumentError) as e:
            b.bind(args, device=0)
        assert str(e.value) == ("'A' is not C-contiguous; tlc kernels read tensors as dense row-major "
                                "arrays: pass cupy.ascontiguousarray(A)")


def test_size_one_and_empty_dimensions_carry_any_stride():
    b = binder()
    args = {k: FakeDeviceArray(v.shape, np.float16) for k, v in mm_args(M=1, K=6, N=4).items()}
    args["A"] = FakeDeviceArray((1, 6), np.float16, strides=(2, 2))  # the row stride is never used
    b.bind(args, device=0)
    args = {k: FakeDeviceArray(v.shape, np.float16) for k, v in mm_args(M=0, K=6, N=4).items()}
    args["A"] = FakeDeviceArray((0, 6), np.float16, strides=(4, 4))
    b.bind(args, device=0)


def test_arrays_on_another_gpu():
    b = binder()
    args = on_device(mm_args())
    args["B"] = FakeDeviceArray((6, 4), np.float16, ptr=0xB000)
    with pytest.raises(LaunchArgumentError) as e:
        b.bind(args, device=0, device_of=lambda ptr: 1 if ptr == 0xB000 else 0)
    assert str(e.value) == ("'B' is on GPU 1 but the kernel runs on the current device, GPU 0; move it "
                            "there, or make GPU 1 current (cupy.cuda.Device(1).use())")


def test_shape_symbol_larger_than_i32():
    ir, gen = axpy()
    n = 2**31
    with pytest.raises(LaunchArgumentError, match=f"^shape symbol 'N' is {n}, more than an i32 holds$"):
        Binder(ir, gen).bind(dict(x=FakeDeviceArray((n,), np.float32), y=FakeDeviceArray((n,), np.float32),
                                  alpha=1.0), device=0)


# ---- scalars -----------------------------------------------------------------------------------

def scalar_kernel(dtype, c_type):
    k = kernel([scalar("a", dtype)], [])
    gen = generated_for(k)
    gen = type(gen)(**{**gen.__dict__, "args": (type(gen.args[0])("a", "scalar", dtype, c_type),)})
    return Binder(k, gen)


@pytest.mark.parametrize("dtype, c_type, value, expected", [
    ("i32", "int", 7, np.int32(7)), ("i32", "int", np.int64(7), np.int32(7)), ("i32", "int", 7.0, np.int32(7)),
    ("i32", "int", True, np.int32(1)), ("i64", "long long", 2**40, np.int64(2**40)),
    ("u8", "uint8_t", 255, np.uint8(255)), ("f32", "float", 2, np.float32(2.0)),
    ("f32", "float", np.array(1.5), np.float32(1.5)), ("f64", "double", 0.1, np.float64(0.1)),
    ("f16", "float", 0.1, np.float32(0.1)), ("bf16", "float", 3, np.float32(3.0)),
    ("bool", "bool", 1, np.bool_(True)), ("i16", "const int16_t", -3, np.int16(-3)),
    ("bool", "bool", 0, np.bool_(False)), ("bool", "bool", np.bool_(True), np.bool_(True)),
    ("bool", "bool", np.int8(1), np.bool_(True)), ("f32", "float", float("inf"), np.float32(np.inf)),
    ("f16", "float", 65519.0, np.float32(65519.0)),  # rounds down to f16's largest, 65504
    ("f32", "float", np.float16(2), np.float32(2.0)), ("f32", "float", ml_dtypes.bfloat16(2), np.float32(2.0)),
])
def test_scalars_take_their_c_type(dtype, c_type, value, expected):
    bound = scalar_kernel(DTYPES[dtype], c_type).bind(dict(a=value), device=0)
    assert type(bound.args[0]) is type(expected) and bound.args[0] == expected


@pytest.mark.parametrize("dtype, value, message", [
    ("i32", 2.5, "scalar 'a' (i32) cannot hold 2.5"),
    ("i32", 2**40, f"scalar 'a' (i32) cannot hold {2**40}"),
    ("u8", -1, "scalar 'a' (u8) cannot hold -1"),
    ("f32", np.ones(2), "scalar 'a' (f32) must be a number; got ndarray"),
    ("f32", "1.0", "scalar 'a' (f32) must be a number; got str"),
    # issue #16: NumPy converted these, or Python's bool() took any number
    ("bool", 2, "scalar 'a' (bool) cannot hold 2"),
    ("bool", 0.5, "scalar 'a' (bool) cannot hold 0.5"),
    ("bool", 1.0, "scalar 'a' (bool) cannot hold 1.0"),
    ("bool", "yes", "scalar 'a' (bool) must be a number; got str"),
    ("f32", np.str_("1.5"), "scalar 'a' (f32) must be a number; got str_"),
    ("f32", 1 + 2j, "scalar 'a' (f32) must be a number; got complex"),
    ("f32", np.complex64(1), "scalar 'a' (f32) must be a number; got complex64"),
    ("f32", datetime.datetime(2020, 1, 1), "scalar 'a' (f32) must be a number; got datetime"),
    ("f32", np.datetime64("2020-01-01"), "scalar 'a' (f32) must be a number; got datetime64"),
    ("f32", None, "scalar 'a' (f32) must be a number; got NoneType"),
    ("i32", np.str_("3"), "scalar 'a' (i32) must be a number; got str_"),
    ("f32", 1e39, "scalar 'a' (f32) cannot hold 1e+39"),
    ("f16", 70000.0, "scalar 'a' (f16) cannot hold 70000.0"),
    ("f16", 10**6, "scalar 'a' (f16) cannot hold 1000000"),
    ("f32", 2**1024, f"scalar 'a' (f32) cannot hold {2**1024}"),
    ("i32", float("nan"), "scalar 'a' (i32) cannot hold nan"),
    ("u8", np.uint16(256), "scalar 'a' (u8) cannot hold np.uint16(256)"),
    # past the 4300 digits that repr writes: its ValueError was a traceback out of the call
    pytest.param("f32", 10**5000, "scalar 'a' (f32) cannot hold an integer of 5001 digits", id="f32-10**5000"),
    pytest.param("i32", -10**5000, "scalar 'a' (i32) cannot hold an integer of 5001 digits", id="i32--10**5000"),
])
def test_scalar_errors_match_the_interpreter(dtype, value, message):
    with pytest.raises(ArgumentError) as interp:
        run_kernel(kernel([scalar("a", DTYPES[dtype])], []), dict(a=value))
    with pytest.raises(LaunchArgumentError) as gpu:
        c_type = "float" if dtype in ("f16", "bf16") else DTYPES[dtype].c_type  # as codegen passes them
        scalar_kernel(DTYPES[dtype], c_type).bind(dict(a=value), device=0)
    assert str(gpu.value) == str(interp.value) == message


# ---- the contract with the code generator ------------------------------------------------------

def test_generated_args_must_follow_the_ir():
    ir, gen = axpy()
    swapped = type(gen)(**{**gen.__dict__, "args": (gen.args[1], gen.args[0], *gen.args[2:])})
    with pytest.raises(LaunchContractError, match="the generated kernel 'axpy' takes"):
        Binder(ir, swapped)
    bad_c = type(gen)(**{**gen.__dict__, "args": (*gen.args[:2], type(gen.args[2])("alpha", "scalar", F32, "half"),
                                                   gen.args[3])})
    with pytest.raises(LaunchContractError, match="scalar 'alpha' has the C type 'half'"):
        Binder(ir, bad_c)


# ---- PyTorch, through a stand-in module --------------------------------------------------------

class FakeDtype:
    def __init__(self, name):
        self.name = name

    def __str__(self):
        return "torch." + self.name


@pytest.fixture
def fake_torch(monkeypatch):
    torch = types.ModuleType("torch")

    class Tensor:
        def __init__(self, shape, dtype, device=0, contiguous=True, ptr=0xA000):
            self.shape, self.dtype, self._device, self._contiguous, self._ptr = shape, FakeDtype(dtype), device, \
                contiguous, ptr

        def get_device(self):
            return self._device

        def is_contiguous(self):
            return self._contiguous

        def data_ptr(self):
            return self._ptr

    torch.Tensor = Tensor
    monkeypatch.setitem(sys.modules, "torch", torch)
    return torch


def test_torch_tensors(fake_torch):
    ir, gen = scale_bf16()
    T = fake_torch.Tensor
    b = Binder(ir, gen)
    bound = b.bind(dict(x=T((5,), "bfloat16", device=0, ptr=16), y=T((5,), "bfloat16", ptr=32), s=0.5, offset=3),
                   device=0)
    assert [int(a) for a in bound.args] == [16, 32, 0, 3, 5] and bound.torch_device == 0
    assert type(bound.args[3]) is np.int64
    cases = [
        (dict(x=T((5,), "float16")), "'x' has dtype f16 but the kernel expects bf16"),
        (dict(x=T((5,), "float8_e4m3fnuz")), "'x' has dtype float8_e4m3fnuz but the kernel expects bf16"),
        (dict(x=T((5,), "bfloat16", device=-1)), "'x' is a PyTorch tensor on the CPU; pass x.cuda() or a "
                                                  "NumPy array (x.numpy())"),
        (dict(x=T((5,), "bfloat16", contiguous=False)), "'x' is not C-contiguous; tlc kernels read tensors "
                                                        "as dense row-major arrays: pass x.contiguous()"),
        (dict(x=T((5,), "bfloat16", device=1)), "'x' is on GPU 1 but the kernel runs on the current device, "
                                                "GPU 0; move it there, or make GPU 1 current "
                                                "(cupy.cuda.Device(1).use())"),
    ]
    for change, message in cases:
        with pytest.raises(LaunchArgumentError) as e:
            b.bind({**dict(x=T((5,), "bfloat16"), y=T((5,), "bfloat16"), s=1.0, offset=0), **change}, device=0)
        assert str(e.value) == message


@pytest.mark.parametrize("name, tl", [("float16", "f16"), ("bfloat16", "bf16"), ("float8_e4m3fn", "f8e4m3"),
                                      ("float8_e5m2", "f8e5m2"), ("bool", "bool"), ("int64", "i64"),
                                      ("uint8", "u8"), ("complex64", None)])
def test_torch_dtype_names(name, tl):
    found = tl_dtype_of_torch(FakeDtype(name))
    assert (found.name if found else None) == tl


def test_torch_dtype_is_the_inverse_of_tl_dtype_of_torch():
    torch = types.SimpleNamespace(**{n: FakeDtype(n) for n in ("float16", "bfloat16", "float8_e4m3fn", "int64", "bool")})
    for tl in ("f16", "bf16", "f8e4m3", "i64", "bool"):
        assert tl_dtype_of_torch(torch_dtype(torch, DTYPES[tl])) == DTYPES[tl]


def test_array_dtype_reads_every_kind(fake_torch):
    assert array_dtype(np.ones(2, ml_dtypes.bfloat16)) == BF16
    assert array_dtype(FakeDeviceArray((2,), np.float16)) == F16
    assert array_dtype(fake_torch.Tensor((2,), "float32")) == F32
    assert array_dtype(2.0) is None
    d = object.__new__(DeviceArray)
    d.dtype = BF16
    assert array_dtype(d) == BF16


def test_device_array_arguments():
    ir, gen = scale_bf16()
    b = Binder(ir, gen)

    def dev(shape, dtype=BF16, device=0, ptr=0x40):
        d = object.__new__(DeviceArray)  # no GPU here: only the fields the binder reads
        d.shape, d.dtype, d.device, d.ptr = shape, dtype, device, ptr
        return d
    bound = b.bind(dict(x=dev((3,)), y=dev((3,), ptr=0x80), s=1, offset=0), device=0)
    assert [int(a) for a in bound.args[:2]] == [0x40, 0x80]
    with pytest.raises(LaunchArgumentError, match="^'y' has dtype f16 but the kernel expects bf16$"):
        b.bind(dict(x=dev((3,)), y=dev((3,), F16), s=1, offset=0), device=0)
    with pytest.raises(LaunchArgumentError, match="shape symbol 'N' is 3 in 'x' \\(axis 0\\) but 4 in 'y'"):
        b.bind(dict(x=dev((3,)), y=dev((4,)), s=1, offset=0), device=0)
