"""The emitted .cu stands alone: with its header, a C++ program calls the launcher, and nvcc
builds and links it (no GPU needed); on a GPU it runs and agrees with the CPU."""
import subprocess
from pathlib import Path

import pytest

from tlc.codegen import generate_file, header
from tlc.driver import check_file
from tlc.schedule import schedule
from kit_codegen import EXAMPLES
from nvcc import nvcc

MAIN = Path(__file__).parent / "embed" / "main.cpp"


def build(tmp_path, arch_flag="-arch=sm_80") -> Path:
    r = check_file(str(EXAMPLES / "vector_add.tl"))
    kernels = [schedule(r.program, k.name, {}) for k in r.program.kernels()]
    (tmp_path / "vector_add.cu").write_text(generate_file(kernels, "sm_80", sources=r.sources))
    (tmp_path / "vector_add.h").write_text(header(kernels, "sm_80", "vector_add.cu", "examples/vector_add.tl"))
    (tmp_path / "main.cpp").write_text(MAIN.read_text())
    res = nvcc([arch_flag, "main.cpp", "vector_add.cu", "-o", "prog"], tmp_path)
    assert res.returncode == 0, res.stderr[-3000:]
    return tmp_path / "prog"


def test_embedding_program_builds_and_links(tmp_path):
    assert build(tmp_path).exists()


@pytest.mark.gpu
def test_embedding_program_runs_and_agrees(tmp_path):
    prog = build(tmp_path, "-arch=native")
    res = subprocess.run([str(prog)], capture_output=True, text=True)
    assert res.returncode == 0, res.stdout + res.stderr
