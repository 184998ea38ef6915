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


def cuobjdump() -> str | None:
    """cuobjdump on PATH, beside nvcc, or from the nvidia-cuda-cuobjdump wheel (a test extra)."""
    from pathlib import Path

    found = shutil.which("cuobjdump")
    if found:
        return found
    if NVCC and (Path(NVCC).parent / "cuobjdump").exists():
        return str(Path(NVCC).parent / "cuobjdump")
    try:
        import nvidia
    except ImportError:
        return None
    for root in nvidia.__path__:
        for p in Path(root).glob("cu*/bin/cuobjdump"):
            return str(p)
    return None
