"""The driver calls made through ctypes (tensormap.encode's cuTensorMapEncodeTiled, the
occupancy queries of driver_api), checked on the CPU against a C-callable stand-in: what the
driver reads at each address is what cuda.h declares, though the arrays and the launch
configuration are passed as packed bytes (no ctypes POINTER, array or Structure type is made:
each cost a cached first call ~50 us)."""
import ctypes

import numpy as np
import pytest

from tlc.codegen.warpspec import TensorMapSpec
from tlc.dtypes import F16
from tlc.ir.warpspec import tma_dtype
from tlc.runtime import driver_api, tensormap

P, I, U = ctypes.c_void_p, ctypes.c_int, ctypes.c_uint32
ENCODE = ctypes.CFUNCTYPE(I, P, I, U, P, P, P, P, P, I, I, I, I)
OCCUPANCY = ctypes.CFUNCTYPE(I, P, P, P)
BLOCKS = ctypes.CFUNCTYPE(I, P, P, I, ctypes.c_size_t)


class CUlaunchConfig(ctypes.Structure):  # cuda.h's
    _fields_ = [("gridDimX", ctypes.c_uint), ("gridDimY", ctypes.c_uint), ("gridDimZ", ctypes.c_uint),
                ("blockDimX", ctypes.c_uint), ("blockDimY", ctypes.c_uint), ("blockDimZ", ctypes.c_uint),
                ("sharedMemBytes", ctypes.c_uint), ("hStream", ctypes.c_void_p), ("attrs", ctypes.c_void_p),
                ("numAttrs", ctypes.c_uint)]


class FakeCuda:
    def __init__(self, **functions):
        self.__dict__.update(functions)


def u64s(address, n):
    return list((ctypes.c_uint64 * n).from_address(address))


def u32s(address, n):
    return list((ctypes.c_uint32 * n).from_address(address))


@pytest.mark.parametrize("sizes", [(130, 104), (7, 3, 64)])
def test_encode_passes_the_geometry_and_returns_the_map_the_driver_wrote(monkeypatch, sizes):
    spec = TensorMapSpec("A", F16, tuple("MKN"[:len(sizes)]), 128, 64)
    seen = []

    def driver(tmap, dtype, rank, address, dims, strides, box, elements, interleave, swizzle, l2, oob):
        assert tmap % 128 == 0  # CUtensorMap's alignment
        seen.append((dtype, rank, address, u64s(dims, rank), u64s(strides, max(1, rank - 1)), u32s(box, rank),
                     u32s(elements, rank), interleave, swizzle, l2, oob))
        ctypes.memmove(tmap, bytes(range(128)), 128)
        return 0
    callback = ENCODE(driver)
    monkeypatch.setattr(tensormap, "libcuda", lambda: FakeCuda(cuTensorMapEncodeTiled=callback))
    tensormap._driver_encode.cache_clear()
    try:
        found = tensormap.encode(spec, 0x10000, sizes)
    finally:
        tensormap._driver_encode.cache_clear()
    dims, strides, box = tensormap.map_geometry(spec, sizes)
    assert seen == [(tma_dtype(F16), len(sizes), 0x10000, dims, strides, box, [1] * len(sizes), 0, 3, 3, 0)]
    assert isinstance(found, np.void) and found.tobytes() == bytes(range(128))


def test_a_map_the_driver_refuses_is_none(monkeypatch):
    callback = ENCODE(lambda *args: 1)
    monkeypatch.setattr(tensormap, "libcuda", lambda: FakeCuda(cuTensorMapEncodeTiled=callback))
    tensormap._driver_encode.cache_clear()
    try:
        assert tensormap.encode(TensorMapSpec("A", F16, ("M", "K"), 128, 64), 0x10000, (130, 104)) is None
    finally:
        tensormap._driver_encode.cache_clear()


def test_the_occupancy_queries_pass_what_cuda_h_declares(monkeypatch):
    configs, blocks = [], []

    def clusters(out, function, config):
        configs.append((function, bytes(CUlaunchConfig.from_address(config))))
        ctypes.c_int.from_address(out).value = 66
        return 0

    def per_sm(out, function, threads, smem):
        blocks.append((function, threads, smem))
        ctypes.c_int.from_address(out).value = 2
        return 0
    fake = FakeCuda(cuOccupancyMaxActiveClusters=OCCUPANCY(clusters),
                    cuOccupancyMaxActiveBlocksPerMultiprocessor=BLOCKS(per_sm))
    monkeypatch.setattr(driver_api, "libcuda", lambda: fake)
    assert driver_api.max_active_clusters(0x1234, 2, 384, 214016) == 66
    assert configs == [(0x1234, bytes(CUlaunchConfig(2, 1, 1, 384, 1, 1, 214016, None, None, 0)))]
    assert driver_api.max_active_blocks(0x1234, 256, 1024) == 2 and blocks == [(0x1234, 256, 1024)]
    fake.cuOccupancyMaxActiveClusters = OCCUPANCY(lambda out, function, config: 1)  # an error: the driver cannot say
    assert driver_api.max_active_clusters(0x1234, 2, 384, 214016) is None
