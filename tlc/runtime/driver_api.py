"""The few CUDA driver calls that CuPy does not wrap, through ctypes on libcuda: encoding TMA
tensor maps (`tensormap.py`) and the occupancy of blocks and clusters (`launch.py`)."""
from __future__ import annotations

import ctypes
import functools
import struct


@functools.lru_cache(maxsize=1)
def libcuda():
    return ctypes.CDLL("libcuda.so.1")


# CUlaunchConfig (cuda.h): gridDim x y z, blockDim x y z, sharedMemBytes (unsigned ints), hStream,
# attrs (pointers), numAttrs, packed as C lays it out.  The driver's arguments are passed as
# addresses (c_void_p): a ctypes Structure or POINTER type costs a process ~50 us to create,
# which a cached first call of a persistent kernel paid for its one occupancy query
_LAUNCH_CONFIG = struct.Struct("@7IPPI4x")


def launch_config(grid: tuple, block: tuple, smem: int) -> bytes:
    """A CUlaunchConfig without attributes, on no stream."""
    return _LAUNCH_CONFIG.pack(*grid, *block, smem, 0, 0, 0)


def max_active_clusters(function: int, cluster: int, threads: int, smem: int) -> int | None:
    """How many clusters of `cluster` blocks of a kernel (compiled with __cluster_dims__) the
    GPU runs at once: fewer than SMs / cluster where a GPC's free SMs do not pair up.  None
    when the driver cannot say."""
    n = ctypes.c_int(0)
    fn = libcuda().cuOccupancyMaxActiveClusters
    fn.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]
    fn.restype = ctypes.c_int
    if fn(ctypes.byref(n), function, launch_config((cluster, 1, 1), (threads, 1, 1), smem)) != 0 or n.value <= 0:
        return None
    return n.value


def max_active_blocks(function: int, threads: int, smem: int) -> int | None:
    """How many blocks of `threads` threads and `smem` bytes of dynamic shared memory of a
    kernel one SM runs at once (its registers, shared memory and launch bounds decide).  None
    when the driver cannot say."""
    n = ctypes.c_int(0)
    fn = libcuda().cuOccupancyMaxActiveBlocksPerMultiprocessor
    fn.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int, ctypes.c_size_t]
    fn.restype = ctypes.c_int
    if fn(ctypes.byref(n), function, threads, smem) != 0 or n.value <= 0:
        return None
    return n.value
