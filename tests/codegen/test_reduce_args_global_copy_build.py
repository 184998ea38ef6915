"""tests/programs/reduce_args_global_copy.tl generated for sm_80 and sm_90a: one module of every
kernel compiles with nvcc, warnings as errors; a copy from global to global memory goes through
registers in vector runs (the copies every kernel has, which check alignment and the edges),
and element by element for a column or a tile too large to stage."""
from pathlib import Path

import pytest

from tlc.codegen import generate
from tlc.driver import check_file
from tlc.ir import print_kernel
from tlc.schedule import schedule
from nvcc import BUILD_ARCHS, compile_kernels

PROGRAM = Path(__file__).resolve().parents[1] / "programs" / "reduce_args_global_copy.tl"
KERNELS = ["row_stats", "column_sums", "copy_cast", "copy_picked", "copy_column", "copy_large", "copy_long_rows", "copy_slabs"]


def checked():
    r = check_file(str(PROGRAM))
    assert r.ok, r.diagnostics
    return r


def kernel_and_body(name: str, arch: str = "sm_80"):
    r = checked()
    kernel = schedule(r.program, name, {}, target=arch)
    source = generate(kernel, arch, sources=r.sources).source
    return print_kernel(kernel), source[source.index("__global__"):]


@pytest.mark.nvcc
@pytest.mark.parametrize("arch", BUILD_ARCHS)
def test_every_kernel_compiles(arch, tmp_path):
    compile_kernels(checked(), KERNELS, arch, tmp_path)


@pytest.mark.parametrize("arch", BUILD_ARCHS)
def test_a_global_copy_is_staged_in_vector_runs(arch):
    ir_text, body = kernel_and_body("copy_cast", arch)
    # 16 bytes of the narrower dtype (f16): runs of 8, two 16-byte f32 loads and one f16 store
    assert "fragment A_tile: f32[32, 64] layout=blocked(vec=8, threads=128)" in ir_text
    assert "copy A_tile -> B[by * 32, bx * 64]<32, 64>" in ir_text
    assert "tl::copy_g2f<" in body and "tl::copy_f2g<" in body


def test_single_indices_on_both_sides_stage_the_tile_they_leave():
    ir_text, _ = kernel_and_body("copy_picked")
    assert "fragment X_tile: i32[16, 24]" in ir_text
    assert "copy X[b, bx * 16, h, 0]<1, 16, 1, 24> -> X_tile" in ir_text
    assert "copy X_tile -> Y[h, b, bx * 16, 0]<1, 1, 16, 24>" in ir_text


@pytest.mark.parametrize("name, staged", [
    # 64 x 128 at 32 threads is 256 values a thread; bands of 16 rows are 64
    ("copy_large", "  fragment A_tile: bf16[16, 128] layout=blocked(vec=8, threads=32)\n"
                   "  for A_tile_band in range(0, 4, 1):\n"
                   "    copy A[by * 64 + A_tile_band * 16, bx * 128]<16, 128> -> A_tile\n"
                   "    copy A_tile -> B[by * 64 + A_tile_band * 16, bx * 128]<16, 128>"),
    # a [2, 16, 40] tile: its two [16, 40] tiles one after another
    ("copy_slabs", "  fragment X_tile: f32[16, 40] layout=blocked(vec=8, threads=64)\n"
                   "  for X_slab in range(0, 2, 1):\n"
                   "    copy X[by * 2 + X_slab, bx * 16, 0]<1, 16, 40> -> X_tile\n"
                   "    copy X_tile -> Y[by * 2 + X_slab, bx * 16, 0]<1, 16, 40>"),
])
def test_a_large_tile_or_one_of_rank_3_is_staged_a_part_at_a_time(name, staged):
    ir_text, body = kernel_and_body(name)
    assert staged in ir_text
    assert "tl::copy_g2f<" in body and "tl::copy_f2g<" in body


@pytest.mark.parametrize("name, loop", [
    ("copy_column", "O[b, bx * 32 + copy_0, h] = f64(G[b, bx * 32 + copy_0, h])"),
    ("copy_long_rows", "B[by * 2 + copy_0, bx * 4096 + copy_1] = A[by * 2 + copy_0, bx * 4096 + copy_1]"),
])
def test_a_column_or_rows_too_long_to_stage_are_copied_element_by_element(name, loop):
    ir_text, body = kernel_and_body(name)
    assert "fragment" not in ir_text and loop in ir_text
    assert "tl::copy_g2f<" not in body
