"""Compiler and runtime costs on the GPU, measured by bench/gemm.py in its process, or alone:
`python3 bench/overheads.py [--only launch|compile|first]`.
- the transpile time of examples/gemm.tl (parse -> CUDA C; goal < 20 ms), the cold compile
  (transpile + NVRTC; goal < 0.8 s), the cache-hit load (goal < 5 ms);
- the per-launch host overhead of a tiny kernel with 3 arrays and 3 scalars through the tlc
  API against a bare CuPy RawKernel launch with the same arguments (goal: within 1 us), and of
  one with 3 arrays and 1 scalar (bench/tiny.tl's tiny_axpy) called with PyTorch tensors
  (goal: within 1 us), with CuPy arrays (within 0.5 us) and through a launcher
  (`kernel.launcher(...)`), each against a bare RawKernel of the same cubin, each launch's
  result checked first;
- time to first result, each in a new process: std.gemm's matmul called once with an empty
  cache (parse, check, schedule, generate, NVRTC, load, launch; goal < 0.5 s), and called again
  in another new process with the kernel in the disk cache (goal < 2 ms).  The clock starts
  after `import tlc, torch, cupy` and after the CUDA context and the arrays exist (both are
  reported beside it): every CUDA program pays those, with tlc or without it.  tlc's modules
  (and lark's and jinja2's) are compiled to bytecode first, as an installed package's are.
  NVRTC 13 keeps its own cache of compiled programs across processes, in the driver's compute
  cache (libnvrtc dlopens libcuda and stores PTX and cubins there: `--enable-cache-trace` logs
  it; CUDA_CACHE_DISABLE=1 or NVRTC's `--no-cache` turn it off): a kernel another process
  compiled on the machine before comes back in ~50 ms.  The cold process therefore runs with
  CUDA_CACHE_PATH a new empty folder, as on a machine that never compiled the kernel (what it
  writes there is reported: that is where NVRTC's cache went); TLC_BENCH_NVRTC_CACHE=machine
  keeps the machine's cache.  NVRTC's share of the call is reported (the wait for the warm-up
  thread, `runtime.compile.warm_up_nvrtc`, and the kernel's compile).  H200, session 17 batch
  q2, two runs: 1002 and 1457 ms (load 289 / 397, NVRTC 650 / 962, the rest 63 / 98), where
  session 17's first batch, an NVRTC cache hit, had measured 387.  What the cold call is made of
  (session 18, this repo's 2-core CPU machine, CPU ms, NVRTC stood in): tlc.load 295-340 = parse
  of gemm.tl (44 KB, 10.2k tokens) ~100 + the grammar's tables ~20 + the type check of all 40
  functions ~63 + the checked-module cache's store of 33 signatures ~27 + the front end's imports;
  the call 64-150 = schedule ~22 + generate ~38 + the program entry ~5 + the back end's imports
  (Lark, the scheduler, the code generator, Jinja2: ~46% of the cold Python under callgrind).  So
  NVRTC alone (front end 85 + NVVM 496 + ptxas 466 ms for matmul on the H200 host) is past the
  0.5 s goal; what Python does that the call does not need (the store, which could overlap NVRTC,
  and checking the 39 other functions, which tlc.load promises) is under 100 ms.  Under 0.5 s
  needs binaries built ahead of the first call (std's default configurations) or a much smaller
  kernel for NVVM and ptxas, not a faster front end.  bench/first_cold_steps.py gives the cold
  call step by step (imports, parse, check, stores, NVRTC's wait and compile, ...; --gpu on the
  device); session 26 (CPU, stood in): ~220-255 ms of Python, the caches' stores (~25 ms) among
  it (session 28 moved them back onto the calling thread: beside NVRTC's compile they timed slower).
- `--kernels matmul,rms_norm,softmax,flash_fwd`: each of those std kernels' first call in a
  new process with empty tlc and NVRTC caches, its result checked against PyTorch.
  TLC_BENCH_FIRST_PROFILE=PATH writes the cProfile of a cold and a cached call, in two more
  processes (the figures are those of processes without the profiler), to PATH-cold and PATH-cached.
"""
from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

import tlc
from tlc.timing import Checked, verify

ROOT = Path(__file__).resolve().parents[1]
GEMM = str(ROOT / "examples" / "gemm.tl")


def measure(results: dict) -> None:
    """Every figure into `results` (bench/gemm.py's call); the cold compiles use a fresh cache,
    restored after."""
    compile_costs(results)
    launch_overhead(results)
    launch_paths(results)
    first_result(results)


def compile_costs(results: dict) -> None:
    """`transpile_and_compile`, whose fresh cache is undone after."""
    saved = os.environ.get("TLC_CACHE_DIR")
    try:
        transpile_and_compile(results)
    finally:
        if saved is None:
            os.environ.pop("TLC_CACHE_DIR", None)
        else:
            os.environ["TLC_CACHE_DIR"] = saved


def report(results: dict) -> None:
    report_compile(results)
    report_launch(results)
    report_new(results)


def report_compile(results: dict) -> None:
    print(f"transpile gemm.tl (parse -> CUDA C): {results['transpile_ms']:.1f} ms (goal < 20)")
    print(f"cold compile (transpile + NVRTC): {results['cold_compile_ms']:.0f} ms (goal < 800); "
          f"the default (wgmma) kernel: {results['cold_compile_default_ms']:.0f} ms more")
    print(f"cache-hit load: {results['cache_hit_load_ms']:.1f} ms (goal < 5): tlc.load (the checked-module cache) "
          f"{results['load_check_ms']:.1f} ms, the compiled kernel from the cache {results['cache_hit_kernel_ms']:.1f} ms")


def report_launch(results: dict) -> None:
    if "launch_wrong" in results:
        print(f"launch: not timed, a launch computed the wrong result: {results['launch_wrong']}")
        return
    print(f"launch (tiny: 3 arrays, 3 scalars, CuPy): tlc {results['launch_us_tlc']:.2f} us, RawKernel "
          f"{results['launch_us_rawkernel']:.2f} us, overhead {results['launch_overhead_us']:+.2f} us (goal within 1)")


def median_ms(fn, repeats=20) -> float:
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t) * 1e3)
    return statistics.median(times)


def transpile_and_compile(results: dict) -> None:
    from tlc.codegen import generate
    from tlc.driver import check_file
    from tlc.schedule import schedule

    def transpile():
        r = check_file(GEMM)
        generate(schedule(r.program, "matmul", {}), "sm_90a", sources=r.sources)

    transpile()
    results["transpile_ms"] = median_ms(transpile)
    cache = tempfile.mkdtemp(prefix="tlc-bench-cache-")
    os.environ["TLC_CACHE_DIR"] = cache
    t = time.perf_counter()
    mod = tlc.load(GEMM, target="cuda")
    mod.matmul.compiled({"BM": 64, "stages": 2})
    results["cold_compile_ms"] = (time.perf_counter() - t) * 1e3
    t = time.perf_counter()
    mod.matmul.compiled({})
    results["cold_compile_default_ms"] = (time.perf_counter() - t) * 1e3

    def hit():
        m = tlc.load(GEMM, target="cuda")
        m.matmul.compiled({"BM": 64, "stages": 2})

    results["cache_hit_load_ms"] = median_ms(hit, 10)
    # The same without parsing and checking the file again: the kernel cache's own part.
    program = tlc.load(GEMM, target="cuda").program
    results["cache_hit_kernel_ms"] = median_ms(
        lambda: tlc.api.Module(program, "cuda").matmul.compiled({"BM": 64, "stages": 2}), 10)
    results["load_check_ms"] = median_ms(lambda: tlc.load(GEMM, target="cuda"), 10)


def launch_overhead(results: dict) -> None:
    import cupy as cp

    mod = tlc.load(str(ROOT / "bench" / "tiny.tl"), target="cuda")
    n = 1024
    x, y, z = (cp.ones(n, cp.float32) for _ in range(3))
    mod.tiny(x, y, z, 1.0, 2.0, 3)
    src = mod.tiny.cuda_source(arch="sm_80")
    raw = cp.RawKernel(src, "tiny", options=("--std=c++17",))
    args = (x, y, z, np.float32(1.0), np.float32(2.0), np.int32(3), np.int32(n))
    # both launches must compute z = x + 2y + 3 (= 6): a launch whose arguments do not match
    # the kernel's parameters would time something else
    for name, launch in (("tlc", lambda: mod.tiny(x, y, z, 1.0, 2.0, 3)), ("RawKernel", lambda: raw((1,), (32,), args))):
        verdict = verify(Checked(launch, cp.full(32, 6.0, cp.float32), 0.0, 0.0, out=z[:32]))
        if not verdict.ok:
            results["launch_wrong"] = f"{name}: {verdict.why}"
            return
    reps = 10000

    def loop_tlc():
        for _ in range(reps):
            mod.tiny(x, y, z, 1.0, 2.0, 3)
        cp.cuda.Device().synchronize()

    def loop_raw():
        for _ in range(reps):
            raw((1,), (32,), (x, y, z, np.float32(1.0), np.float32(2.0), np.int32(3), np.int32(n)))
        cp.cuda.Device().synchronize()

    tl, rw = [], []
    for _ in range(5):
        for fn, sink in ((loop_tlc, tl), (loop_raw, rw)):
            t = time.perf_counter()
            fn()
            sink.append((time.perf_counter() - t) / reps * 1e6)
    results["launch_us_tlc"] = min(tl)
    results["launch_us_rawkernel"] = min(rw)
    results["launch_overhead_us"] = min(tl) - min(rw)


def launch_paths(results: dict) -> None:
    """tiny_axpy (3 arrays, 1 scalar) launched by tlc with PyTorch tensors, with CuPy arrays and
    through a launcher, each against a bare RawKernel of the same cubin with the same arrays
    (PyTorch's: their pointers, on PyTorch's current stream made a CuPy stream once, as a caller
    of RawKernel would)."""
    import cupy as cp
    import torch

    mod = tlc.load(str(ROOT / "bench" / "tiny.tl"), target="cuda")
    n = 1024
    cx, cy, cz = cp.ones(n, cp.float32), cp.ones(n, cp.float32), cp.zeros(n, cp.float32)
    tx, ty, tz = (torch.ones(n, device="cuda"), torch.ones(n, device="cuda"), torch.zeros(n, device="cuda"))
    mod.tiny_axpy(cx, cy, cz, 2.0)
    mod.tiny_axpy(tx, ty, tz, 2.0)
    compiled = mod.tiny_axpy.compiled({})
    cubin = Path(tempfile.mkdtemp(prefix="tlc-bench-")) / ("k.ptx" if compiled.arch.startswith("compute_") else "k.cubin")
    cubin.write_bytes(compiled.binary)
    raw = cp.RawModule(path=str(cubin)).get_function(compiled.name)
    from tlc.runtime.launch import _foreign_stream

    ts = _foreign_stream(cp, torch.cuda.current_stream().cuda_stream, 0)
    c_run, t_run = mod.tiny_axpy.launcher(cx, cy, cz, 2.0), mod.tiny_axpy.launcher(tx, ty, tz, 2.0)
    general = {"x": tx, "y": ty, "z": tz, "a": 2.0}
    candidates = {
        # every check one by one (args.Binder): what a PyTorch call took before the fast path took tensors
        "torch general path": lambda: compiled.launch(general),
        "torch tlc": lambda: mod.tiny_axpy(tx, ty, tz, 2.0),
        "torch RawKernel": lambda: raw((1,), (32,), (tx.data_ptr(), ty.data_ptr(), tz.data_ptr(),
                                                     np.float32(2.0), np.int32(n)), stream=ts),
        "torch launcher": lambda: t_run(),  # called through a lambda as the others are
        "cupy tlc": lambda: mod.tiny_axpy(cx, cy, cz, 2.0),
        "cupy RawKernel": lambda: raw((1,), (32,), (cx, cy, cz, np.float32(2.0), np.int32(n))),
        "cupy launcher": lambda: c_run(),
    }
    for name, launch in candidates.items():  # each must compute z = 2x + y (= 3)
        z = tz if name.startswith("torch") else cz
        z.fill_(0) if name.startswith("torch") else z.fill(0)
        launch()
        got = z.cpu().numpy() if name.startswith("torch") else z.get()
        if not (got[:32] == 3).all() or (got[32:] != 0).any():
            results["launch_paths_wrong"] = f"{name}: z[:4] = {got[:4]}"
            return
    reps = 3000
    best = dict.fromkeys(candidates, float("inf"))
    for _ in range(5):  # interleaved rounds: clock drift hits every candidate alike
        for name, launch in candidates.items():
            torch.cuda.synchronize()
            cp.cuda.Device().synchronize()
            t = time.perf_counter()
            for _ in range(reps):
                launch()
            best[name] = min(best[name], (time.perf_counter() - t) / reps * 1e6)
    torch.cuda.synchronize()
    results["launch_paths_us"] = best
    for kind in ("torch", "cupy"):
        results[f"launch_overhead_{kind}_us"] = best[f"{kind} tlc"] - best[f"{kind} RawKernel"]
        results[f"launcher_overhead_{kind}_us"] = best[f"{kind} launcher"] - best[f"{kind} RawKernel"]


# NVRTC's share of a first call, written into the child processes: the compile
# (`runtime.compile.nvrtc_compile`, which `runtime.compile_kernel` looks up at each call) after
# the wait for the warm-up thread, each timed apart
NVRTC_TIMER = r"""
import tlc.runtime.compile as _rc
NVRTC = {"wait_ms": 0.0, "compile_ms": 0.0, "compiles": 0}
def _timed(real):
    def nvrtc_compile(source, arch, name):
        t = time.perf_counter()
        if _rc._warm_up is not None:
            _rc._warm_up.join()
        u = time.perf_counter()
        try:
            return real(source, arch, name)
        finally:
            NVRTC["wait_ms"] += (u - t) * 1e3
            NVRTC["compile_ms"] += (time.perf_counter() - u) * 1e3
            NVRTC["compiles"] += 1
    return nvrtc_compile
_rc.nvrtc_compile = _timed(_rc.nvrtc_compile)
"""

FIRST_CALL = r"""
import json, os, sys, time
t0 = time.perf_counter()
import torch, cupy
tt = time.perf_counter()
import tlc  # after PyTorch and CuPy, which import NumPy too: tlc's own share of the imports
t1 = time.perf_counter()
""" + NVRTC_TIMER + r"""
# the CUDA context (torch's and CuPy's, the same primary context) and the arrays exist before
# the clock starts: creating them costs every CUDA program the same few hundred ms, tlc or not
A = torch.ones(256, 256, dtype=torch.float16, device="cuda")
C = torch.empty(256, 256, dtype=torch.float16, device="cuda")
cupy.cuda.Device().synchronize()
torch.cuda.synchronize()
t2 = time.perf_counter()
profile = os.environ.get("TLC_BENCH_FIRST_PROFILE")
if profile:
    import cProfile
    prof = cProfile.Profile()
    prof.enable()
t3 = time.perf_counter()
mod = tlc.load("std.gemm", target="cuda")
t4 = time.perf_counter()
mod.matmul(A, A, C)
torch.cuda.synchronize()
t5 = time.perf_counter()
if profile:
    prof.disable()
    prof.dump_stats(profile + os.environ["TLC_BENCH_FIRST_SUFFIX"])
ok = bool((C == 256).all())
# whether the call decoded the kernel's checked signature (the launch memo spares a call like one before)
decoded = "fn" in vars(mod.matmul)
print(json.dumps({"import_ms": (t1 - t0) * 1e3, "import_tlc_ms": (t1 - tt) * 1e3, "context_ms": (t2 - t1) * 1e3,
                  "load_ms": (t4 - t3) * 1e3, "call_ms": (t5 - t4) * 1e3, "ok": ok, "decoded": decoded,
                  "nvrtc": NVRTC}))
"""


# each kernel of `--kernels`: (module, kernel, the arrays and the call, PyTorch's result against
# the kernel's, its tolerance); random inputs, sizes whose rows are whole 16-byte vectors
KERNELS = {
    "matmul": ("std.gemm", "matmul",
               "A = torch.randn(512, 256, dtype=torch.float16, device='cuda'); B = torch.randn(256, 384, dtype=torch.float16, device='cuda')\n"
               "C = torch.empty(512, 384, dtype=torch.float16, device='cuda')\n"
               "call = lambda: mod.matmul(A, B, C)",
               "(C.float(), A.float() @ B.float())", 0.1),
    "rms_norm": ("std.nn", "rms_norm",
                 "x = torch.randn(64, 4096, dtype=torch.float16, device='cuda'); w = torch.randn(4096, dtype=torch.float16, device='cuda')\n"
                 "y = torch.empty_like(x)\n"
                 "call = lambda: mod.rms_norm(x, w, y, 1e-6)",
                 "(y.float(), x.float() * torch.rsqrt((x.float() ** 2).mean(-1, keepdim=True) + 1e-6) * w.float())", 0.02),
    "softmax": ("std.nn", "softmax",
                "x = torch.randn(64, 4096, dtype=torch.float16, device='cuda'); y = torch.empty_like(x)\n"
                "call = lambda: mod.softmax(x, y)",
                "(y.float(), torch.softmax(x.float(), -1))", 1e-3),
    "flash_fwd": ("std.attention", "flash_fwd",
                  "q, k, v = (torch.randn(1, 4, 256, 128, dtype=torch.float16, device='cuda') for _ in range(3))\n"
                  "o = torch.empty_like(q); lse = torch.empty(1, 4, 256, dtype=torch.float32, device='cuda')\n"
                  "call = lambda: mod.flash_fwd(q, k, v, o, lse, 128 ** -0.5)",
                  "(o.float(), torch.softmax(q.float() @ k.float().transpose(-1, -2) * 128 ** -0.5, -1) @ v.float())", 0.02),
}

KERNEL_CALL = r"""
import json, os, sys, time
t0 = time.perf_counter()
import torch, cupy
import tlc
t1 = time.perf_counter()
""" + NVRTC_TIMER + r"""
MODULE, SETUP, CHECK, TOL = json.loads(os.environ["TLC_BENCH_KERNEL"])
torch.manual_seed(0)
mod = None
exec(SETUP)  # the arrays (and `call`, which reads `mod` when it runs)
torch.cuda.synchronize()
t2 = time.perf_counter()
mod = tlc.load(MODULE, target="cuda")
t3 = time.perf_counter()
call()
torch.cuda.synchronize()
t4 = time.perf_counter()
got, want = eval(CHECK)
error = float((got - want).abs().max())
print(json.dumps({"import_ms": (t1 - t0) * 1e3, "context_ms": (t2 - t1) * 1e3, "load_ms": (t3 - t2) * 1e3,
                  "call_ms": (t4 - t3) * 1e3, "ok": error <= TOL, "error": error, "nvrtc": NVRTC}))
"""


def nvrtc_cache_env(env: dict) -> tuple[dict, str | None]:
    """`env` for a cold process whose NVRTC finds its cache empty: CUDA_CACHE_PATH a new empty
    folder (NVRTC 13 caches programs in the driver's compute cache, which that variable moves),
    and the folder; with TLC_BENCH_NVRTC_CACHE=machine, `env` as it is and None."""
    if env.get("TLC_BENCH_NVRTC_CACHE") == "machine":
        return env, None
    folder = tempfile.mkdtemp(prefix="tlc-bench-nvrtc-cache-")
    run = {k: v for k, v in env.items() if k != "CUDA_CACHE_DISABLE"}  # the cache on, as a user has it
    run["CUDA_CACHE_PATH"] = folder
    return run, folder


def nvrtc_cache_note(folder: str | None) -> str:
    """How a cold process's NVRTC cache was handled, and what NVRTC wrote into a fresh one."""
    if folder is None:
        return "NVRTC's cache: the machine's (TLC_BENCH_NVRTC_CACHE=machine): a kernel compiled here before is a hit"
    files = [os.path.join(d, f) for d, _, fs in os.walk(folder) for f in fs]
    size = sum(os.path.getsize(f) for f in files)
    return (f"NVRTC's cache: empty at the start (CUDA_CACHE_PATH={folder}); "
            f"{len(files)} files, {size / 1024:.0f} KB in it after")


def first_result(results: dict) -> None:
    """std.gemm's matmul in a new process with empty caches (tlc's and NVRTC's), then in another
    with tlc's filled; the times after `import tlc, torch, cupy` and the CUDA context's creation
    (load: parse + check or the checked-module cache; call: the rest up to the result), and
    those two beside them."""
    import json
    import subprocess

    # TLC_BENCH_FIRST_CACHE: a new folder to use (kept after, for a profile of the cached call)
    kept = os.environ.get("TLC_BENCH_FIRST_CACHE")
    if kept:
        os.makedirs(kept)
    env = {**os.environ, "TLC_CACHE_DIR": kept or tempfile.mkdtemp(prefix="tlc-bench-first-"),
           "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    results["bytecode"] = compile_bytecode(env)
    # the figures come from processes without the profiler (cProfile adds a few microseconds to
    # every call: the cached call's 22 ms on the H200 was 2-3 times its own); with
    # TLC_BENCH_FIRST_PROFILE, a cold call in another fresh folder and a cached one are profiled after
    profile = env.pop("TLC_BENCH_FIRST_PROFILE", None)
    cold, folder = nvrtc_cache_env(env)
    runs = [("first_cold", cold, None, folder), ("first_cached", env, None, None)]
    if profile:
        again, again_folder = nvrtc_cache_env({**env, "TLC_CACHE_DIR": tempfile.mkdtemp(prefix="tlc-bench-first-")})
        runs += [("profile_cold", again, "-cold", again_folder), ("profile_cached", again, "-cached", None)]
    for label, run_env, suffix, nvrtc_folder in runs:
        if suffix:
            run_env = {**run_env, "TLC_BENCH_FIRST_PROFILE": profile, "TLC_BENCH_FIRST_SUFFIX": suffix}
        done = subprocess.run([sys.executable, "-c", FIRST_CALL], env=run_env, capture_output=True, text=True,
                              timeout=120)
        if done.returncode != 0:
            results[f"{label}_error"] = done.stderr[-2000:]
            return
        results[label] = json.loads(done.stdout.strip().splitlines()[-1])
        if label.endswith("cold"):
            results[label]["nvrtc_cache"] = nvrtc_cache_note(nvrtc_folder)


def kernel_first_calls(results: dict, names: list) -> None:
    """Each kernel of `names` (KERNELS) called once in a new process with empty tlc and NVRTC
    caches, its result checked against PyTorch's."""
    import json
    import subprocess

    base = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    if "bytecode" not in results:
        results["bytecode"] = compile_bytecode(base)
    for name in names:
        module, _, setup, check, tol = KERNELS[name]
        env, folder = nvrtc_cache_env({**base, "TLC_CACHE_DIR": tempfile.mkdtemp(prefix="tlc-bench-first-"),
                                       "TLC_BENCH_KERNEL": json.dumps([module, setup, check, tol])})
        done = subprocess.run([sys.executable, "-c", KERNEL_CALL], env=env, capture_output=True, text=True,
                              timeout=120)
        if done.returncode != 0:
            results[f"kernel_{name}_error"] = done.stderr[-2000:]
            continue
        results[f"kernel_{name}"] = {**json.loads(done.stdout.strip().splitlines()[-1]),
                                     "nvrtc_cache": nvrtc_cache_note(folder)}


def compile_bytecode(env: dict) -> str:
    """Compile tlc's modules (and those of the packages a first call imports) to bytecode
    before timing: an installed package has its .pyc files, a fresh checkout (or a machine with
    PYTHONDONTWRITEBYTECODE) compiles every module it imports in every process, 170-300 ms of
    a first call that are not tlc's.  What could not be written is said."""
    import importlib.util
    import subprocess

    folders = [str(ROOT / "tlc")]
    for name in ("lark", "jinja2", "markupsafe"):
        spec = importlib.util.find_spec(name)
        if spec is not None and spec.submodule_search_locations:
            folders.append(list(spec.submodule_search_locations)[0])
    done = subprocess.run([sys.executable, "-m", "compileall", "-q", "-j", "0", *folders], env=env, capture_output=True,
                          text=True, timeout=120)
    return "compiled first (compileall)" if done.returncode == 0 else \
        f"compileall failed ({done.stdout.strip()[-200:]}{done.stderr.strip()[-200:]}): some modules compile in each process"


def report_new(results: dict) -> None:
    report_paths(results)
    report_first(results)


def report_paths(results: dict) -> None:
    if "launch_paths_wrong" in results:
        print(f"launch paths: not timed, a launch computed the wrong result: {results['launch_paths_wrong']}")
    elif "launch_paths_us" in results:
        print("tiny_axpy (3 arrays, 1 scalar), host time per launch: "
              + ", ".join(f"{k} {v:.2f} us" for k, v in results["launch_paths_us"].items()))
        print(f"  torch tensors: tlc {results['launch_overhead_torch_us']:+.2f} us over RawKernel (goal within 1), "
              f"launcher {results['launcher_overhead_torch_us']:+.2f} us")
        print(f"  CuPy arrays: tlc {results['launch_overhead_cupy_us']:+.2f} us over RawKernel (goal within 0.5), "
              f"launcher {results['launcher_overhead_cupy_us']:+.2f} us")


def report_first(results: dict) -> None:
    if "bytecode" in results:
        print(f"Python bytecode of tlc, lark and jinja2: {results['bytecode']}")
    for label, what, goal in (("first_cold", "first call, empty cache, new process", 500),
                              ("first_cached", "first call, kernel in the disk cache, new process", 2)):
        if f"{label}_error" in results:
            print(f"{what}: failed:\n{results[f'{label}_error']}")
        elif label in results:
            r = results[label]
            print(f"{what}: load + call {r['load_ms'] + r['call_ms']:.1f} ms (goal < {goal}; load {r['load_ms']:.1f}, "
                  f"call {r['call_ms']:.1f}; before the clock: import torch+cupy+tlc {r['import_ms']:.0f} "
                  f"(tlc after the others {r.get('import_tlc_ms', float('nan')):.0f}), "
                  f"CUDA context and arrays {r['context_ms']:.0f}){'' if r['ok'] else ' WRONG RESULT'}"
                  f"{'; the launch memo served it' if r.get('decoded') is False and label == 'first_cached' else ''}")
            if label == "first_cached" and "import_tlc_ms" in r:  # the clock starts after `import tlc`, whose own share is this
                print(f"  with `import tlc` (after PyTorch and CuPy): {r['import_tlc_ms'] + r['load_ms'] + r['call_ms']:.1f} ms")
            if "nvrtc" in r and label == "first_cold":
                print(f"  {nvrtc_share(r)}")
            if "nvrtc_cache" in r:
                print(f"  {r['nvrtc_cache']}")
    for label in ("profile_cold", "profile_cached"):
        if f"{label}_error" in results:
            print(f"{label}: failed:\n{results[f'{label}_error']}")
    if "profile_cached" in results:
        print("  profiled again (cProfile's listing only): " + ", ".join(
            f"{label.removeprefix('profile_')} {results[label]['load_ms'] + results[label]['call_ms']:.1f} ms"
            for label in ("profile_cold", "profile_cached")))


def nvrtc_share(r: dict) -> str:
    """NVRTC's part of a first call `r` (the child's NVRTC record), in words."""
    n = r["nvrtc"]
    total = n["wait_ms"] + n["compile_ms"]
    if not n["compiles"]:
        return "NVRTC: not called (the kernel came from tlc's cache)"
    return (f"NVRTC {total:.1f} ms of the call's {r['call_ms']:.1f} ({100 * total / r['call_ms']:.0f}%): "
            f"{n['compiles']} compile{'s' if n['compiles'] > 1 else ''} {n['compile_ms']:.1f} ms after waiting "
            f"{n['wait_ms']:.1f} ms for the warm-up thread; the rest (Python: schedule, generate, load, launch) "
            f"{r['call_ms'] - total:.1f} ms")


def report_kernels(results: dict, names: list) -> None:
    for name in names:
        if f"kernel_{name}_error" in results:
            print(f"{name}: first call failed:\n{results[f'kernel_{name}_error']}")
            continue
        r = results.get(f"kernel_{name}")
        if r is None:
            continue
        verdict = "matches PyTorch" if r["ok"] else "WRONG RESULT"
        print(f"{name} ({KERNELS[name][0]}), first call, empty tlc and NVRTC caches, new process: load + call "
              f"{r['load_ms'] + r['call_ms']:.1f} ms (load {r['load_ms']:.1f}, call {r['call_ms']:.1f}); "
              f"{verdict} (max error {r['error']:.2g}, tolerance {KERNELS[name][4]:g})")
        print(f"  {nvrtc_share(r)}")
        print(f"  {r['nvrtc_cache']}")


def main(argv=None) -> dict:
    import argparse
    import json

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--only", choices=("launch", "compile", "first"), help="one group of measurements")
    ap.add_argument("--json", help="write the results here")
    ap.add_argument("--kernels", help="with --only first: these std kernels' first calls too, each in a new process "
                    f"with empty caches (comma-separated, of {', '.join(KERNELS)})")
    args = ap.parse_args(argv)
    kernels = [k for k in (args.kernels or "").split(",") if k]
    unknown = [k for k in kernels if k not in KERNELS]
    if unknown:
        ap.error(f"--kernels: no such kernel {', '.join(unknown)} (known: {', '.join(KERNELS)})")
    results: dict = {}
    if args.only in (None, "launch"):  # each group reported as soon as it is measured
        launch_paths(results)  # the goals' measurement first
        report_paths(results)
        launch_overhead(results)
        report_launch(results)
    if args.only in (None, "first"):
        first_result(results)
        report_first(results)
        for name in kernels:  # each said as soon as it is measured
            kernel_first_calls(results, [name])
            report_kernels(results, [name])
    if args.only in (None, "compile"):
        compile_costs(results)
        report_compile(results)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1, default=str))
    return results


if __name__ == "__main__":
    sys.stdout.reconfigure(line_buffering=True)  # a report survives a run stopped after it
    main()
