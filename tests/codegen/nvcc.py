"""Running nvcc from tests: compile generated code for a target with warnings as errors.
Every machine that runs the suite has nvcc (CI included), so a missing one is a failure."""
import shutil
import subprocess

NVCC = shutil.which("nvcc")

ARCH_FLAGS = {"sm_80": ["-arch=sm_80"], "sm_90a": ["-gencode=arch=compute_90a,code=sm_90a"]}


def nvcc(args, cwd) -> subprocess.CompletedProcess:
    assert NVCC is not None, "nvcc is not on PATH; the codegen tests compile generated CUDA with it"
    return subprocess.run([NVCC, "-std=c++17", "-Werror", "all-warnings", *args], cwd=cwd, capture_output=True,
                          text=True, timeout=300)


def compile_object(source: str, arch: str, tmp_path, name: str = "k") -> str:
    path = tmp_path / f"{name}.cu"
    path.write_text(source)
    res = nvcc([*ARCH_FLAGS[arch], "-Xptxas", "-v", "-c", str(path), "-o", str(tmp_path / f"{name}.o")], tmp_path)
    assert res.returncode == 0, res.stderr[-4000:]
    return res.stderr



def cuobjdump() -> str:
    """cuobjdump on PATH, beside nvcc, or from the nvidia-cuda-cuobjdump wheel (a test extra,
    so a missing one is a failure, as a missing nvcc is)."""
    from pathlib import Path

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
    dump = subprocess.run([cuobjdump(), "-sass", str(tmp_path / f"{name}.cubin")], capture_output=True, text=True,
                          timeout=120)
    assert dump.returncode == 0, dump.stderr
    return dump.stdout, res.stderr


def run_host(source: str, tmp_path, name: str = "host", arch: str = "sm_80") -> str:
    """A host program (the tl:: primitives' __host__ __device__ parts with a main) built with
    the CUDA headers and run here; its standard output."""
    (tmp_path / f"{name}.cu").write_text(source)
    res = nvcc([*ARCH_FLAGS[arch], f"{name}.cu", "-o", name], tmp_path)
    assert res.returncode == 0, res.stderr[-3000:]
    return subprocess.run([str(tmp_path / name)], capture_output=True, text=True, check=True).stdout
