"""Where NVRTC's time goes for a generated kernel (issue #15, time to first result): the whole
kernel against the headers alone (CUDA's fp16/bf16 headers, then with tlc's inlined `tl/*.cuh`
primitives), front end alone (PTX) against front end and ptxas (a cubin), and precompiled
headers (NVRTC 12.8+: the primitives given as a header and precompiled with `--create-pch`,
then used with `--use-pch`).

    python3 bench/nvrtc_time.py [--out DIR] [--variants ...] [--ctypes LIBNVRTC]

Sources: std.gemm's matmul and bench/tiny.tl's tiny for sm_90a as the runtime compiles them
(`runtime_source`: TL_TMA_FLAGS defined for a kernel with tensor maps, TL_WHOLE_RUNS for one
whose copies move whole runs), generated here when tlc's
code generator can be imported, else read from build/nvrtc/*.cu (written by `--write-sources` on
a machine that can).  Each variant is compiled in a new process (NVRTC's first compile in a
process also loads its builtins: what a first call pays) and then once more in that process;
times in ms.  With `--ctypes /path/libnvrtc.so.13` the children call that NVRTC through ctypes
rather than CuPy's bindings: a machine without CuPy or a GPU times real compiles (NVRTC needs
none; the CPU machine's is /tmp/nvrtc/nvidia/cu13/lib).

`--variants pchprims`: the runtime's precompiled primitives (runtime/pch.py: the warm-up thread
makes a PCH of CUDA's headers and tl/*.cuh, the kernel's compile goes through it), alternating new
processes with and without.  NVRTC takes a PCH only in the instance that made it (another
process's is refused, warning #20282-D: the PCH heap's address, random under ASLR; with ASLR off,
`setarch x86_64 -R`, a second process did use the first's), so none outlives its process.  Session 19, 2-core CPU
machine, NVRTC 13.0 through ctypes, std.gemm's matmul (sm_90a): the kernel's compile 534 -> 522
ms of CPU (median of 7), its front end alone (-fdevice-syntax-only) 53-57 -> 37 ms; rms_norm 316
-> 303, softmax 190 -> 175; the cubins bit for bit the same; the warm-up 46 -> 75 ms of CPU.
Session 13 had measured the front end at 29-36 ms against 46-89 (--time, wall, under load) and
on the H200 front end 50 ms, NVVM 447, ptxas 399 of ~900: NVVM + ptxas alone exceed the 0.5 s
goal.  --fdevice-time-trace (session 19, CPU machine, matmul, wall under load): front end 65
(CUDA's builtin header 12, cuda_fp16.h 10, cuda_bf16.h 4), NVVM optimizer 257 (of which one
function pass over the kernel 181), NVVM codegen 90, ptxas 404 (its optimizer 377).  ptxas's
time follows the 12 HGMMA of the 3-times-unrolled K loop: with the accumulators unused after the
loop (3 HGMMA left, 1168 SASS) ptxas took ~80 ms, with 2 of the 128 stored (12 HGMMA) ~250, as with
all of them; the epilogue's address arithmetic (replaced by a flat one) and the dead generic
branches changed nothing.  Options that keep the SASS (--minimal, --split-compile, -Xptxas
--split-compile, --extra-device-vectorization, --dopt, -Xptxas -O2,
--allow-expensive-optimizations=false) and NVRTC 13.5 against 13.0 did not change the time.

What the SASS costs (session 16, the runtime's sources, sm_90a, NVRTC 13.0 on the CPU machine):
the time follows the instructions NVVM and ptxas handle, not the headers (all of tl/*.cuh cost
the front end ~11 ms of CPU over CUDA's own headers; those a row-wise kernel does not use, ~5).
--Ofast-compile=min or mid (1.6-2.5x faster) change matmul's SASS: 12 HGMMA -> 4 (min), 2 and
262 local loads and stores (mid); -Xptxas -O2 or --allow-expensive-optimizations=false give
the same SASS in the same time.  The element-by-element paths of ragged tiles (copy_g2f's and
FragmentStore's) are about half of rms_norm's and softmax's SASS and NVRTC time: without them
rms_norm (before 76cbe0f) 3,632 -> 1,992 instructions, CPU 830 -> 397 ms; softmax 2,952 ->
1,392, 453 -> 231 ms.  A build for launches whose arrays are aligned and whose rows are whole
vectors (as TL_TMA_FLAGS is for maps) would compile them out.

That build is the runtime's first since session 17 (`TL_WHOLE_RUNS`, runtime/whole_runs.py;
the general one compiled only for a launch that needs it).  The runtime's sources, sm_90a,
NVRTC 13.0 on the CPU machine (/tmp/nvcpu.py, best of 3 CPU ms; cuobjdump -sass instructions),
general -> whole-runs build: rms_norm 833 -> 342 ms, 3,632 -> 1,696 SASS, cubin 68.8 -> 38.1 KB;
softmax 472 -> 190 ms, 2,952 -> 1,072; layer_norm 1,064 -> 474 ms, 4,096 -> 2,264; std.attention's
flash_fwd (D=128) 1,142 -> 1,033 ms, 3,544 -> 3,368; std.gemm's matmul (TL_TMA_FLAGS already
compiled its copies out) 550 ms, 1,600 SASS in both.  No local loads or stores in any.
H200 host, session 17 batch q3 (wall ms, --no-cache after the warm-up; front end / NVVM /
ptxas): matmul 1,049 (85 / 496 / 466); rms_norm 1,454 (84 / 868 / 500) -> 674 (84 / 365 / 223);
softmax 860 (76 / 448 / 334) -> 390 (77 / 187 / 124); flash_fwd 1,763 (90 / 906 / 764) -> 1,570
(93 / 763 / 711).  NVVM and ptxas on the kernel itself are what is left: the front end is 85 ms.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SOURCES = ROOT / "build" / "nvrtc"
END_OF_PRIMITIVES = "#endif  // TL_PRIMITIVES"
TRIVIAL = '\nextern "C" __global__ void tl_probe(float* x) { x[threadIdx.x] = 1.0f; }\n'


def runtime_source(kernel, constants: dict, arch: str = "sm_90a") -> str:
    """`kernel`'s source as the runtime hands it to NVRTC (`runtime.compile_kernel`) for a first
    call on aligned arrays whose rows are whole vectors: a kernel with tensor maps is built for
    launches whose maps all encode (`#define TL_TMA_FLAGS`), which compiles the element-by-element
    copies out (half of std.gemm's matmul), and one whose copies move whole runs for launches
    that keep them whole (`#define TL_WHOLE_RUNS`: half of std.nn's rms_norm and softmax)."""
    from tlc.runtime.args import LaunchFacts
    from tlc.runtime.tensormap import built_flags, with_flags
    from tlc.runtime.whole_runs import with_whole_runs

    generated = kernel.generated(constants, arch)
    asserts = LaunchFacts.of(kernel.scheduled(constants, arch)).asserts
    source = generated.source
    if generated.tensor_maps:
        source = with_flags(source, built_flags(generated.tensor_maps, asserts))
    return source if asserts else with_whole_runs(source, generated.whole_runs)


def write_sources() -> None:
    sys.path.insert(0, str(ROOT))
    import tlc

    SOURCES.mkdir(parents=True, exist_ok=True)
    for path, kernel in (("std.gemm", "matmul"), (str(ROOT / "bench" / "tiny.tl"), "tiny")):
        k = getattr(tlc.load(path, target="cpu"), kernel)
        (SOURCES / f"{kernel}.cu").write_text(runtime_source(k, {}))
        print(f"wrote {SOURCES / kernel}.cu")


def variants(source: str) -> dict:
    """name -> (source, headers {name: text}) of each variant of one kernel's source."""
    head, _, rest = source.partition(END_OF_PRIMITIVES)
    primitives_start = head.index("#ifndef TL_PRIMITIVES")
    includes = head[:primitives_start]
    as_header = includes + '#include "tl_primitives.cuh"\n' + rest.split("\n", 1)[1]
    return {
        "full": (source, {}),
        "cuda headers + trivial kernel": (includes + TRIVIAL, {}),
        "cuda headers + primitives + trivial kernel": (head + END_OF_PRIMITIVES + "\n" + TRIVIAL, {}),
        "no header, trivial kernel": (TRIVIAL, {}),
        "full, primitives as a header": (as_header, {"tl_primitives.cuh": head[primitives_start:] + END_OF_PRIMITIVES + "\n"}),
    }


# --ctypes: a stand-in for CuPy's `cupy.cuda.nvrtc` over the library's C API, installed before
# each child's own code (the NVRTC_LIBRARY placeholder is replaced by the library's path)
CTYPES_PRELUDE = r"""
import ctypes, glob, os, sys, types
for _builtins in sorted(glob.glob(os.path.join(os.path.dirname(NVRTC_LIBRARY), "libnvrtc-builtins.so*"))):
    ctypes.CDLL(_builtins, mode=ctypes.RTLD_GLOBAL)  # NVRTC opens them by name: found loaded, not searched
_lib = ctypes.CDLL(NVRTC_LIBRARY)
class NVRTCError(RuntimeError):
    pass
def _check(r):
    if r != 0:
        raise NVRTCError("NVRTC error %d" % r)
def createProgram(src, name, headers, include_names):
    prog = ctypes.c_void_p()
    n = len(headers)
    hs = (ctypes.c_char_p * max(1, n))(*[h if isinstance(h, bytes) else h.encode() for h in headers])
    hn = (ctypes.c_char_p * max(1, n))(*[h if isinstance(h, bytes) else h.encode() for h in include_names])
    _check(_lib.nvrtcCreateProgram(ctypes.byref(prog), src.encode(), name.encode(), n, hs, hn))
    return prog
def compileProgram(prog, options):
    opts = (ctypes.c_char_p * max(1, len(options)))(*[o.encode() for o in options])
    _check(_lib.nvrtcCompileProgram(prog, len(options), opts))
def _get(prog, size_fn, get_fn):
    n = ctypes.c_size_t()
    _check(getattr(_lib, size_fn)(prog, ctypes.byref(n)))
    buf = ctypes.create_string_buffer(n.value)
    _check(getattr(_lib, get_fn)(prog, buf))
    return buf.raw
def getProgramLog(prog):
    return _get(prog, "nvrtcGetProgramLogSize", "nvrtcGetProgramLog").rstrip(b"\0").decode(errors="replace")
def getCUBIN(prog):
    return _get(prog, "nvrtcGetCUBINSize", "nvrtcGetCUBIN")
def getPTX(prog):
    return _get(prog, "nvrtcGetPTXSize", "nvrtcGetPTX")
def destroyProgram(prog):
    _lib.nvrtcDestroyProgram(ctypes.byref(prog))
def getVersion():
    a, b = ctypes.c_int(), ctypes.c_int()
    _lib.nvrtcVersion(ctypes.byref(a), ctypes.byref(b))
    return a.value, b.value
_nvrtc = types.ModuleType("cupy.cuda.nvrtc")
_nvrtc.__dict__.update(NVRTCError=NVRTCError, createProgram=createProgram, compileProgram=compileProgram,
                       getProgramLog=getProgramLog, getCUBIN=getCUBIN, getPTX=getPTX, destroyProgram=destroyProgram,
                       getVersion=getVersion)
_cuda = types.ModuleType("cupy.cuda"); _cuda.nvrtc = _nvrtc; _cuda.__path__ = []
_cupy = types.ModuleType("cupy"); _cupy.cuda = _cuda; _cupy.__path__ = []
sys.modules.update({"cupy": _cupy, "cupy.cuda": _cuda, "cupy.cuda.nvrtc": _nvrtc})
"""
PRELUDE = ""  # CTYPES_PRELUDE with the library's path under --ctypes


def child(code: str) -> list:
    """The command line of a child running `code` (after the ctypes stand-in, under --ctypes)."""
    return [sys.executable, "-c", PRELUDE + code]


CHILD = r"""
import json, sys, time
from cupy.cuda import nvrtc
src, headers, options, name = json.loads(sys.stdin.read())
times, log = [], ""
for i in range(2):
    t0 = time.perf_counter()
    prog = nvrtc.createProgram(src, name + ".cu", [h.encode() for h in headers.values()], [n.encode() for n in headers])
    try:
        nvrtc.compileProgram(prog, options)
        ok = True
    except nvrtc.NVRTCError as e:
        ok, log = False, nvrtc.getProgramLog(prog)[-1500:] + f" ({e})"
    if ok:
        size = len(nvrtc.getCUBIN(prog) if any(o.startswith("-arch=sm") for o in options) else nvrtc.getPTX(prog))
        if not log:
            log = nvrtc.getProgramLog(prog)[-1500:]
    nvrtc.destroyProgram(prog)
    times.append((time.perf_counter() - t0) * 1e3)
    if not ok:
        break
print(json.dumps({"ms": times, "ok": ok, "log": log}))
"""


# NVRTC's first compile in a process costs ~200 ms more than the next (its NVVM starts): started
# on a thread while Python works (parsing, checking, generating), is that hidden?  `busy` is
# pure Python work; it is timed alone, then with the warm-up on a thread, then the kernel compiled.
OVERLAP = r"""
import json, sys, threading, time
from cupy.cuda import nvrtc
src, options, name = json.loads(sys.stdin.read())
def compile(text):
    prog = nvrtc.createProgram(text, name + ".cu", [], [])
    try:
        nvrtc.compileProgram(prog, options)
    finally:
        nvrtc.destroyProgram(prog)
def busy(n=400000):
    t0 = time.perf_counter(); x = 0
    for i in range(n):
        x += i * i % 7
    return (time.perf_counter() - t0) * 1e3
out = {"busy_alone_ms": busy()}
t0 = time.perf_counter()
warm = threading.Thread(target=compile, args=('extern "C" __global__ void tl_warm() {}',))
warm.start()
out["busy_beside_warmup_ms"] = busy()
warm.join()
out["warmup_done_after_ms"] = (time.perf_counter() - t0) * 1e3
t1 = time.perf_counter(); compile(src); out["kernel_after_ms"] = (time.perf_counter() - t1) * 1e3
print(json.dumps(out))
"""


# The warm-up (templates/nvrtc_warm_up.cu, as `tlc.runtime.compile.warm_up_nvrtc` compiles it) and then the kernel, in one new process,
# both with NVRTC's automatic precompiled header (-pch): does the kernel reuse the headers the
# warm-up parsed?  (PCH files are valid only in the NVRTC instance that made them.)
PCH_WARM = r"""
import json, sys, time
from cupy.cuda import nvrtc
src, warm_src, options, name = json.loads(sys.stdin.read())
out = {}
for label, text in (("warm_up", warm_src), ("kernel", src)):
    t0 = time.perf_counter()
    prog = nvrtc.createProgram(text, label + ".cu", [], [])
    try:
        nvrtc.compileProgram(prog, options)
        out[label + "_ms"] = (time.perf_counter() - t0) * 1e3
    except nvrtc.NVRTCError as e:
        out[label + "_error"] = str(e)
    out[label + "_log"] = nvrtc.getProgramLog(prog).strip()[-400:]
    nvrtc.destroyProgram(prog)
print(json.dumps(out))
"""


# The runtime's own precompiled primitives (`--variants pchprims`, runtime/pch.py): in a new
# process per case and run, `compile.warm_up_nvrtc` (with the primitive files: it makes the PCH;
# without: today's program alone), waited for, then `compile.nvrtc_compile` of the kernel, which
# goes through the PCH where it serves the source; times in ms, the compile's CPU that of its
# thread (the warm-up's thread has ended), and whether a PCH was made.
PCH_PRIMS = r"""
import json, sys, time
sys.path.insert(0, ROOT_FOLDER)
from tlc import primitives
from tlc.runtime import compile as rc, pch
source, name, with_pch = json.loads(sys.stdin.read())
t0 = time.perf_counter()
rc.warm_up_nvrtc("sm_90a", primitives.SM90 if with_pch else None)
rc._warm_up.join()
t1, c1 = time.perf_counter(), time.thread_time()
cubin = rc.nvrtc_compile(source, "sm_90a", name)
t2, c2 = time.perf_counter(), time.thread_time()
print(json.dumps({"warm_up_ms": round((t1 - t0) * 1e3, 1), "compile_ms": round((t2 - t1) * 1e3, 1),
                  "compile_cpu_ms": round((c2 - c1) * 1e3, 1), "pch": pch.made is not None,
                  "served": pch.usable_for(source, rc.nvrtc_options("sm_90a")) is not None, "cubin_bytes": len(cubin)}))
"""


def pch_prims(source: str, name: str, runs: int = 5) -> None:
    """`runs` alternating processes of each case of PCH_PRIMS for one kernel's source, then the medians."""
    code = child(PCH_PRIMS.replace("ROOT_FOLDER", repr(str(ROOT))))
    times = {True: [], False: []}
    for _ in range(runs):
        for with_pch in (True, False):
            done = subprocess.run(code, input=json.dumps([source, name, with_pch]), capture_output=True, text=True, timeout=300)
            if done.returncode != 0:
                print(f"{name:7} pch={with_pch}: {done.stderr[-1500:]}", flush=True)
                return
            r = json.loads(done.stdout)
            times[with_pch].append(r["compile_cpu_ms"])
            print(f"{name:7} {'warm-up makes the PCH' if with_pch else 'warm-up alone':22} {r}", flush=True)
    for with_pch, cpu in times.items():
        print(f"{name:7} {'through the PCH' if with_pch else 'without'}: compile CPU median {sorted(cpu)[len(cpu) // 2]} ms "
              f"of {len(cpu)}", flush=True)


def pch_warm(src: str, options: list, name: str) -> dict:
    sys.path.insert(0, str(ROOT))
    warm_src = (ROOT / "templates" / "nvrtc_warm_up.cu").read_text()

    done = subprocess.run(child(PCH_WARM), input=json.dumps([src, warm_src, options, name]),
                          capture_output=True, text=True, timeout=300)
    return json.loads(done.stdout) if done.returncode == 0 else {"error": done.stderr[-1500:]}


def overlap(src: str, options: list, name: str) -> dict:
    done = subprocess.run(child(OVERLAP), input=json.dumps([src, options, name]),
                          capture_output=True, text=True, timeout=300)
    return json.loads(done.stdout) if done.returncode == 0 else {"error": done.stderr[-1500:]}


def compile_times(src: str, headers: dict, options: list, name: str) -> dict:
    done = subprocess.run(child(CHILD), input=json.dumps([src, headers, options, name]),
                          capture_output=True, text=True, timeout=300)
    if done.returncode != 0:
        return {"ms": [], "ok": False, "log": done.stderr[-1500:]}
    return json.loads(done.stdout)


def include_option() -> list:
    try:
        sys.path.insert(0, str(ROOT))
        from tlc.runtime.compile import cuda_include_dir
        folder = cuda_include_dir()
    except Exception:  # noqa: BLE001 - tlc not importable: the usual place
        folder = "/usr/local/cuda/include"
    return [f"-I{folder}"] if folder else []


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--write-sources", action="store_true", help="only write build/nvrtc/*.cu")
    ap.add_argument("--out", help="write the results as JSON here")
    ap.add_argument("--only", default="", help="kernels (matmul,tiny)")
    ap.add_argument("--variants", default="", help="only these groups: plain, pch, time, overlap, pchwarm, nocache, "
                    "pchprims (not among the default ones)")
    ap.add_argument("--ctypes", metavar="LIBNVRTC", help="call this NVRTC library through ctypes, not CuPy")
    args = ap.parse_args(argv)
    if args.write_sources:
        write_sources()
        return {}
    if not list(SOURCES.glob("*.cu")):
        write_sources()
    global PRELUDE
    if args.ctypes:
        PRELUDE = CTYPES_PRELUDE.replace("NVRTC_LIBRARY", repr(args.ctypes))
        exec(PRELUDE, {})  # this process's version line too
    from cupy.cuda import nvrtc

    print(f"NVRTC {nvrtc.getVersion()}, Python {sys.version.split()[0]}", flush=True)
    common = ["--std=c++17", "-ftz=false", "-prec-div=true", "-prec-sqrt=true"] + include_option()
    results = {}
    pch_dir = Path(tempfile.mkdtemp(prefix="tlc-pch-"))
    for path in sorted(SOURCES.glob("*.cu")):
        if args.only and path.stem not in args.only.split(","):
            continue
        source = path.read_text()
        groups = set(args.variants.split(",")) if args.variants else {"plain", "pch", "time", "overlap", "pchwarm", "nocache"}
        if "pchprims" in groups:
            pch_prims(source, path.stem)
        if "pchwarm" in groups:  # uncached (NVRTC's own cache keys on the options too), phases by --time
            timing = pch_dir / f"{path.stem}-pchwarm-time.csv"
            for extra in ([], ["-pch", "--pch-verbose=true"]):
                r = results[f"{path.stem} | warm-up then kernel {' '.join(extra)}"] = pch_warm(
                    source, common + ["-arch=sm_90a", "--no-cache", f"--time={timing}"] + extra, path.stem)
                print(f"{path.stem:7} warm-up then kernel, --no-cache {' '.join(extra) or '(no pch)'}: {r}", flush=True)
                if timing.exists():
                    print(timing.read_text()[-1500:], flush=True)
                    timing.unlink()
        if "nocache" in groups:  # NVRTC 12.9+ keeps its own cache of compiled programs: a true compile
            timing = pch_dir / f"{path.stem}-nocache-time.csv"
            for extra in (["--no-cache", f"--time={timing}"], []):
                r = compile_times(source, {}, common + ["-arch=sm_90a"] + extra, path.stem)
                results[f"{path.stem} | full {' '.join(extra[:1])} | sm_90a"] = r
                print(f"{path.stem:7} {'full ' + ' '.join(extra[:1]):45} {'sm_90a':12} {_ms(r)}", flush=True)
                if timing.exists():
                    print(timing.read_text()[-1500:], flush=True)
                    timing.unlink()
        if "overlap" in groups:
            r = results[f"{path.stem} | NVRTC warmed up on a thread"] = overlap(source, common + ["-arch=sm_90a"], path.stem)
            print(f"{path.stem:7} NVRTC warmed up on a thread: {r}", flush=True)
        for label, (src, headers) in variants(source).items():
            if "plain" not in groups:
                break
            for arch in ("sm_90a", "compute_90a"):
                if arch == "compute_90a" and label not in ("full", "cuda headers + trivial kernel"):
                    continue
                options = common + [f"-arch={arch}"]
                r = compile_times(src, headers, options, path.stem)
                results[f"{path.stem} | {label} | {arch}"] = r
                print(f"{path.stem:7} {label:45} {arch:12} {_ms(r)}", flush=True)
        # the primitives precompiled: created once, then used (each in a new process)
        src, headers = variants(source)["full, primitives as a header"]
        if "pch" not in groups:
            continue
        pch = pch_dir / f"{path.stem}.pch"
        for label, extra in (("pch create", [f"--create-pch={pch}", "--pch-verbose=true"]),
                             ("pch use", [f"--use-pch={pch}", "--pch-verbose=true"]),
                             ("auto pch (1st)", ["-pch", f"--pch-dir={pch_dir}", "--pch-verbose=true"]),
                             ("auto pch (2nd)", ["-pch", f"--pch-dir={pch_dir}", "--pch-verbose=true"])):
            r = compile_times(src, headers, common + ["-arch=sm_90a"] + extra, path.stem)
            results[f"{path.stem} | {label} | sm_90a"] = r
            print(f"{path.stem:7} {label:45} {'sm_90a':12} {_ms(r)}  {r['log'].strip()[:300]!r}", flush=True)
        if "time" not in groups:
            continue
        timing = pch_dir / f"{path.stem}-time.csv"
        r = compile_times(source, {}, common + ["-arch=sm_90a", f"--time={timing}"], path.stem)
        print(f"{path.stem:7} {'--time':45} {'sm_90a':12} {_ms(r)}")
        if timing.exists():
            print(timing.read_text()[-3000:])
        else:
            print(f"  (no --time output: {r['log'].strip()[:300]!r})")
    if args.out:
        Path(args.out).write_text(json.dumps(results, indent=1))
    return results


def _ms(r: dict) -> str:
    if not r["ok"]:
        return f"FAILED: {r['log'].strip()[-400:]!r}"
    first, *rest = r["ms"]
    return f"first {first:7.1f} ms, then {', '.join(f'{t:.1f}' for t in rest)}"


if __name__ == "__main__":
    main()
