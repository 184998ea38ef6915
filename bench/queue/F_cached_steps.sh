# limit: 30
# Issue #15, session 24 round 2 (helper F): what each CuPy / NVRTC / driver call of a cached first
# call costs on the H200, timed alone (bench/cached_call_steps.py).  This morning's step table
# gave steps that are nothing on the CPU's stand-ins far more on the H200: cuda_unavailable_reason
# 0.282 ms for three calls of an lru_cached function (its first: CuPy's first runtime call,
# getDeviceCount: CuPy's lazy init of the runtime?), nvrtc_supported_archs 0.154 (a dlopen with
# RTLD_NOLOAD and two ctypes calls), tensormap.encode 0.114 for three maps, CompiledKernel.launch
# 0.251 (CPU 0.06).  Two new processes (after torch, cupy, tlc and the tensors, as the bench's
# clock): CuPy's runtime asked first, as tlc does today, or the driver through ctypes first
# (cuDeviceGetCount / cuCtxGetDevice, cuModuleLoadData) and CuPy's runtime after: each step's
# first and second call in us.  Whether asking the driver rather than CuPy's runtime would save
# the first call's cost, or only move it.  One fill process (NVRTC) first; the last step
# launches the kernel read from the program entry and checks its product (C == 256).  Then the
# checkout identity's ~250 stat()s (0.933 ms of this morning's call): by absolute path, relative
# to each folder's descriptor (a shorter path walk, if the host's file system charges by the
# part), and on a thread beside a second cuModuleLoadData (which CuPy calls without the GIL):
# whether the stat()s can hide behind the driver's module load.
timeout 28 python3 bench/cached_call_steps.py 2>&1 | tail -45
