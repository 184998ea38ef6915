"""`tlc build --header`: the generated header compiles from C (gcc -std=c11 -Wall -Werror) as
well as from C++, its 16- and 8-bit float types opaque in C with the classes' size and
alignment; and the README's embedding lines (tlc build, nvcc for sm_90a, the C++ and the C
program linked against the object) run as written, read from README.md so that they cannot
drift from what the test runs."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from tlc import cli
from tlc.runtime.compile import cuda_toolkit_nvcc

ROOT = Path(__file__).resolve().parents[2]

# every dtype a launcher's pointer can have that is not a C type, and the scalars C must take
WIDTHS = """\
@kernel
def widths(a: f16[N], b: bf16[N], c: f8e4m3[N], d: f8e5m2[N], e: bool[N], f: i8[N], g: u64[N], out: f32[N],
           s: f16, u: bool, v: i64, BLOCK: const = 128):
    with grid(cdiv(N, BLOCK), threads=128) as bx:
        xs = fragment(f32[BLOCK])
        copy(a[bx * BLOCK], xs)
        copy(xs, out[bx * BLOCK])
"""

# a call of the launcher with each argument's type named, and the storage sizes C and C++ agree on
CALL = """\
#include "widths.h"
{assert_} (sizeof(half) == 2 && {alignof}(half) == 2, "f16 is 16 bits");
{assert_} (sizeof(__nv_bfloat16) == 2 && {alignof}(__nv_bfloat16) == 2, "bf16 is 16 bits");
{assert_} (sizeof(__nv_fp8_e4m3) == 1 && sizeof(__nv_fp8_e5m2) == 1, "f8 is 8 bits");
cudaError_t call(const half* a, const __nv_bfloat16* b, const __nv_fp8_e4m3* c, const __nv_fp8_e5m2* d,
                 const bool* e, const signed char* f, const unsigned long long* g, float* out, cudaStream_t stream) {{
    return launch_widths(a, b, c, d, e, f, g, out, 1.5f, true, 7, 1000, stream);
}}
"""


def cuda_include() -> Path:
    nvcc = cuda_toolkit_nvcc()
    if nvcc is None:
        pytest.skip("no CUDA toolkit: the header includes cuda_runtime.h")
    include = Path(nvcc).resolve().parent.parent / "include"
    if not (include / "cuda_runtime.h").exists():
        include = Path("/usr/local/cuda/include")
    return include


def compiler(name: str) -> str:
    found = shutil.which(name)
    if found is None:
        pytest.skip(f"no {name} on PATH")
    return found


@pytest.mark.parametrize("lang, cc, flags, assert_, alignof", [
    ("c", "gcc", ["-std=c11"], "_Static_assert", "_Alignof"),
    ("cpp", "g++", ["-std=c++17"], "static_assert", "alignof"),
])
def test_header_compiles_from_c_and_cpp(tmp_path, lang, cc, flags, assert_, alignof):
    (tmp_path / "widths.tl").write_text(WIDTHS)
    result = CliRunner().invoke(cli.main, ["build", str(tmp_path / "widths.tl"), "-o", str(tmp_path / "widths.cu"),
                                           "--header", str(tmp_path / "widths.h")])
    assert result.exit_code == 0, result.output
    (tmp_path / f"call.{lang}").write_text(CALL.format(assert_=assert_, alignof=alignof))
    res = subprocess.run([compiler(cc), *flags, "-Wall", "-Wextra", "-Werror", f"-I{cuda_include()}", "-c",
                          f"call.{lang}", "-o", "call.o"], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr


def readme_embedding_lines() -> list[str]:
    """The shell lines ("$ ...") of README.md's code block that writes a header."""
    blocks, block = [], None
    for line in (ROOT / "README.md").read_text().splitlines():
        if line.startswith("```"):
            block = [] if block is None else blocks.append(block)  # a fence opens a block or closes it
        elif block is not None:
            block.append(line)
    block = next(b for b in blocks if any("--header" in line for line in b))
    return [line[2:] for line in block if line.startswith("$ ")]


# the programs README's lines compile: a 64x64x64 gemm in f16 through launch_matmul, checked on
# the host (run by the GPU test; here they are compiled and linked)
MY_APP = """\
#include "gemm.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
{half_bits}
int main(void) {{
    enum {{ M = 64, K = 64, N = 64 }};
    unsigned short a[M * K], b[K * N], c[M * N];
    for (int i = 0; i < M * K; i++) a[i] = (i % 3) ? 0x3c00 : 0;    /* 1.0 or 0.0 */
    for (int i = 0; i < K * N; i++) b[i] = (i % 5) ? 0x4000 : 0x3c00; /* 2.0 or 1.0 */
    half *A, *B, *C;
    if (cudaMalloc((void**)&A, sizeof a) || cudaMalloc((void**)&B, sizeof b) || cudaMalloc((void**)&C, sizeof c)) {{
        printf("no device\\n");
        return 2;
    }}
    cudaMemcpy(A, a, sizeof a, cudaMemcpyHostToDevice);
    cudaMemcpy(B, b, sizeof b, cudaMemcpyHostToDevice);
    cudaError_t err = launch_matmul(A, B, C, M, K, N, 0);
    if (err == cudaSuccess) err = cudaMemcpy(c, C, sizeof c, cudaMemcpyDeviceToHost);
    if (err != cudaSuccess) {{
        printf("%s\\n", cudaGetErrorString(err));
        return 1;
    }}
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {{
            float want = 0;
            for (int k = 0; k < K; k++) want += ((i * K + k) % 3 ? 1.0f : 0.0f) * ((k * N + j) % 5 ? 2.0f : 1.0f);
            if (half_value(c[i * N + j]) != want) {{
                printf("C[%d, %d] = %g, want %g\\n", i, j, half_value(c[i * N + j]), want);
                return 1;
            }}
        }}
    printf("ok\\n");
    return 0;
}}
"""
# the results are integers below 2048, exact in f16: the bits decoded for normal numbers only
HALF_VALUE = """\
static float half_value(unsigned short h) {
    if ((h & 0x7fff) == 0) return 0.0f;
    int e = ((h >> 10) & 31) - 15;
    float m = 1.0f + (h & 1023) / 1024.0f;
    return e >= 0 ? m * (float)(1 << e) : m / (float)(1 << -e);
}
"""


def run_readme_lines(tmp_path: Path) -> None:
    """README's lines, in a folder holding examples/ and the two programs, with tlc and nvcc on
    PATH (the installed tlc beside this Python; the toolkit's nvcc)."""
    (tmp_path / "examples").symlink_to(ROOT / "examples")
    for name in ("my_app.cpp", "my_app.c"):
        (tmp_path / name).write_text(MY_APP.format(half_bits=HALF_VALUE))
    nvcc = cuda_toolkit_nvcc()
    path = os.pathsep.join([str(Path(sys.executable).parent), str(Path(nvcc).parent), os.environ.get("PATH", "")])
    if shutil.which("tlc", path=path) is None:  # tlc importable but not installed (a checkout on PYTHONPATH)
        shim = tmp_path / "bin" / "tlc"
        shim.parent.mkdir()
        shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m tlc.cli "$@"\n')
        shim.chmod(0o755)
        path = os.pathsep.join([str(shim.parent), path])
    for line in readme_embedding_lines():
        res = subprocess.run(["bash", "-c", line], cwd=tmp_path, capture_output=True, text=True, timeout=600,
                             env={**os.environ, "PATH": path})
        assert res.returncode == 0, f"{line}\n{res.stdout}{res.stderr}"


def test_readme_has_the_sm90a_embedding_lines():
    lines = readme_embedding_lines()
    assert any(line.startswith("tlc build ") and "--arch sm_90a" in line and "--header gemm.h" in line for line in lines)
    assert any(line.startswith("nvcc -gencode arch=compute_90a,code=sm_90a -c gemm.cu") for line in lines)
    assert any("my_app.cpp" in line for line in lines) and any("-std=c11" in line and "my_app.c " in line for line in lines)


@pytest.mark.nvcc
def test_readme_embedding_lines_build_as_written(tmp_path):
    run_readme_lines(tmp_path)
    assert (tmp_path / "my_app").exists() and (tmp_path / "my_app_c").exists()


@pytest.mark.gpu
@pytest.mark.nvcc
def test_readme_embedding_programs_compute_the_gemm(tmp_path):
    run_readme_lines(tmp_path)
    for program in ("my_app", "my_app_c"):
        res = subprocess.run([str(tmp_path / program)], capture_output=True, text=True, timeout=60)
        assert (res.returncode, res.stdout) == (0, "ok\n"), res.stderr
