"""The few CUDA driver calls that CuPy does not wrap, through ctypes on libcuda: encoding TMA
tensor maps (`tensormap.py`) and the occupancy of blocks and clusters (`launch.py`)."""
from __future__ import annotations

import ctypes
import functools


@functools.lru_cache(maxsize=1)
def libcuda():
    return ctypes.CDLL("libcuda.so.1")


class _LaunchConfig(ctypes.Structure):
    """CUlaunchConfig (cuda.h)."""

    _fields_ = [("gridDimX", ctypes.c_uint), ("gridDimY", ctypes.c_uint), ("gridDimZ", ctypes.c_uint),
                ("blockDimX", ctypes.c_uint), ("blockDimY", ctypes.c_uint), ("blockDimZ", ctypes.c_uint),
                ("sharedMemBytes", ctypes.c_uint), ("hStream", ctypes.c_void_p), ("attrs", ctypes.c_void_p),
                ("numAttrs", ctypes.c_uint)]


def max_active_clusters(function: int, cluster: int, threads: int, smem: int) -> int | None:
    """How many clusters of `cluster` blocks of a kernel (compiled with __cluster_dims__) the
    GPU runs at once: fewer than SMs / cluster where a GPC's free SMs do not pair up.  None
    when the driver cannot say."""
    config = _LaunchConfig(cluster, 1, 1, threads, 1, 1, smem, None, None, 0)
    n = ctypes.c_int(0)
    fn = libcuda().cuOccupancyMaxActiveClusters
    fn.argtypes = [ctypes.POINTER(ctypes.c_int), ctypes.c_void_p, ctypes.POINTER(_LaunchConfig)]
    fn.restype = ctypes.c_int
    if fn(ctypes.byref(n), ctypes.c_void_p(function), ctypes.byref(config)) != 0 or n.value <= 0:
        return None
    return n.value


def max_active_blocks(function: int, threads: int, smem: int) -> int | None:
    """How many blocks of `threads` threads and `smem` bytes of dynamic shared memory of a
    kernel one SM runs at once (its registers, shared memory and launch bounds decide).  None
    when the driver cannot say."""
    n = ctypes.c_int(0)
    fn = libcuda().cuOccupancyMaxActiveBlocksPerMultiprocessor
    fn.argtypes = [ctypes.POINTER(ctypes.c_int), ctypes.c_void_p, ctypes.c_int, ctypes.c_size_t]
    fn.restype = ctypes.c_int
    if fn(ctypes.byref(n), ctypes.c_void_p(function), threads, smem) != 0 or n.value <= 0:
        return None
    return n.value
