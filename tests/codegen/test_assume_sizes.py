"""A kernel tells NVRTC that its shape sizes are not negative (`__builtin_assume`, under
`__CUDACC_RTC__`: the runtime passes the sizes of real arrays; a C launcher's caller may pass
anything, so nvcc's build is left as it was).  nvcc then drops the sign fixups of `//` and `%`
by a size: std.attention's flash_decode combines its splits reading part_o[b, r // SQ, r % SQ]
(issue #15: a first call's NVRTC time follows the SASS it makes)."""
import re

import pytest

import tlc
from tlc.api import compile_source
from tlc.codegen import generate
from nvcc import cubin_sass

SOURCE = """\
@kernel
def rows(X: f32[B, S, N], Y: f32[B * S, N]):
    with grid(cdiv(B * S, 4), threads=128) as (bx,):
        for i, j in parallel(4, 32):
            r = bx * 4 + i
            Y[r, j] = X[r // S, r % S, j] if r < B * S else 0.0
"""


def kernel_text(source: str) -> str:
    return source.split("#endif  // TL_PRIMITIVES", 1)[1].split("#ifndef __CUDACC_RTC__", 1)[0]


def test_the_kernel_assumes_its_sizes_under_nvrtc_only():
    source = compile_source(SOURCE).rows.generated({}, "sm_90a").source
    assert "#ifdef __CUDACC_RTC__\n  __builtin_assume(B >= 0); __builtin_assume(S >= 0); " \
           "__builtin_assume(N >= 0);  // sizes of arrays\n#endif\n  const int bx = blockIdx.x;" in kernel_text(source)
    assert source.count("__builtin_assume(B >= 0)") == 1  # the kernel's, not the launcher's


def test_a_kernel_without_sizes_assumes_nothing():
    src = """\
@kernel
def fixed(X: f32[128], Y: f32[128]):
    with grid(1, threads=128) as (bx,):
        for i in parallel(128):
            Y[i] = X[i] * 2.0
"""
    assert "__builtin_assume" not in kernel_text(compile_source(src).fixed.generated({}, "sm_80").source)


def _instructions(sass: str) -> int:
    return len(re.findall(r"^\s+/\*[0-9a-f]{4,}\*/", sass, re.M))


@pytest.mark.nvcc
@pytest.mark.slow
def test_flash_decode_combine_is_smaller_with_the_sizes_assumed(tmp_path):
    """nvcc cannot define __CUDACC_RTC__ (CUDA's headers then miss NVRTC's own): the assumption
    is compiled in by dropping its guard, as NVRTC sees it; the combining grid's SASS shrinks
    (nvcc 13.0: 1,456 -> 1,040 instructions; NVRTC 13.0: 1,416 -> 1,048)."""
    fd = tlc.load("std.attention", target="cpu").flash_decode
    grid1 = fd.scheduled_grids({"D": 128}, "sm_90a")[1]
    source = generate(grid1, "sm_90a").source
    assumed = re.sub(r"#ifdef __CUDACC_RTC__\n(  __builtin_assume[^\n]*)\n#endif\n", r"\1\n", source)
    assert assumed != source
    guarded, _ = cubin_sass(source, "sm_90a", tmp_path, "guarded")
    unguarded, _ = cubin_sass(assumed, "sm_90a", tmp_path, "assumed")
    assert _instructions(unguarded) < 0.85 * _instructions(guarded), (_instructions(guarded), _instructions(unguarded))
    assert "LDL" not in unguarded and "STL" not in unguarded
