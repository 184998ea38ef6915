"""Running nvcc from tests: compile generated code for a target with warnings as errors.

nvcc is found where `tlc build --emit ptx` finds it (`cuda_toolkit_nvcc`: PATH, $CUDA_HOME,
/usr/local/cuda, /usr/local/cuda-X.Y); a test that needs it is skipped, saying why, only on a
machine with no CUDA toolkit at all (tests that call tlc's own nvcc are marked `nvcc`, and
conftest.py skips them).

A successful compilation is cached (its output file and messages), keyed by the compilers'
versions, the command and the bytes of every file in the test's folder, under $TLC_TEST_CACHE
(default ~/.cache/tlc-tests; `TLC_TEST_CACHE=off` compiles everything).  Generated sources are
self-contained (the primitives are inlined), so a key that matches compiles the same; a failed
compilation is never cached; cuobjdump's SASS of a cubin is cached by the cubin's bytes.
Entries unused for 30 days are removed."""
from __future__ import annotations

import functools
import hashlib
import json
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from tlc.runtime.compile import cuda_toolkit_nvcc

NVCC = cuda_toolkit_nvcc()
NO_TOOLKIT = ("nvcc test: no CUDA toolkit: nvcc is not on PATH, in $CUDA_HOME/bin, $CUDA_PATH/bin, "
              "/usr/local/cuda/bin or /usr/local/cuda-*/bin")

ARCH_FLAGS = {"sm_80": ["-arch=sm_80"], "sm_86": ["-arch=sm_86"], "sm_89": ["-arch=sm_89"], "sm_90a": ["-gencode=arch=compute_90a,code=sm_90a"]}
# A build test's targets: sm_90a in the default run and sm_80 in the slow run, which CI also
# makes; the README's run must stay under 5 minutes on 2 cores and sm_80's builds of the same
# module repeat most of sm_90a's nvcc work (examples and sm_80-only paths keep both by default).
BUILD_ARCHS = [pytest.param("sm_80", marks=pytest.mark.slow), "sm_90a"]
UNUSED_FOR = 30 * 24 * 3600  # seconds after which a cache entry is removed
CWD = "{cwd}"  # the test's folder in keys (commands, sources) and cached messages: not tied to a tmp_path


def nvcc(args, cwd) -> subprocess.CompletedProcess:
    """nvcc with warnings as errors on `args`, run in `cwd`; the outputs named by `-o` come from
    the cache when the same command on the same files has compiled before."""
    if NVCC is None:
        pytest.skip(NO_TOOLKIT)
    cmd = [NVCC, "-std=c++17", "-Werror", "all-warnings", *map(str, args)]
    cwd = Path(cwd)
    output = _output_path(cmd, cwd)
    entry = _entry(cmd[1:], cwd, output) if output is not None and cache_root() is not None else None
    if entry is not None and (entry / "result.json").exists():
        result = json.loads((entry / "result.json").read_text())
        shutil.copy(entry / "output", output)  # with its mode: run_host runs it
        os.utime(entry)  # used: kept another 30 days
        return subprocess.CompletedProcess(cmd, 0, result["stdout"].replace(CWD, str(cwd)),
                                           result["stderr"].replace(CWD, str(cwd)))
    res = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=300)
    if entry is not None and res.returncode == 0:
        _store(entry, output, res, cwd)
    return res


@functools.cache
def cache_root() -> Path | None:
    where = os.environ.get("TLC_TEST_CACHE")
    if where == "off":
        return None
    root = Path(where) if where else Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "tlc-tests"
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError:
        return None  # an unwritable home: compile everything
    now = time.time()
    for old in root.iterdir():
        try:
            if now - old.stat().st_mtime > UNUSED_FOR:
                shutil.rmtree(old) if old.is_dir() else old.unlink()
        except OSError:  # another worker removed it first
            pass
    return root


@functools.cache
def compiler_versions() -> str:
    """nvcc's version, and the host compiler's it calls (host code is compiled with -Werror too)."""
    out = []
    for exe in (NVCC, shutil.which("g++") or shutil.which("c++")):
        if exe:
            out.append(subprocess.run([exe, "--version"], capture_output=True, text=True, timeout=60).stdout)
    return "\n".join(out)


def _output_path(cmd: list[str], cwd: Path) -> Path | None:
    if "-o" not in cmd[:-1]:
        return None
    return cwd / cmd[cmd.index("-o") + 1]  # an absolute -o stays itself


def _entry(args: list[str], cwd: Path, output: Path) -> Path:
    h = hashlib.sha256(compiler_versions().encode())
    h.update(json.dumps([a.replace(str(cwd), CWD) for a in args]).encode())
    for f in sorted(cwd.iterdir()):
        # not the output of an earlier run of the command, which -o overwrites: a test that
        # builds the same file twice in its folder (its counts, then its SASS) builds it once
        if f.is_file() and f != output:
            data = f.read_bytes().replace(str(cwd).encode(), CWD.encode())  # a #line naming a .tl in tmp_path
            h.update(f"\0{f.name}\0{len(data)}\0".encode())
            h.update(data)
    return cache_root() / h.hexdigest()[:32]


def _store(entry: Path, output: Path, res: subprocess.CompletedProcess, cwd: Path) -> None:
    """Written into a fresh folder and renamed into place: concurrent runs never see half an entry."""
    tmp = None
    try:
        tmp = Path(tempfile.mkdtemp(dir=entry.parent, prefix=".new-"))
        shutil.copy(output, tmp / "output")
        result = {"stdout": res.stdout.replace(str(cwd), CWD), "stderr": res.stderr.replace(str(cwd), CWD)}
        (tmp / "result.json").write_text(json.dumps(result))
        os.rename(tmp, entry)
    except OSError:  # another run stored it first, or the disk is full: the compile stands
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)


def compile_object(source: str, arch: str, tmp_path, name: str = "k") -> str:
    path = tmp_path / f"{name}.cu"
    path.write_text(source)
    res = nvcc([*ARCH_FLAGS[arch], "-Xptxas", "-v", "-c", str(path), "-o", str(tmp_path / f"{name}.o")], tmp_path)
    assert res.returncode == 0, res.stderr[-4000:]
    return res.stderr


def compile_kernels(checked, names, arch: str, tmp_path) -> str:
    """The kernels `names` of a checked program (`check_file`'s result), each scheduled for
    `arch` with its defaults, generated into one file and built by `compile_object`; the log."""
    from tlc.codegen import generate_file
    from tlc.schedule import schedule

    kernels = [schedule(checked.program, name, {}, target=arch) for name in names]
    return compile_object(generate_file(kernels, arch, sources=checked.sources), arch, tmp_path)


def compile_device(source: str, arch: str, tmp_path, name: str = "k") -> str:
    """The device half of `compile_object`: `source` to a cubin (warnings as errors, ptxas
    verbose), without the host pass (cudafe++ and g++ on the launchers, about 40% of a build).
    For tests about device code; every example and std module, and the tests about launchers,
    build both halves with `compile_object`.  The ptxas log."""
    path = tmp_path / f"{name}.cu"
    path.write_text(source)
    # cubin_sass's command (names relative to the folder): a test of the log and one of the
    # SASS of the same source share one build through the cache
    res = nvcc([*ARCH_FLAGS[arch], "-Xptxas", "-v", "-cubin", f"{name}.cu", "-o", f"{name}.cubin"], tmp_path)
    assert res.returncode == 0, res.stderr[-4000:]
    return res.stderr


def cuobjdump() -> str:
    """cuobjdump on PATH, beside nvcc, or from the nvidia-cuda-cuobjdump wheel (a test extra,
    so a missing one is a failure)."""
    found = shutil.which("cuobjdump")
    if found:
        return found
    if NVCC and (Path(NVCC).parent / "cuobjdump").exists():
        return str(Path(NVCC).parent / "cuobjdump")
    try:
        import nvidia
    except ImportError:
        nvidia = None
    for root in getattr(nvidia, "__path__", []):
        for p in Path(root).glob("cu*/bin/cuobjdump"):
            return str(p)
    raise AssertionError("cuobjdump not found: pip install '.[test]' brings it (nvidia-cuda-cuobjdump)")


def cubin_sass(source: str, arch: str, tmp_path, name: str = "k") -> tuple[str, str]:
    """`source` compiled to a cubin (warnings as errors, ptxas verbose): (its SASS, the ptxas log)."""
    (tmp_path / f"{name}.cu").write_text(source)
    res = nvcc([*ARCH_FLAGS[arch], "-Xptxas", "-v", "-cubin", f"{name}.cu", "-o", f"{name}.cubin"], tmp_path)
    assert res.returncode == 0, res.stderr[-4000:]
    return sass_of(tmp_path / f"{name}.cubin"), res.stderr


def sass_of(cubin: Path) -> str:
    """cuobjdump -sass of `cubin`, cached beside nvcc's outputs by the cubin's bytes."""
    tool = cuobjdump()
    key = hashlib.sha256(cubin.read_bytes() + tool.encode()).hexdigest()[:32]
    cached = cache_root() / f"sass-{key}.txt" if cache_root() is not None else None
    if cached is not None and cached.exists():
        os.utime(cached)
        return cached.read_text()
    dump = subprocess.run([tool, "-sass", str(cubin)], capture_output=True, text=True, timeout=120)
    assert dump.returncode == 0, dump.stderr
    if cached is not None:
        with tempfile.NamedTemporaryFile("w", dir=cached.parent, prefix=".new-", delete=False) as f:
            f.write(dump.stdout)
        os.replace(f.name, cached)
    return dump.stdout


def run_host(source: str, tmp_path, name: str = "host", arch: str = "sm_80") -> str:
    """A host program (the tl:: primitives' __host__ __device__ parts with a main) built with
    the CUDA headers and run here; its standard output."""
    (tmp_path / f"{name}.cu").write_text(source)
    res = nvcc([*ARCH_FLAGS[arch], f"{name}.cu", "-o", name], tmp_path)
    assert res.returncode == 0, res.stderr[-3000:]
    return subprocess.run([str(tmp_path / name)], capture_output=True, text=True, check=True).stdout
