"""tl/types.cuh's plain C functions compiled and run as host code by the system's C++ compiler:
the tests of its math (tl::fmod_fast, tl::fast_atan, ...) check the logic without a GPU, with
the hardware's approximations (rcp.approx, ex2.approx) stood in by the harness."""
from __future__ import annotations

import shutil
import subprocess

from tlc.package_data import templates

CXX = shutil.which("g++") or shutil.which("c++")


def header_functions(first: str, last: str, text: str | None = None) -> str:
    """tl/types.cuh (or `text`) from the definition of function `first` to the end of `last`'s,
    its device qualifiers dropped."""
    text = text if text is not None else (templates() / "tl" / "types.cuh").read_text()
    start = text.index(f"__device__ __forceinline__ float {first}")
    end = text.index("\n}\n", text.index(f"float {last}(")) + 3
    body = text[start:end]
    return body.replace("__device__", "").replace("__forceinline__", "inline").replace("__noinline__", "")


def run(source: str, tmp_path, name: str) -> str:
    """`source` built (-O2, no FMA contraction: fmaf where the C says so) and run; its stdout."""
    src = tmp_path / f"{name}.cpp"
    src.write_text(source)
    exe = tmp_path / name
    subprocess.run([CXX, "-O2", "-ffp-contract=off", "-o", str(exe), str(src)], check=True)
    return subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout
