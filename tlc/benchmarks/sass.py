"""Evidence from the machine code a benchmark ran: tensor-core instructions and local-memory
traffic in a cubin's SASS, read with cuobjdump.

cuobjdump is taken from PATH, else from the NVIDIA wheels on sys.path (nvidia/cu13/bin,
nvidia/cuda_cuobjdump/bin); without one, or for a binary that is PTX rather than a cubin, the
answer says "unknown" and why, never a guess.
"""
from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from ..runtime.compile import cuda_toolkit_nvcc

# HGMMA: wgmma on f16/bf16/tf32, QGMMA: on fp8, IGMMA: on int8; HMMA/IMMA: mma.sync;
# LDL/STL: loads and stores of local memory (spills, or arrays the compiler could not keep in registers)
COUNTED = ("HGMMA", "QGMMA", "IGMMA", "HMMA", "IMMA")
_WHEEL_DIRS = ("nvidia/cu13/bin", "nvidia/cuda_cuobjdump/bin", "nvidia/cu12/bin")


def find_cuobjdump() -> str | None:
    found = shutil.which("cuobjdump")
    if found:
        return found
    for entry in sys.path:
        for sub in _WHEEL_DIRS:
            p = Path(entry or ".") / sub / "cuobjdump"
            if p.is_file():
                return str(p)
    return None


def evidence(binary: bytes, tool: str | None = None) -> dict:
    """{"HGMMA": n, ..., "LDL/STL": n} for a cubin, or {"unknown": why}."""
    if not binary.startswith(b"\x7fELF"):
        return {"unknown": "the binary is PTX, not a cubin (the driver compiles it at load)"}
    tool = tool or find_cuobjdump()
    if tool is None:
        return {"unknown": "no cuobjdump on PATH or in the NVIDIA wheels"}
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "k.cubin"
        path.write_bytes(binary)
        res = subprocess.run([tool, "-sass", str(path)], capture_output=True, text=True, timeout=120)
    if res.returncode != 0:
        return {"unknown": f"cuobjdump failed: {res.stderr.strip()[:200]}"}
    return count(res.stdout)


def evidence_of_source(source: str, arch: str, tool: str | None = None) -> dict:
    """The same for the kernel's CUDA source compiled by nvcc (what a user embedding the .cu
    gets): the fallback when cuobjdump cannot read the runtime's NVRTC binary."""
    nvcc = cuda_toolkit_nvcc()
    tool = tool or find_cuobjdump()
    if nvcc is None or tool is None:
        return {"unknown": "no nvcc or cuobjdump to compile and read the source"}
    flags = ["-gencode=arch=compute_90a,code=sm_90a"] if arch == "sm_90a" else [f"-arch={arch}"]
    with tempfile.TemporaryDirectory() as d:
        cu, cubin = Path(d) / "k.cu", Path(d) / "k.cubin"
        cu.write_text(source)
        res = subprocess.run([nvcc, "-std=c++17", *flags, "-cubin", "-o", str(cubin), str(cu)], capture_output=True,
                             text=True, timeout=300)
        if res.returncode != 0:
            return {"unknown": f"nvcc failed: {res.stderr.strip()[:200]}"}
        return evidence(cubin.read_bytes(), tool)


def count(sass: str) -> dict:
    out = {name: len(re.findall(rf"\b{name}\b", sass)) for name in COUNTED}
    out["LDL/STL"] = len(re.findall(r"\b(?:LDL|STL)\b", sass))
    return out


def summary(e: dict) -> str:
    if "unknown" in e:
        return f"SASS unknown ({e['unknown']})"
    parts = [f"{n} {name}" for name, n in e.items() if n and name != "LDL/STL"] or ["no tensor-core instructions"]
    return ", ".join(parts) + f", {e['LDL/STL']} LDL/STL"
