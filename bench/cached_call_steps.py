"""Each GPU-facing step of a cached first call, timed alone in a new process on the GPU:
`python3 bench/cached_call_steps.py` (issue #15).

bench/first_cached_host.py --exclusive gives each tlc step's own time inside the call; on the
H200 the steps that ask CuPy, NVRTC or the driver took far more than their stand-ins on the CPU
(cuda_unavailable_reason 0.28 ms for three calls of a memoized function, nvrtc_supported_archs
0.15, tensormap.encode 0.11, CompiledKernel.launch 0.25), and a wrapped step's clock costs the
H200's host ~10-20 us.  Here each CuPy / NVRTC / driver call that the cached call makes is timed
by itself, its first call and a second one, in two orders in two new processes (CuPy's runtime
first, as tlc asks today, or the driver through ctypes first): what a first call of CuPy's
runtime costs (its lazy initialization?) and what asking the driver instead would.

One process fills a fresh cache (std.gemm's matmul compiled by NVRTC, its result checked);
each timing process imports torch, cupy and tlc, makes its tensors and waits for them (the
clock of bench/overheads.py starts there), then times the steps; the last step launches the
loaded kernel and checks its product (C == 256), and a wrong one fails the run.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time  # noqa: F401 - the child's

FILL = r"""
import torch, cupy, tlc
A = torch.ones(256, 256, dtype=torch.float16, device="cuda")
C = torch.empty(256, 256, dtype=torch.float16, device="cuda")
tlc.load("std.gemm", target="cuda").matmul(A, A, C)
torch.cuda.synchronize()
assert bool((C == 256).all()), "the fill's product is wrong"
"""

STEPS = r"""
import ctypes, glob, os, sys, time
import torch, cupy, tlc
A = torch.ones(256, 256, dtype=torch.float16, device="cuda")
C = torch.zeros(256, 256, dtype=torch.float16, device="cuda")
torch.cuda.synchronize()
from cupy.cuda import runtime, driver, function
from tlc import targets
from tlc.runtime import cache, compile as rc, driver_api, ir_codec, tensormap
import tlc.runtime as rt
from tlc.runtime.args import LaunchFacts
from tlc.runtime import launch as launch_mod
from tlc.runtime.launch import GeneratedLaunch

# the program entry of matmul, read before the clock (the cached call reads it too: timed on the CPU)
[entry] = [p for p in glob.glob(os.path.join(os.environ["TLC_CACHE_DIR"], "p*.bin"))]
blob = cache.unpack(open(entry, "rb").read())
head_end = blob.find(b"\n", len(rt.PROGRAM_MAGIC))
facts, fields, args, arch, sizes = ir_codec.loads_text(blob[len(rt.PROGRAM_MAGIC):head_end].decode())
binary = bytes(memoryview(blob)[head_end + 1:][:sizes[0]])
name = fields["name"] if "name" in fields else None
state = {}

def cu_count():
    n = ctypes.c_int(0)
    assert driver_api.libcuda().cuDeviceGetCount(ctypes.byref(n)) == 0
    return n.value

def cu_ctx_device():
    d = ctypes.c_int(-1)
    assert driver_api.libcuda().cuCtxGetDevice(ctypes.byref(d)) == 0
    return d.value

def module_load():
    m = function.Module()
    m.load(binary)
    state["module"] = m

def device_enter():
    with cupy.cuda.Device(0):
        pass

def get_function():
    state["fn"] = state["module"].get_function(name)

def read_entry():  # the CompiledKernel of the entry (a persistent kernel: its occupancy, so its own module load)
    state["compiled"] = rt.read_program_entry(blob)

def launch():
    state["compiled"].launch({"A": A, "B": A, "C": C})
    torch.cuda.synchronize()

STEP = {
    "cupy runtime.getDeviceCount": runtime.getDeviceCount,
    "cupy runtime.getDevice": runtime.getDevice,
    "cupy runtime.deviceGetAttribute(75)": lambda: runtime.deviceGetAttribute(75, 0),
    "driver_api.libcuda() (CDLL)": driver_api.libcuda,
    "ctypes cuDeviceGetCount": cu_count,
    "ctypes cuCtxGetDevice": cu_ctx_device,
    "compile._loaded_nvrtc (RTLD_NOLOAD)": rc._loaded_nvrtc,
    "compile.nvrtc_supported_archs": rc.nvrtc_supported_archs,
    "compile.nvrtc_version": rc.nvrtc_version,
    "targets.registered": targets.registered,
    "torch._C._cuda_getCurrentRawStream": lambda: torch._C._cuda_getCurrentRawStream(0),
    "cupy stream of torch's (launch._foreign_stream)": lambda: launch_mod._foreign_stream(cupy, torch._C._cuda_getCurrentRawStream(0), 0),
    "cupy Device(0) enter/exit": device_enter,
    "cupy Module.load (cuModuleLoadData)": module_load,
    "cupy Module.get_function": get_function,
    "cupy driver.funcGetAttribute": lambda: driver.funcGetAttribute(driver.CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, state["fn"].ptr),
    "tensormap._driver_encode (ctypes binding)": tensormap._driver_encode,
    "runtime.read_program_entry (CompiledKernel)": read_entry,
    "CompiledKernel.launch + synchronize": launch,
}
ORDERS = {
    "cupy": list(STEP),
    "driver": ["driver_api.libcuda() (CDLL)", "ctypes cuDeviceGetCount", "ctypes cuCtxGetDevice",
               "cupy Module.load (cuModuleLoadData)", "cupy Module.get_function", "cupy driver.funcGetAttribute",
               "cupy runtime.getDeviceCount", "cupy runtime.getDevice", "cupy runtime.deviceGetAttribute(75)",
               "compile._loaded_nvrtc (RTLD_NOLOAD)", "compile.nvrtc_supported_archs", "compile.nvrtc_version",
               "targets.registered", "torch._C._cuda_getCurrentRawStream", "cupy stream of torch's (launch._foreign_stream)",
               "cupy Device(0) enter/exit", "tensormap._driver_encode (ctypes binding)",
               "runtime.read_program_entry (CompiledKernel)", "CompiledKernel.launch + synchronize"],
}
# the checkout's identity: its memo's ~250 stat()s (paths absolute, as cache.checkout_hash makes
# them), relative to each folder's descriptor, and on a thread while the main thread loads a
# module (cuModuleLoadData without the GIL): whether they can hide behind the driver's load
import threading
from array import array
from tlc.runtime.cache import _package_bases, listed_files
folders, files = listed_files(_package_bases())
paths = [p for p, _ in folders] + [p for _, p in files]

def stats_absolute():
    return list(map(os.stat, paths))

def stats_relative():
    out = []
    for folder, _ in folders:
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
        try:
            out.append(os.stat(fd))
            out += [os.stat(name, dir_fd=fd) for name in names[folder]]
        finally:
            os.close(fd)
    return out

names = {f: [] for f, _ in folders}
for _, p in files:
    names[os.path.dirname(p)].append(os.path.basename(p))

def load_alone():
    m = function.Module()
    m.load(binary)

def load_beside_stats():
    t = threading.Thread(target=stats_absolute)
    t.start()
    load_alone()
    t.join()

def thread_alone():
    t = threading.Thread(target=lambda: None)
    t.start()
    t.join()

STEP.update({
    f"{len(paths)} stat()s, absolute paths": stats_absolute,
    f"{len(paths)} stat()s, relative to {len(folders)} folders' fds": stats_relative,
    "a thread started and joined": thread_alone,
    "a module load (again)": load_alone,
    f"a module load with the {len(paths)} stat()s on a thread": load_beside_stats,
})
EXTRA = [f"{len(paths)} stat()s, absolute paths", f"{len(paths)} stat()s, relative to {len(folders)} folders' fds",
         "a thread started and joined", "a module load (again)", f"a module load with the {len(paths)} stat()s on a thread",
         f"{len(paths)} stat()s, absolute paths"]
out = []
for label in ORDERS[sys.argv[1]] + EXTRA:
    times = []
    for _ in range(2):
        t = time.perf_counter()
        STEP[label]()
        times.append((time.perf_counter() - t) * 1e6)
    out.append((label, times))
assert bool((C == 256).all()), "the launch's product is wrong"
import json
print(json.dumps(out))
"""


def main() -> None:
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = {**os.environ, "TLC_CACHE_DIR": tempfile.mkdtemp(prefix="tlc-steps-"),
           "PYTHONPATH": os.pathsep.join([root, os.environ.get("PYTHONPATH", "")])}
    subprocess.run([sys.executable, "-m", "compileall", "-q", os.path.join(root, "tlc")], capture_output=True)
    done = subprocess.run([sys.executable, "-c", FILL], env=env, cwd=root, capture_output=True, text=True, timeout=120)
    if done.returncode:
        sys.exit(f"the fill failed:\n{done.stderr[-3000:]}")
    for order in ("cupy", "driver"):
        done = subprocess.run([sys.executable, "-c", STEPS, order], env=env, cwd=root, capture_output=True, text=True,
                              timeout=120)
        if done.returncode:
            sys.exit(f"the {order}-first process failed:\n{done.stderr[-3000:]}")
        print(f"{order} first: each step's first call and second call, us (a new process after torch, cupy, tlc "
              f"and its tensors):")
        for label, (first, second) in json.loads(done.stdout.strip().splitlines()[-1]):
            print(f"  {label:48} {first:9.1f} {second:9.1f}")


if __name__ == "__main__":
    main()
