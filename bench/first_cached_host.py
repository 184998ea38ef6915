"""The host side of a cached first call, on a machine with no GPU: `python3 bench/first_cached_host.py
[--runs N] [--profile PATH] [--cai] [--installed DIR] [--phases] [--exclusive] [--imports] [--instructions]
[--gpu]`.

What `bench/overheads.py --only first` times on the GPU after `import tlc` (the load of std.gemm
from the checked-module cache and matmul's first call, the kernel in the program cache), with
CuPy and the driver stood in for by a few functions that return an H200's answers: everything
tlc does up to the CuPy module load and the launch, and nothing of the GPU's own work (loading
the cubin, the launch, the result).  One process fills a fresh cache folder (the stand-in NVRTC
returns a few bytes); each timed run is a new process.  Prints the median and the best of the
runs, `python -X importtime -c "import tlc"`'s total, and the modules the call imported.  With
--profile, the last run's cProfile is written to PATH; with --phases, each step's CPU time
(`PHASES`) in other runs; with --imports, the CPU time again in processes that import the modules
the call imports before the clock (the difference is what those imports cost it: 6 modules,
~1.6 ms of ~5.4 on the loaded 2-core machine, 3 December 2026); with --instructions, the call's instructions as valgrind's callgrind
counts them (~1 minute): a figure that other processes on the machine do not move (std.gemm's
call, 2 December 2026: 24.99 M before the targets' and the codec's changes, 23.03 M after; 14%
of it SHA-256, which runs without the CPU's SHA instructions under valgrind, ~3.3 M instructions
for the ~100 KB a call hashes, a few times what it costs outside).  3 December 2026: 22.35 M ->
17.73 M (the checked entry without texts, the launch memo); with --cai (CuPy arrays) 7,251.9 M
-> 18.55 M: the dtype of a CuPy array was found by comparing it with every tlc dtype's, which
imported ml_dtypes (94e5df6).  3 December 2026, session 16: 18.87 M -> 17.91 M (the program key
takes the digests the checked-module cache computed); then, measured on installed snapshots of
the same files (`--installed`: tlc/ with its data folders and a RECORD), 15.58 M -> 13.02 M
(ctypes types the driver calls made, CRC-32 for the kernel cache's checksum, ir_codec's
references to instances met again, the launch memo in checked_cache's module); a checkout's
memo of its files' stamps as strings: 15.79 M -> 15.55 M in a checkout snapshot.  Session 17
(installed snapshots differing only in the file changed): 13.14 M -> 12.93 M (an installed
package's data folders found without importlib's search); --imports: the 6 modules the call
imports are ~1.6 ms of its ~3.7-5.4 ms CPU here.  What the stand-ins cannot show, the H200's
step timer did (batch q2, wall ms of an installed snapshot's cached call, 6.74 in all):
`from cupy.cuda.runtime import ...` importing CuPy's star-importing shim 0.35, CuPy binding
NVRTC for the key's version and archs 0.47, the module load 0.81, the three tensor maps 0.2;
and the second call's fast path decoding the IR and the C 16 ms (a1c27e2, ccb8d71, 5963d87).
Session 18: `import tlc` is the runtime, not the compiler (the parser, Lark, the type checker,
config.json's reader, the profiler and the IR's printer imported where used; the runtime modules a
cached call needs imported with tlc): installed snapshots of 879f35d and be19577, the call 12.68 M
-> 8.96 M instructions, import tlc after NumPy 493.7 M -> 288.7 M; the call imports one tlc module
(the GPU's target).  H200 batch q1 (a tree between the two): import tlc after torch and cupy 73-87
-> 35-39 ms in one run, the step timer's cached call (checkout) 4.42 ms (7.35 in session 17).
Session 19 (0d16279, 901b610, 3911130, 79c2df9, c305997: tlc's real folder resolved once, files
read by os.read, ir_codec's classes from sys.modules, NVRTC's facts and the tensor maps through a
bytearray rather than NumPy), the same tree with and without those files: installed snapshots
9.30 M -> 9.02 M instructions, CPU median 1.93 -> 1.77 ms (15 processes); checkout snapshots
11.74 M -> 11.06 M, CPU best 2.39 -> 2.20 ms; NVRTC's version and archs asked of a loaded
libnvrtc.so.13 (not stood in here) 144 -> 80 us.  What remains of the installed call's ~1.8 ms
CPU (--phases, 15 processes): the checked entry 0.43 (its 6 KB JSON head, the import's text and
digest), resolving std.gemm 0.13 (os.path.realpath's first use, ~50 us), the target's choice 0.25
(the entry-points memo 0.10, importing tlc.targets.sm90a 0.11), the program entry 0.14 and its
launch head's decode 0.21 (89 objects), the CompiledKernel 0.14, the launch 0.14, the launch
memo 0.10; a checkout adds 0.5-0.6 ms of stat()s of its 220 files and 22 folders (the floor of a
file-by-file identity: the Python around them is ~15% of it).  A new process's first SHA-256
costs ~55 us (OpenSSL's fetch of the algorithm) and its first json.loads ~19 us, both in the call.
Session 19, later (7f0c4ce: the GPU's target and NVRTC's -arch from OWN_TARGETS' facts, no target
module imported; 54af741: ir_codec decodes dumps_text's layout as the JSON parser meets each
object): installed snapshots 9.03 M -> 8.70 M -> 8.50 M instructions, CPU median 1.77 -> 1.68 ->
1.53 ms (15 processes each, the machine shared); checkout snapshots 11.10 M -> 10.60 M, best 2.26
-> 2.20 ms; the call imports no module now.  The steps' instructions (callgrind, each step called
through functools.reduce in a process of its own, installed, before 54af741): the checked entry
3.50 M of the call's 8.70 (its load 3.98), the RECORD's identity 1.06, the launch memo's lookup
0.84, the program entry 2.14 (its launch head 1.48 -> 1.19 with 54af741), the target's choice
0.48, the kernel cache's read 0.38, the CompiledKernel 0.54, the launch 0.45.  Under valgrind
SHA-256 runs without the CPU's SHA instructions (~33 instructions a byte), and a call hashes
~100 KB: gemm.tl's text (45 KB, the checked entry's key: ~1.5 M), the RECORD (30 KB, ~1 M),
stdlib/config.json (20 KB, the launch memo's check that its rules are as recorded: ~0.65 M), the
checked entry's head (6 KB), math.tl (1.7 KB): about a third of the count, ~50 us of the CPU
time.  Reading and hashing math.tl, which the brief had in mind for a cheaper stamp, is 0.12 M
(measured by leaving it out) and ~0.05 ms: its text is also what Module.sources hands out.
What remains (--phases, ms, 15 processes): the checked entry 0.39 (gemm.tl read 0.08 and hashed,
the key, the 6 KB head's JSON), the RECORD's identity 0.09, the launch head 0.19 (of which the
first lookups of its 8 classes ~0.05, its JSON ~0.06), the entry-points memo 0.11, the kernel
cache's read 0.12, the CompiledKernel 0.13, the launch 0.13, the launch memo 0.09.
Session 23: --exclusive gives each step's own wall time (`EXCLUSIVE`: the clocked steps it calls
taken out, so the steps and the rest add up to the call) and --gpu runs the same processes on
CuPy, PyTorch and the driver themselves, each result checked (bench/queue/cached_call.sh).  A
checkout on the 2-core machine, 4 December 2026: 1.82-1.87 ms median (load 1.07, call 0.75-0.80),
of which the checkout's identity 0.58 (the memo's stat() of 220 files and 22 folders: 0.27 ms
warm in one process, ~0.48 a new process's first time), the checked entry 0.19 (its head's
JSON, math.tl read), the launch head's decode 0.17, resolving std.gemm 0.11, the targets' memo
0.09 (twice), the launch memo 0.09, the texts' SHA-256 0.08 (four digests, the process's first
SHA-256 ~45 us of it), the program entry's CRC-32 and read 0.12, nothing else above 0.06; 0.02
outside every step.  A heap of 700k more objects before the clock (as PyTorch's import leaves)
took the call 1.9 -> 2.3 ms without one collection more (one gen-0 pass at most): the cache's
misses, not the collector.  An installed snapshot (`--installed`, the same files): 1.37-1.62 ms,
its RECORD's identity 0.09 where the checkout's is 0.58; the rest as above.  `import tlc` after
NumPy, 40-45 ms of a new process (outside this clock, as in bench/overheads.py): tlc.ir.nodes
~13 ms of it, the 32 frozen data classes' generated methods (each an exec), tlc.ir.warpspec 4.
Session 24 (--snapshot makes an installed snapshot where no wheel can be built, as on the
device; bench/cached_call_steps.py times CuPy's, NVRTC's and the driver's calls one by one):
the checkout memo's format 3, one os.read a file, config.json vouched for by its stamp: strace
of the stood-in call 339 -> 312 system calls for a checkout, 85 -> 57 installed, 9 -> 7 files
opened; CPU time median, old and new trees interleaved on the loaded 2-core machine, checkout
2.68 / 2.78 -> 2.44 / 2.49 ms, installed 1.86 / 1.80 -> 1.81 / 1.66.  On the H200 (gVisor: each
system call dearer) the step table moved by tenths (resolve_path 0.247 -> 0.156, read_source
0.176 -> 0.122, LaunchMemo.lookup 0.181 -> 0.142) but the call did not (checkout 3.99 -> 4.17
ms, one process; installed 4.39).  Tried and backed out: the checkout's stat()s on a thread
beside cuModuleLoadData (no overlap on the H200, the call 5.71 ms).
Session 25 (7b32dc6, c8d50e4: the module record, a load vouched for by its files' stamps with
the launch memo's copy; installed snapshots of the same tree before and after, interleaved on the
2-core machine): 7.50 M -> 5.56 M instructions, CPU median 1.80 / 1.63 -> 1.40 / 1.56 ms (9
processes each), the load 0.9 -> 0.45-0.5 ms; 57 -> 45 system calls, 7 -> 4 files opened.
On the H200 (round 1, 2 processes each, installed): 3.79 -> 4.31 ms median, best 3.72 -> 3.71
(load 1.07 -> 0.86 best): the spread of two processes is larger than the change.  Round 2
(bench/results/H_cached_table-h200-twentyfifth-r2.txt, installed, both commits): 2 processes
6.03-6.37 ms, 2 more with the step clocks 3.46; the steps that read and checked the texts, the
entry and the memo (read_source, text_digest, key, checked_cache.load, LaunchMemo.lookup,
program_key, resolve_path: 1.12 ms in session 24's table) now load_record 0.18, resolve_path
0.10, LaunchMemo.lookup 0.07; what is left is the driver (the module load 0.83, CuPy's first
runtime call 0.26, the launch 0.22) and the launch head (its decode 0.30, compile_grid 0.20).
bench/cached_call_steps.py's first GPU run (bench/results/H_cached_steps-h200-twentyfifth-r1.txt):
CuPy's first runtime call (~0.26 ms) moves to the module load where the driver is asked first,
so it does not go; cuModuleLoadData 0.57-0.72 ms a load; the first launch and its wait 0.58 ms
(0.14 the second); a thread started and joined 0.46 ms; the checkout's 256 stat()s 0.54-0.81 ms
by absolute path, 0.57-0.64 relative to their folders' descriptors (no gain).
"""
from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# An H200 as CuPy and the driver answer what a cached launch asks; installed before `import tlc`
# (a real process has imported CuPy before the clock too)
STAND_IN = r"""
import ctypes, sys, types

def _module(name, **attrs):
    m = types.ModuleType(name)
    m.__dict__.update(attrs)
    sys.modules[name] = m
    return m

class _Pointer:
    device = 0

class _Device:
    compute_capability = "90"
    def __init__(self, device=None):
        self.id = 0
    def __enter__(self):
        return self
    def __exit__(self, *exc):
        return False
    @property
    def attributes(self):  # CuPy asks the driver for every attribute
        return {"MultiProcessorCount": 132, "MaxSharedMemoryPerBlockOptin": 232448}
    def synchronize(self):
        pass

class _Function:
    ptr = 1
    launches = []
    def __call__(self, grid, block, args, smem=0, stream=None):
        _Function.launches.append((grid, block, len(args), smem))

class _Module:
    ptr = 1
    def load(self, binary):
        self.binary = binary
    def get_function(self, name):
        return _Function()

class _Stream:
    @staticmethod
    def from_external(handle):
        return _Stream()

class _DriverFunction:  # a ctypes function of libcuda: argtypes and restype are set, then it is called
    def __call__(self, *args):
        return 0

class _LibCuda:
    def __getattr__(self, name):
        fn = _DriverFunction()
        setattr(self, name, fn)
        return fn

class ndarray:
    pass

_runtime = _module("cupy.cuda.runtime", getDevice=lambda: 0, getDeviceCount=lambda: 1,
                   pointerGetAttributes=lambda ptr: _Pointer(), deviceGetAttribute=lambda attr, device: {16: 132, 97: 232448, 75: 9, 76: 0}[attr],
                   cudaDevAttrMultiProcessorCount=16, cudaDevAttrMaxSharedMemoryPerBlockOptin=97)
_nvrtc = _module("cupy.cuda.nvrtc", getVersion=lambda: (13, 0), getSupportedArchs=lambda: [75, 80, 86, 89, 90, 100])
_driver = _module("cupy.cuda.driver", funcSetAttribute=lambda *a: None, funcGetAttribute=lambda attr, fn: 1024,
                  moduleGetGlobal=lambda *a: 0, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES=8,
                  CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK=0, CU_FUNC_ATTRIBUTE_NUM_REGS=4)
_function = _module("cupy.cuda.function", Module=_Module)
_cuda = _module("cupy.cuda", runtime=_runtime, nvrtc=_nvrtc, driver=_driver, function=_function, Device=_Device,
                Stream=_Stream, get_current_stream=lambda: None)
_module("cupy", cuda=_cuda, ndarray=ndarray, __path__=[])
_cuda.__path__ = []

class _TorchDtype:
    def __str__(self):
        return "torch.float16"
    __repr__ = __str__  # as PyTorch's dtypes write themselves (the launch memo keys calls by it)

class Tensor:  # a PyTorch tensor on GPU 0, as far as a launch reads one
    dtype = _TorchDtype()
    def __init__(self, shape, ptr):
        self.shape, self.ptr = shape, ptr
    def get_device(self):
        return 0
    def is_contiguous(self):
        return True
    def data_ptr(self):
        return self.ptr

class Array:  # a device array known by __cuda_array_interface__ (as a CuPy array's dtype is read)
    def __init__(self, shape, typestr, ptr):
        self.__cuda_array_interface__ = {"shape": shape, "typestr": typestr, "data": (ptr, False),
                                         "strides": None, "version": 3}

STOOD_IN = True
def synchronize():  # nothing runs: the launch is recorded
    pass
def launched_right():
    return len(_Function.launches) == 1

if "--cai" in sys.argv:
    A, C = Array((256, 256), "<f2", 1 << 20), Array((256, 256), "<f2", 2 << 20)
else:
    _module("torch", Tensor=Tensor, float16=Tensor.dtype,
            _C=types.SimpleNamespace(_cuda_getCurrentRawStream=lambda device: 7))
    A, C = Tensor((256, 256), 1 << 20), Tensor((256, 256), 2 << 20)
"""

GPU = r"""
import sys
import torch, cupy
STOOD_IN = False
if "--cai" in sys.argv:
    A, C = cupy.ones((256, 256), cupy.float16), cupy.empty((256, 256), cupy.float16)
    synchronize = cupy.cuda.Device().synchronize
else:
    A = torch.ones(256, 256, dtype=torch.float16, device="cuda")
    C = torch.empty(256, 256, dtype=torch.float16, device="cuda")
    synchronize = torch.cuda.synchronize
synchronize()  # the CUDA context and the arrays exist before the clock, as in bench/overheads.py
def launched_right():  # 256 = the sum of 256 products 1 * 1, exact in f16
    return bool((C == 256).all())
"""

FILL = STAND_IN + r"""
import tlc
from tlc.runtime import compile as rc, driver_api, tensormap
driver_api.libcuda = tensormap.libcuda = lambda: _LibCuda()  # tensormap holds its own name
rc.warm_up_nvrtc = lambda arch: None
rc.nvrtc_compile = lambda source, arch, name: b"cubin of " + name.encode()
mod = tlc.load("std.gemm", target="cuda")
mod.matmul(A, A, C)
assert _Function.launches, "no launch"
"""

FILL_GPU = GPU + r"""
import tlc
mod = tlc.load("std.gemm", target="cuda")
mod.matmul(A, A, C)
synchronize()
assert launched_right(), "the first call's result is wrong"
"""

# the timed process after STAND_IN or GPU
TIMED_BODY = r"""
import functools, gc, importlib, json, os, time
import tlc
from tlc.runtime import driver_api, tensormap
if STOOD_IN:
    driver_api.libcuda = tensormap.libcuda = lambda: _LibCuda()  # tensormap holds its own name
phases, counts = {}, {}
if os.environ.get("TLC_BENCH_HOST_PHASES"):  # each step's CPU time, the steps it calls included
    import functools, importlib
    # TLC_BENCH_HOST_EXCLUSIVE: each step's own wall time, that of the clocked steps it calls
    # taken out (so that the steps and the rest add up to the call), and how often it ran
    exclusive, inner = bool(os.environ.get("TLC_BENCH_HOST_EXCLUSIVE")), []
    clock = time.perf_counter if exclusive else time.thread_time
    def clocked(owner, attr, label):
        fn = getattr(owner, attr)
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            inner.append(0.0)
            start = clock()
            try:
                return fn(*args, **kwargs)
            finally:
                spent = clock() - start
                nested = inner.pop()
                if inner:
                    inner[-1] += spent
                phases[label] = phases.get(label, 0.0) + (spent - (nested if exclusive else 0.0)) * 1e3
                counts[label] = counts.get(label, 0) + 1
        setattr(owner, attr, wrapper)
    for name in json.loads(os.environ["TLC_BENCH_HOST_PHASES"]):
        module, _, path = name.partition(":")
        owner = importlib.import_module(module)
        *outer, attr = path.split(".")
        for part in outer:
            owner = getattr(owner, part)
        clocked(owner, attr, name)
for name in json.loads(os.environ.get("TLC_BENCH_HOST_PREIMPORT", "[]")):  # --imports: theirs left out of the clock
    importlib.import_module(name)
profile = os.environ.get("TLC_BENCH_HOST_PROFILE")
if profile:
    import cProfile
    prof = cProfile.Profile()
    prof.enable()
before = set(sys.modules)
def call():
    global mod, c0, t0, t1, t2, c2
    c0, t0 = time.thread_time(), time.perf_counter()
    mod = tlc.load("std.gemm", target="cuda")
    t1 = time.perf_counter()
    mod.matmul(A, A, C)
    synchronize()  # the result is there (with --gpu; as bench/overheads.py's clock)
    t2, c2 = time.perf_counter(), time.thread_time()
# a full collection before the clock: where the collector's older generations fall due depends on
# every object the process made before (one that fell in the call cost it 1.3 M instructions when
# `import tlc` made fewer objects), so each version's count would move with the other's imports
gc.collect()
if os.environ.get("TLC_BENCH_HOST_INSTRUCTIONS"):  # called through a C function that callgrind counts within
    functools.reduce(lambda acc, _: call(), [0], None)
else:
    call()
if profile:
    prof.disable()
    prof.dump_stats(profile)
assert launched_right(), "the cached call launched wrongly"
compiled = [m for m in sys.modules if m.startswith(("tlc.codegen", "tlc.schedule", "tlc.parser.parser"))]
print(json.dumps({"load_ms": (t1 - t0) * 1e3, "call_ms": (t2 - t1) * 1e3, "cpu_ms": (c2 - c0) * 1e3,
                  "compiler_imported": compiled, "phases": phases, "counts": counts,
                  "imported": sorted(set(sys.modules) - before)}))
"""
TIMED = STAND_IN + TIMED_BODY


# the steps --phases clocks (module:function or module:Class.method), in the order a call takes them;
# the modules are imported before the clock (their import is then not in the figures)
PHASES = ("tlc.api:_cached_module", "tlc.runtime.checked_cache:load_record", "tlc.runtime.cache:package_hash", "tlc.runtime.cache:_package_bases",
          "tlc.runtime.cache:checkout_hash", "tlc.runtime.cache:installed_identity", "tlc.runtime.checked_cache:load",
          "tlc.runtime.checked_cache:Signatures.__getitem__", "tlc.runtime.ir_codec:loads_text",
          "tlc.kernel:Kernel.recorded_rules", "tlc.kernel:Kernel._launch_from_memo",
          "tlc.runtime.checked_cache:LaunchMemo.lookup", "tlc.runtime:cached_program_kernel",
          "tlc.runtime:compile_program_kernel", "tlc.runtime:target_arch",
          "tlc.targets:registered", "tlc.runtime.compile:nvrtc_version", "tlc.runtime.cache:KernelCache.load",
          "tlc.runtime:read_program_entry", "tlc.targets:for_capability", "tlc.runtime.launch:compile_grid",
          "tlc.runtime.launch:CompiledKernel.__init__", "tlc.runtime.launch:CompiledKernel.launch")

# the steps --exclusive clocks: PHASES and the smaller steps within them, each timed without the
# others it calls, so that they and "the rest" add up to the call (with --gpu: the driver's
# module load is CompiledKernel._load's, the tensor maps' encoding tensormap.encode's, the launch
# and the wait for its result the rest's)
EXCLUSIVE = PHASES + (
    "tlc.driver:resolve_path", "tlc.driver:read_source", "tlc.runtime.cache:text_digest", "tlc.runtime.checked_cache:key",
    "tlc.api:Module.__init__", "tlc.runtime.compile:cuda_unavailable_reason", "tlc.runtime.checked_cache:LaunchMemo.__init__",
    "tlc.runtime:_program_entry", "tlc.runtime.compile:device_capability", "tlc.runtime.compile:nvrtc_supported_archs",
    "tlc.runtime.compile:nvrtc_arch", "tlc.runtime.compile:nvrtc_toolchain", "tlc.runtime.cache:program_key",
    "tlc.runtime.cache:unpack", "tlc.runtime.launch:CompiledKernel._load", "tlc.runtime.launch:CompiledKernel._persistent_blocks",
    "tlc.runtime.launch:CompiledKernel.kernel_args", "tlc.runtime.tensormap:encode")


def run(code: str, env: dict, cai: bool = False, cwd: Path = ROOT) -> str:
    # in the repository's folder, as bench/overheads.py runs: `python -c` puts the working folder
    # on sys.path, and tlc.targets' memo of the installed plugins is kept by its change time (a
    # folder where files come and go, as /tmp, costs each process the search of every package)
    done = subprocess.run([sys.executable, "-c", code] + (["--cai"] if cai else []), env=env, capture_output=True,
                          text=True, timeout=300, cwd=cwd)
    if done.returncode != 0:
        sys.exit(f"bench/first_cached_host.py: a child failed:\n{done.stderr[-3000:]}")
    return done.stdout


def instructions(env: dict, cai: bool, cwd: Path) -> int:
    """The instructions the cached call runs in user space (valgrind's callgrind, counting only
    within the C function `functools.reduce` that the child calls the load and the call through)."""
    return callgrind_count(["-c", TIMED] + (["--cai"] if cai else []), {**env, "TLC_BENCH_HOST_INSTRUCTIONS": "1"},
                           cwd, "bench/first_cached_host.py")


def callgrind_count(argv: list, env: dict, cwd: Path, who: str, timeout: float = 900) -> int:
    """The user-space instructions of `python argv` within `functools.reduce` (callgrind), for
    the script `who` (named in its errors)."""
    import re
    import shutil

    if shutil.which("valgrind") is None:
        sys.exit(f"{who}: --instructions needs valgrind")
    done = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null",
                           "--toggle-collect=functools_reduce", sys.executable, *argv],
                          env=env, capture_output=True, text=True, timeout=timeout, cwd=cwd)
    found = re.search(r"Collected : (\d+)", done.stderr)
    if done.returncode != 0 or found is None:
        sys.exit(f"{who}: callgrind failed:\n{done.stderr[-3000:]}")
    return int(found.group(1))


def import_time(env: dict, cwd: Path) -> float:
    """`import tlc`'s cumulative microseconds by -X importtime, in ms."""
    done = subprocess.run([sys.executable, "-X", "importtime", "-c", "import tlc"], env=env, capture_output=True,
                          text=True, timeout=120, cwd=cwd)
    for line in done.stderr.splitlines():
        parts = [p.strip() for p in line.removeprefix("import time:").split("|")]
        if len(parts) == 3 and parts[2] == "tlc":
            return int(parts[1]) / 1e3
    return float("nan")


def exclusive_steps(timed: str, env: dict, args, package: Path) -> dict:
    """Each step of EXCLUSIVE: its own wall time (median ms over `args.runs` more processes) and
    how often the call ran it; "the rest" is the call's time outside every clocked step."""
    clocked = {**env, "TLC_BENCH_HOST_PHASES": json.dumps(EXCLUSIVE), "TLC_BENCH_HOST_EXCLUSIVE": "1"}
    clocked.pop("TLC_BENCH_HOST_PROFILE", None)
    runs = [json.loads(run(timed, clocked, args.cai, cwd=package).strip().splitlines()[-1]) for _ in range(args.runs)]
    steps = {name: (statistics.median(r["phases"].get(name, 0.0) for r in runs), max(r["counts"].get(name, 0) for r in runs))
             for name in EXCLUSIVE}
    rest = statistics.median(r["load_ms"] + r["call_ms"] - sum(r["phases"].values()) for r in runs)
    total = statistics.median(r["load_ms"] + r["call_ms"] for r in runs)
    print(f"each step's own wall time, median ms of {len(runs)} more processes (the clocked steps it calls taken out; "
          f"load + call {total:.2f} there, the clocks included), largest first:")
    for name, (ms, count) in sorted(steps.items(), key=lambda kv: -kv[1][0]):
        if count:
            print(f"  {name:60} {ms:7.3f}  x{count}")
    print(f"  {'the rest (outside the clocked steps; --gpu: launch, wait)':60} {rest:7.3f}")
    print(f"  not run by this call: {', '.join(n for n, (_, c) in steps.items() if not c) or 'none'}")
    return {"steps": steps, "rest_ms": rest, "total_ms": total}


def installed_snapshot(folder: Path) -> Path:
    """`folder` made into what `pip install --no-deps --target folder tlc-*.whl` makes of this
    checkout, as far as a cached call reads it: tlc/ with grammar/, templates/ and stdlib/
    inside (pyproject.toml's package-dir), no pyproject.toml beside it, and a
    tlc-VERSION.dist-info/RECORD with each file's SHA-256 (the identity `cache.installed_identity`
    reads).  For machines where no wheel can be built (the device: no setuptools 77)."""
    import base64
    import hashlib
    import shutil

    sys.path.insert(0, str(ROOT))
    from tlc import __version__

    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    shutil.copytree(ROOT / "tlc", folder / "tlc", ignore=ignore)
    for name in ("grammar", "templates", "stdlib"):
        shutil.copytree(ROOT / name, folder / "tlc" / name, ignore=ignore)
    lines = []
    for path in sorted(p for p in (folder / "tlc").rglob("*") if p.is_file()):
        data = path.read_bytes()
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        lines.append(f"{path.relative_to(folder).as_posix()},sha256={digest},{len(data)}")
    info = folder / f"tlc-{__version__}.dist-info"
    info.mkdir()
    lines.sort(key=lambda line: not line.startswith("tlc/__init__.py,"))  # as a wheel's RECORD begins
    (info / "RECORD").write_text("\n".join(lines + [f"{info.name}/RECORD,,"]) + "\n")
    return folder


def main(argv=None) -> dict:
    import argparse

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=9)
    ap.add_argument("--profile", help="write the last run's cProfile here")
    ap.add_argument("--cai", action="store_true", help="arrays read as CuPy's are (by their NumPy dtype), "
                    "not PyTorch tensors (as bench/overheads.py passes)")
    ap.add_argument("--installed", metavar="DIR", help="the tlc installed in DIR from a wheel (`pip install "
                    "--no-deps --target DIR tlc-*.whl`), not this checkout's: its identity is its RECORD")
    ap.add_argument("--snapshot", action="store_true", help="an installed snapshot of this checkout made first "
                    "(`installed_snapshot`: tlc/ with its data folders inside and a RECORD, as a wheel installs it; "
                    "where no wheel can be built, as on the device) and timed rather than the checkout")
    ap.add_argument("--phases", action="store_true", help="then each step's CPU time, in as many more processes")
    ap.add_argument("--imports", action="store_true", help="then the call's CPU time in as many more processes "
                    "that import the modules it imports before the clock: what those imports cost it")
    ap.add_argument("--exclusive", action="store_true", help="then each step's own wall time (EXCLUSIVE: the "
                    "steps it calls taken out, so that the steps and the rest add up to the call), in as many more processes")
    ap.add_argument("--gpu", action="store_true", help="on the GPU: CuPy, PyTorch and the driver themselves, the "
                    "first process compiling with NVRTC, each call's result checked and waited for in the clock "
                    "(bench/queue/cached_call.sh)")
    ap.add_argument("--instructions", action="store_true", help="then the call's instructions, counted by valgrind's "
                    "callgrind in one more process: the same on a busy machine as on a quiet one (not the time the "
                    "system calls take: the stat()s of the checkout's identity, the files read)")
    args = ap.parse_args(argv)
    if args.gpu and args.instructions:
        ap.error("--instructions counts the stood-in call; the GPU's driver under valgrind is not that call")
    timed, fill = (GPU + TIMED_BODY, FILL_GPU) if args.gpu else (TIMED, FILL)
    made = None
    if args.snapshot:
        args.installed = installed_snapshot(Path(tempfile.mkdtemp(prefix="tlc-bench-installed-")))
        made = time.time()
    package = Path(args.installed).resolve() if args.installed else ROOT
    env = {**os.environ, "TLC_CACHE_DIR": tempfile.mkdtemp(prefix="tlc-bench-host-"),
           "PYTHONPATH": os.pathsep.join([str(package), os.environ.get("PYTHONPATH", "")])}
    # tlc's modules compiled to bytecode first, as bench/overheads.py does (as an installed
    # package's are): with PYTHONDONTWRITEBYTECODE a module changed since its .pyc compiles in
    # every process
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(package / "tlc")], env=env, capture_output=True,
                   timeout=300)
    if made is not None:  # the copied files settled: the fill's module record vouches only for
        # files that last changed two seconds before (checked_cache.store_record); else the first
        # timed process wrote it, and which processes took which path was a race (session 26:
        # the same tree counted 7.0, 8.0 or 11.4 M instructions)
        time.sleep(max(0.0, made + 2.1 - time.time()))
    run(fill, env, cwd=package)  # its call passes PyTorch tensors, whatever --cai says
    runs = []
    for i in range(args.runs):
        if args.profile and i == args.runs - 1:
            env["TLC_BENCH_HOST_PROFILE"] = args.profile
        runs.append(json.loads(run(timed, env, args.cai, cwd=package).strip().splitlines()[-1]))
    total = [r["load_ms"] + r["call_ms"] for r in runs]
    best = min(range(len(runs)), key=lambda i: total[i])
    imports = [import_time(env, package) for _ in range(5)]
    result = {"runs": runs, "median_ms": statistics.median(total), "import_tlc_ms": min(imports)}
    what = "on the GPU, the result waited for" if args.gpu else "host side (CuPy stood in for)"
    print(f"cached first call, {what}, {len(runs)} new processes: "
          f"load + call median {statistics.median(total):.2f} ms, best {total[best]:.2f} "
          f"(load {runs[best]['load_ms']:.2f}, call {runs[best]['call_ms']:.2f}); "
          f"median load {statistics.median(r['load_ms'] for r in runs):.2f}, "
          f"call {statistics.median(r['call_ms'] for r in runs):.2f}")
    print(f"  the same in this thread's CPU time (steadier where other processes share the cores): median "
          f"{statistics.median(r['cpu_ms'] for r in runs):.2f} ms, best {min(r['cpu_ms'] for r in runs):.2f}")
    print(f"import tlc (-X importtime, best of 5): {min(imports):.1f} ms")
    if args.phases:  # in runs of their own: the clocks cost a little and import the steps' modules first
        clocked = {**env, "TLC_BENCH_HOST_PHASES": json.dumps(PHASES)}
        clocked.pop("TLC_BENCH_HOST_PROFILE", None)
        phased = [json.loads(run(timed, clocked, args.cai, cwd=package).strip().splitlines()[-1])
                  for _ in range(args.runs)]
        print(f"each step's CPU time, median ms of {len(phased)} more processes (the steps it calls included; "
              f"their modules imported before the clock):")
        for name in PHASES:
            times = [r["phases"].get(name, 0.0) for r in phased]
            print(f"  {name:55} {statistics.median(times):7.3f}")
    if args.exclusive:
        result["exclusive"] = exclusive_steps(timed, env, args, package)
    if args.imports:  # the modules the call imported, imported before the clock
        early = {**env, "TLC_BENCH_HOST_PREIMPORT": json.dumps(runs[-1]["imported"])}
        early.pop("TLC_BENCH_HOST_PROFILE", None)
        without = [json.loads(run(timed, early, args.cai, cwd=package).strip().splitlines()[-1]) for _ in range(args.runs)]
        cpu, rest = statistics.median(r["cpu_ms"] for r in runs), statistics.median(r["cpu_ms"] for r in without)
        result["imports_cpu_ms"] = cpu - rest
        print(f"the imports the call makes ({len(runs[-1]['imported'])} modules): {cpu - rest:.2f} ms of its median CPU time "
              f"{cpu:.2f} (the call with them imported before the clock: median {rest:.2f}, {len(without)} more processes)")
    if args.instructions:
        result["instructions"] = instructions(env, args.cai, package)
        print(f"the call's instructions (callgrind, user space): {result['instructions'] / 1e6:.2f} M")
    imported = runs[-1]["imported"]
    print(f"modules the call imported ({len(imported)}; each costs a new process 0.05-0.3 ms): {', '.join(imported)}")
    if runs[-1]["compiler_imported"]:
        print(f"the call imported the compiler: {', '.join(runs[-1]['compiler_imported'])}")
    return result


if __name__ == "__main__":
    main()
