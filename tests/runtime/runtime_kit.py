"""Hand-written kernels for the runtime tests: IR params plus a `GeneratedKernel` of the code
generator's contract (`tlc/codegen`), with CUDA C written here, so the runtime is tested without
the code generator.  Also a duck-typed device array exposing `__cuda_array_interface__`, and
a stand-in CuPy for the fast path's tests.
"""
from __future__ import annotations

import itertools
import sys
import types
from types import SimpleNamespace

import numpy as np

from tlc.codegen import GeneratedKernel, KernelArg  # the contract itself; only the C is hand-written
from tlc.dtypes import BF16, F32, I32, DType
from tlc.ir import BinOp, Const, Kernel, Load, Param, Parallel, Store, Var


def i32(v: int) -> Const:
    return Const(v, I32)


def cdiv(a, b: int) -> BinOp:
    return BinOp("//", BinOp("+", a, i32(b - 1), I32), i32(b), I32)


def ir_kernel(name: str, params, grid, threads: int, writes=("y",)) -> Kernel:
    """IR with `params` whose body stores to `writes` (the launcher reads only params, grid and
    which tensors are written)."""
    i = Var("i", I32)
    body = tuple(Parallel(("i",), (threads,), (Store(w, (i,), Load(w, (i,), p.dtype)),))
                 for w in writes for p in params if p.name == w)
    return Kernel(name=name, params=tuple(params), grid=tuple(grid), block_vars=("bx", "by", "bz")[:len(grid)],
                  threads=threads, buffers=(), body=body)


AXPY_SOURCE = r"""
extern "C" __global__ void axpy(const float* __restrict__ x, float* __restrict__ y, float alpha, int N) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < N) y[i] = alpha * x[i] + y[i];
}
"""


def axpy(threads: int = 256, source: str = AXPY_SOURCE, arch: str = "sm_80"):
    """`y = alpha * x + y` over f32[N]: (IR kernel, generated kernel)."""
    N = Var("N", I32)
    params = [Param("x", "tensor", F32, ("N",)), Param("y", "tensor", F32, ("N",)), Param("alpha", "scalar", F32)]
    grid = (cdiv(N, threads),)
    gen = GeneratedKernel("axpy", "axpy_launch", source,
                          (KernelArg("x", "tensor", F32, "const float* __restrict__"),
                           KernelArg("y", "tensor", F32, "float* __restrict__"),
                           KernelArg("alpha", "scalar", F32, "float"),
                           KernelArg("N", "shape", I32, "int")),
                          threads, 0, grid, arch)
    return ir_kernel("axpy", params, grid, threads), gen


SCALE_BF16_SOURCE = r"""
#include <cuda_bf16.h>
extern "C" __global__ void scale_bf16(const __nv_bfloat16* __restrict__ x, __nv_bfloat16* __restrict__ y,
                                      float s, long long offset, int N) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < N) y[i] = __float2bfloat16(s * __bfloat162float(x[i]) + (float)offset);
}
"""


def scale_bf16(threads: int = 128):
    """`y = s * x + offset` over bf16[N], with an f16 scalar passed as float and an i64 one."""
    from tlc.dtypes import DTYPES

    N = Var("N", I32)
    params = [Param("x", "tensor", BF16, ("N",)), Param("y", "tensor", BF16, ("N",)),
              Param("s", "scalar", DTYPES["f16"]), Param("offset", "scalar", DTYPES["i64"])]
    grid = (cdiv(N, threads),)
    gen = GeneratedKernel("scale_bf16", "scale_bf16_launch", SCALE_BF16_SOURCE,
                          (KernelArg("x", "tensor", BF16, "const __nv_bfloat16* __restrict__"),
                           KernelArg("y", "tensor", BF16, "__nv_bfloat16* __restrict__"),
                           KernelArg("s", "scalar", DTYPES["f16"], "float"),
                           KernelArg("offset", "scalar", DTYPES["i64"], "long long"),
                           KernelArg("N", "shape", I32, "int")),
                          threads, 0, grid, "sm_80")
    return ir_kernel("scale_bf16", params, grid, threads), gen


def generated_for(kernel: Kernel, source: str = "", arch: str = "sm_80") -> GeneratedKernel:
    """A `GeneratedKernel` whose args follow the contract for `kernel` (tensors and scalars in
    IR order, then shape symbols; 16-bit float scalars as float)."""
    args = []
    for p in kernel.params:
        if p.kind == "tensor":
            args.append(KernelArg(p.name, "tensor", p.dtype, f"{p.dtype.c_type}* __restrict__"))
        else:
            c_type = "float" if p.dtype.name in ("f16", "bf16") else \
                {"i32": "int", "i64": "long long", "f32": "float", "f64": "double", "bool": "bool"}.get(
                    p.dtype.name, p.dtype.c_type)
            args.append(KernelArg(p.name, "scalar", p.dtype, c_type))
    args += [KernelArg(s, "shape", I32, "int") for s in kernel.shape_symbols()]
    return GeneratedKernel(kernel.name, kernel.name + "_launch", source, tuple(args), kernel.threads,
                           kernel.smem_bytes, kernel.grid, arch)


_addresses = itertools.count(0x7F0000000000, 1 << 36)


def made_up_address() -> int:
    """A device address of its own for each made-up array (64 GiB apart): arrays that share
    memory are refused (runtime/overlap.py), so two that do not must not seem to."""
    return next(_addresses)


def overlap_pairs(kernel: Kernel) -> tuple:
    """The tensor pairs a launch of `kernel` checks do not share memory, as `args.Binder` has
    them (a stand-in compiled kernel's `overlap_pairs`, which the fast path reads)."""
    from tlc.ir.walk import written_names
    from tlc.runtime import overlap

    return overlap.pairs(tuple(p.name for p in kernel.params if p.kind == "tensor"), written_names(kernel.body))


class FakeDeviceArray:
    """A device array known only by `__cuda_array_interface__` (as Numba's or JAX's are); its
    data pointer is made up (one of its own unless `ptr` is given), so it is only ever bound,
    never launched."""

    def __init__(self, shape, dtype, ptr=None, strides=None, readonly=False):
        ptr = made_up_address() if ptr is None else ptr
        self._cai = {"shape": tuple(shape), "typestr": np.dtype(dtype).str, "data": (ptr, readonly),
                     "strides": strides, "version": 3}

    @property
    def __cuda_array_interface__(self):
        return self._cai


def tensor(name: str, dtype: DType, *shape) -> Param:
    return Param(name, "tensor", dtype, tuple(shape))


def scalar(name: str, dtype: DType) -> Param:
    return Param(name, "scalar", dtype)


def kernel(params, body=(), grid=(Const(1, I32),), threads=128, name="k") -> Kernel:
    return Kernel(name=name, params=tuple(params), grid=tuple(grid), block_vars=("bx", "by", "bz")[:len(grid)],
                  threads=threads, buffers=(), body=tuple(body))


class FakeCupyArray:
    """A CuPy array as the fast path reads one (runtime/fastpath.py): its shape, dtype,
    contiguity, device and address."""
    __slots__ = ("shape", "dtype", "_c_contiguous", "data")  # class attributes, as CuPy's are

    def __init__(self, shape, dtype=np.float32, device=0, contiguous=True, ptr=None):
        self.shape, self.dtype, self._c_contiguous = tuple(shape), np.dtype(dtype), contiguous
        self.data = SimpleNamespace(device_id=device, ptr=made_up_address() if ptr is None else ptr)

    @property
    def nbytes(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64)) * self.dtype.itemsize


def stand_in_cupy(monkeypatch, n: int = 1, current: int = 0) -> None:
    """A stand-in `cupy` module seeing `n` GPUs, `current` the current one, its arrays FakeCupyArray."""
    cupy = types.ModuleType("cupy")
    cupy.ndarray = FakeCupyArray
    cupy.cuda = SimpleNamespace(runtime=SimpleNamespace(getDeviceCount=lambda: n, getDevice=lambda: current))
    monkeypatch.setitem(sys.modules, "cupy", cupy)
