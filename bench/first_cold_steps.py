"""Where a first call with empty caches goes (#15, time to first result): `python3
bench/first_cold_steps.py [--runs N] [--gpu] [--nvrtc-ms MS] [--heap N] [--tree DIR[#VARIANT]]...
[--instructions] [--profile]`.

std.gemm's matmul loaded and called once in a new process whose tlc cache is empty (and, with
--gpu, NVRTC's too: CUDA_CACHE_PATH a new empty folder), as bench/overheads.py --only first's
cold process: the clock starts after `import tlc` and the arrays.  Each step's own wall time is
reported (the clocked steps it calls taken out, so that the steps and "the rest" add up to load
+ call): the parse, the grammar's tables, the type check, the stores of the caches, the targets'
search, the scheduler, the code generator, NVRTC (the kernel's compile apart from the wait for
the warm-up thread and the rest of `nvrtc_compile`), the module load, the launch; every module's
import as one step ("import": each module's own execution, the imports it makes taken out; the
largest by module listed after the steps) and
the garbage collector's passes by generation.  The clocks are put on a step's module when it is
imported (a hook in importlib's loader), so that no module is imported before the clock only to
be clocked.  Steps run on another thread than the call's (a tree from session 26-28 compiled
beside the caches' stores, on the thread `tlc-nvrtc-compile`) are shown as `[compile thread]`,
outside the call's sum.

Without --gpu, CuPy and the driver are stood in for (bench/first_cached_host.py's STAND_IN) and
so is NVRTC: its compile a wait without the GIL of --nvrtc-ms, no warm-up thread (in a tree of
sessions 26-28 with #thread, one that runs only what it finds first); --heap N keeps N objects
alive before the clock (as PyTorch's import leaves them).  --tree runs another folder holding
tlc/ (its processes alternate with the others'); a `#` after it names variants of that tree:
`nowarm` (no warm-up thread), and in a tree of sessions 26-28 `inline` (the caches' stores where
they are asked for, as before d2c014e) and `thread` (WARM_UP_FINDS_ARCH), combined with commas.
--instructions: then each variant's call counted by callgrind with no clocks (the same on a busy
machine).  --profile: one more process under
cProfile, its listings printed (the device's outputs come back as text only).

Session 26, the 2-core CPU machine, stood in: load + call ~220-255 ms CPU, of which the imports
~85-95 (193 modules), the parse ~49 and Lark's tables ~13, the type check of the 40 functions
~32, the collector ~12-20, the checked module's store ~15-22 (beside the compile until session 28), the
scheduler ~7-12, the code generator ~7 (71 while a precompiled template was stale, 82633f4);
instructions 1,818 M (1d8cd08) -> 1,844 M at the session's end.
"""
from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

from first_cached_host import GPU, STAND_IN, callgrind_count  # noqa: E402

# module -> the functions (or Class.method) clocked in it, in the order a cold call meets them
STEPS = {
    "tlc.driver": ["read_source"],
    "tlc.runtime": ["warm_up", "program_entry"],
    "tlc.targets": ["registered"],
    "tlc.parser": ["parse"],
    "tlc.parser.grammar_cache": ["cached_parser"],
    "tlc.typecheck": ["check_program"],
    "tlc.runtime.checked_cache": ["store", "store_record"],
    "tlc.runtime.cache": ["package_hash", "KernelCache.store"],
    "tlc.config_table": ["choose"],
    "tlc.schedule": ["schedule"],
    "tlc.codegen": ["generate"],
    "tlc.runtime.compile": ["nvrtc_compile", "_nvrtc_run"],
    "tlc.runtime.launch": ["CompiledKernel.__init__", "CompiledKernel._load", "CompiledKernel.launch"],
    "tlc.runtime.tensormap": ["encode"],
}

COLD_BODY = r"""
import functools, gc, json, os, threading, time
STEPS = json.loads(os.environ["TLC_BENCH_COLD_STEPS"])
MAIN = threading.get_ident()
phases, counts, stacks = {}, {}, threading.local()
imports = {}  # module -> its import's own ms (the "import" step by module)

def record(label, own, spent):  # `own` seconds of `label`'s own; `spent` in all, taken out of the step around it
    phases[label] = phases.get(label, 0.0) + own * 1e3
    counts[label] = counts.get(label, 0) + 1
    inner = stacks.__dict__.setdefault("inner", [])
    if inner:
        inner[-1] += spent

def clocked(fn, label):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        # the call's steps: those of its own thread, and of the thread its NVRTC compile ran on
        # beside the stores in a tree of sessions 26-28 (tlc.runtime.beside); not the warm-up's
        thread = threading.current_thread()
        if thread.ident != MAIN and thread.name != "tlc-nvrtc-compile":
            return fn(*args, **kwargs)
        inner = stacks.__dict__.setdefault("inner", [])
        inner.append(0.0)
        start = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            spent = time.perf_counter() - start
            own = spent - inner.pop()
            record(label if thread.ident == MAIN else f"{label} [compile thread]", own, spent)
            if label == "import":
                imports[args[0].name] = imports.get(args[0].name, 0.0) + own * 1e3
    return wrapper

def install(module):
    for path in STEPS.get(module.__name__, ()):
        owner = module
        *outer, attr = path.split(".")
        for part in outer:
            owner = getattr(owner, part)
        if hasattr(owner, attr):  # (a tree without it: --tree)
            setattr(owner, attr, clocked(getattr(owner, attr), f"{module.__name__}:{path}"))

_bootstrap = sys.modules["_frozen_importlib"]
_load = clocked(_bootstrap._load_unlocked, "import")
def _load_unlocked(spec):
    module = _load(spec)
    if spec.name in STEPS:
        install(module)
    return module

_gc_start = []
def _gc_clock(phase, info):
    if threading.get_ident() != MAIN:
        return
    if phase == "start":
        _gc_start.append(time.perf_counter())
    elif _gc_start:
        spent = time.perf_counter() - _gc_start.pop()
        record(f"gc{info['generation']}", spent, spent)

import tlc
from tlc.runtime import driver_api, tensormap
if STOOD_IN:
    from tlc.runtime import compile as rc
    driver_api.libcuda = tensormap.libcuda = lambda: _LibCuda()
    def _warm_up(arch, primitive_files=None):  # no NVRTC: what the thread finds first (a function), found there
        if callable(arch) and rc._warm_up is None:
            rc._warm_up = threading.Thread(target=arch, name="tlc-nvrtc-warm-up")
            rc._warm_up.start()
    rc.warm_up_nvrtc = _warm_up
    # NVRTC stood in for by a wait without the GIL, as long as --nvrtc-ms says (the compile
    # itself in a tree of sessions 26-28, which ran other work beside it: tlc.runtime.beside)
    NVRTC_S = float(os.environ.get("TLC_BENCH_COLD_NVRTC_MS", "0")) / 1e3
    def _stood_in(source, arch, name):
        time.sleep(NVRTC_S)
        return b"cubin of " + name.encode()
    setattr(rc, "_nvrtc_compile" if hasattr(rc, "_nvrtc_compile") else "nvrtc_compile", _stood_in)
for name in STEPS:
    if name in sys.modules:
        install(sys.modules[name])
VARIANT = os.environ.get("TLC_BENCH_COLD_VARIANT", "")
if "nowarm" in VARIANT:  # no NVRTC warm-up thread
    from tlc.runtime import compile as rc
    rc.warm_up_nvrtc = lambda arch, primitive_files=None: None
if "thread" in VARIANT:  # a tree of sessions 26-28: the warm-up thread finds the target and NVRTC's arch
    import tlc.runtime
    tlc.runtime.WARM_UP_FINDS_ARCH = True
if "inline" in VARIANT:  # a tree of sessions 26-28: the caches' stores where they are asked for (as before d2c014e)
    from tlc.runtime import beside
    beside.later = lambda work: work()
# --heap: objects alive before the clock, as PyTorch's and CuPy's imports leave them (the
# collector's oldest generation walks them all)
HEAP = [{"x": [i]} for i in range(int(os.environ.get("TLC_BENCH_COLD_HEAP", "0")) // 3)]
profile = os.environ.get("TLC_BENCH_COLD_PROFILE")
clocks = not profile and not os.environ.get("TLC_BENCH_COLD_INSTRUCTIONS")  # (neither under the profiler nor counted)
if profile:
    import cProfile
    prof = cProfile.Profile()
if clocks:
    _bootstrap._load_unlocked = _load_unlocked
gc.collect()
if clocks:
    gc.callbacks.append(_gc_clock)
phases.clear(), counts.clear(), imports.clear()  # what the installs and the collection before the clock took
def call():
    global mod, c0, t0, t1, t2, c2
    c0, t0 = time.thread_time(), time.perf_counter()
    if profile:
        prof.enable()
    mod = tlc.load("std.gemm", target="cuda")
    t1 = time.perf_counter()
    mod.matmul(A, A, C)
    synchronize()
    t2, c2 = time.perf_counter(), time.thread_time()
if os.environ.get("TLC_BENCH_COLD_INSTRUCTIONS"):  # called through a C function that callgrind counts within
    functools.reduce(lambda acc, _: call(), [0], None)
else:
    call()
if profile:
    prof.disable()
    import io, pstats
    for order in ("cumulative", "tottime"):
        out = io.StringIO()
        pstats.Stats(prof, stream=out).sort_stats(order).print_stats(45)
        print(out.getvalue().split("\n", 5)[-1][:9000])
ok = launched_right()
print(json.dumps({"load_ms": (t1 - t0) * 1e3, "call_ms": (t2 - t1) * 1e3, "cpu_ms": (c2 - c0) * 1e3, "ok": ok,
                  "phases": phases, "counts": counts, "imports": imports}))
"""


def cold_env(base: dict, gpu: bool) -> dict:
    """`base` with a new empty tlc cache, and on the GPU a new empty NVRTC cache."""
    env = {**base, "TLC_CACHE_DIR": tempfile.mkdtemp(prefix="tlc-bench-cold-")}
    if gpu:
        env.pop("CUDA_CACHE_DISABLE", None)  # the cache on, as a user has it, but empty
        env["CUDA_CACHE_PATH"] = tempfile.mkdtemp(prefix="tlc-bench-cold-nvrtc-")
    return env


def run(code: str, env: dict, tree: Path) -> dict:
    # in the tree's folder: `python -c` puts the working folder first on sys.path
    done = subprocess.run([sys.executable, "-c", code], env={**env, "PYTHONPATH": os.pathsep.join(
        [str(tree), env.get("PYTHONPATH", "")])}, capture_output=True, text=True, timeout=300, cwd=tree)
    if done.returncode != 0:
        sys.exit(f"bench/first_cold_steps.py: a child failed ({tree}):\n{done.stderr[-3000:]}")
    lines = done.stdout.strip().splitlines()
    result = json.loads(lines[-1])
    result["listing"] = "\n".join(lines[:-1])
    return result


def instructions(code: str, env: dict, tree: Path) -> int:
    """The instructions of the load and the call (callgrind, counting only within the C function
    `functools.reduce` that the child calls them through)."""
    return callgrind_count(["-c", code], {**env, "TLC_BENCH_COLD_INSTRUCTIONS": "1", "PYTHONPATH": os.pathsep.join(
        [str(tree), env.get("PYTHONPATH", "")])}, tree, "bench/first_cold_steps.py", timeout=1800)


IMPORTS_SHOWN = 15  # modules listed by their imports' own time


def report(runs: list, what: str) -> None:
    if not all(r["ok"] for r in runs):
        print(f"{what}: WRONG RESULT: a first call's output did not match (its times are not counted)")
        return
    total = [r["load_ms"] + r["call_ms"] for r in runs]
    print(f"{what}, {len(runs)} new processes: load + call median {statistics.median(total):.1f} ms, "
          f"best {min(total):.1f} (median load {statistics.median(r['load_ms'] for r in runs):.1f}, call "
          f"{statistics.median(r['call_ms'] for r in runs):.1f}; this thread's CPU median "
          f"{statistics.median(r['cpu_ms'] for r in runs):.1f}); the clocks included")
    labels = sorted({k for r in runs for k in r["phases"]}, key=lambda k: -statistics.median(r["phases"].get(k, 0.0) for r in runs))
    print("  each step's own wall time, median ms (the clocked steps it calls taken out; [compile thread]: "
          "beside the call's thread, not in its sum), largest first:")
    for label in labels:
        times = [r["phases"].get(label, 0.0) for r in runs]
        print(f"    {label:60} {statistics.median(times):8.2f}  (min {min(times):7.2f})  x{max(r['counts'].get(label, 0) for r in runs)}")
    rest = [t - sum(v for k, v in r["phases"].items() if not k.endswith("[compile thread]")) for t, r in zip(total, runs)]
    print(f"    {'the rest (outside every clocked step)':60} {statistics.median(rest):8.2f}")
    names = sorted({m for r in runs for m in r.get("imports", {})},
                   key=lambda m: -statistics.median(r.get("imports", {}).get(m, 0.0) for r in runs))
    print(f"  the imports' own time by module, median ms, the {min(IMPORTS_SHOWN, len(names))} largest of {len(names)}:")
    for name in names[:IMPORTS_SHOWN]:
        print(f"    {name:60} {statistics.median(r.get('imports', {}).get(name, 0.0) for r in runs):8.2f}")
    packages = {}  # tlc's subpackages apart, another package as a whole: median over the runs of their sums
    for r in runs:
        sums = {}
        for name, ms in r.get("imports", {}).items():
            parts = name.split(".")
            key = ".".join(parts[:2]) if parts[0] == "tlc" and len(parts) > 1 else parts[0]
            sums[key] = sums.get(key, 0.0) + ms
        for key, ms in sums.items():
            packages.setdefault(key, []).append(ms)
    largest = sorted(packages.items(), key=lambda kv: -statistics.median(kv[1]))[:IMPORTS_SHOWN]
    print("  by package (median ms): " + ", ".join(f"{k} {statistics.median(v):.1f}" for k, v in largest))


def main(argv=None) -> dict:
    import argparse

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--gpu", action="store_true", help="on the GPU: CuPy, PyTorch, NVRTC and the driver themselves, "
                    "NVRTC's cache empty too, each result checked")
    ap.add_argument("--nvrtc-ms", type=float, default=0.0, help="without --gpu: the stood-in compile takes this "
                    "long (a wait without the GIL, as NVRTC's)")
    ap.add_argument("--heap", type=int, default=0, help="without --gpu: this many objects alive before the clock "
                    "(PyTorch's import leaves ~1-2 M), which the collector's full passes walk")
    ap.add_argument("--tree", action="append", help="a folder holding tlc/ (and grammar/, templates/, stdlib/) "
                    "(DIR#nowarm: with no NVRTC warm-up thread; in a tree of sessions 26-28, DIR#inline: the caches' "
                    "stores where they are asked for, not beside the compile, DIR#thread: WARM_UP_FINDS_ARCH; "
                    "combined with commas) "
                    "to time instead of this checkout; given more than once, their processes alternate")
    ap.add_argument("--instructions", action="store_true", help="without --gpu: then the call's instructions "
                    "(valgrind's callgrind, user space, every thread) in one more process of each variant: the "
                    "same on a busy machine as on a quiet one")
    ap.add_argument("--profile", action="store_true", help="then one more process under cProfile (the first "
                    "tree's), its listings printed")
    args = ap.parse_args(argv)
    # each variant: (label, tree, what differs: "nowarm", "inline", both or none)
    variants = [(t, Path(t.partition("#")[0]).resolve(), t.partition("#")[2]) for t in args.tree or [str(ROOT)]]
    base = {**os.environ, "TLC_BENCH_COLD_STEPS": json.dumps(STEPS), "TLC_BENCH_COLD_NVRTC_MS": str(args.nvrtc_ms),
            "TLC_BENCH_COLD_HEAP": str(args.heap)}
    for tree in dict.fromkeys(tree for _, tree, _ in variants):
        done = subprocess.run([sys.executable, "-m", "compileall", "-q", str(tree / "tlc")], capture_output=True,
                              text=True, timeout=300)
        print(f"{tree}: tlc's bytecode {'compiled first' if done.returncode == 0 else 'not all compiled'}")
    code = (GPU if args.gpu else STAND_IN) + COLD_BODY
    runs = {label: [] for label, _, _ in variants}
    for i in range(args.runs):
        for label, tree, variant in variants:
            env = {**cold_env(base, args.gpu), "TLC_BENCH_COLD_VARIANT": variant}
            r = run(code, env, tree)
            runs[label].append(r)
            print(f"  run {i + 1}, {label}: load + call {r['load_ms'] + r['call_ms']:.1f} ms (load {r['load_ms']:.1f}, "
                  f"call {r['call_ms']:.1f}){'' if r['ok'] else ' WRONG RESULT'}", flush=True)
    what = "on the GPU, NVRTC's cache empty too" if args.gpu else \
        f"host side (CuPy and the driver stood in for, NVRTC by a {args.nvrtc_ms:.0f} ms wait)"
    for label, _, _ in variants:
        report(runs[label], f"first call, empty cache, {what}, {label}")
    trees = [tree for _, tree, _ in variants]
    if args.instructions and not args.gpu:
        for label, tree, variant in variants:
            count = instructions(code, {**cold_env(base, False), "TLC_BENCH_COLD_VARIANT": variant,
                                        "TLC_BENCH_COLD_STEPS": "{}"}, tree)  # no clocks
            runs[label].append({"instructions": count})
            print(f"the call's instructions, {label} (callgrind, user space, every thread): {count / 1e6:.1f} M")
    if args.profile:
        profiled = run(code, {**cold_env(base, args.gpu), "TLC_BENCH_COLD_PROFILE": "1"}, trees[0])
        print(f"under cProfile ({trees[0]}, one more process; load + call {profiled['load_ms'] + profiled['call_ms']:.1f} ms):")
        print(profiled["listing"])
    return {str(Path(label.partition("#")[0]).resolve()) + "".join(label.partition("#")[1:]): r
            for label, r in runs.items()}


if __name__ == "__main__":
    main()
