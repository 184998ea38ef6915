"""persistent(...) generated for sm_80 and sm_90a (tests/programs/persistent.tl): one module of
every kernel compiles with nvcc, warnings as errors (gemm_tiles on sm_90a as the grid of its
tiles, warp-specialized: tests/schedule/test_persistent_grid.py); `--emit ir` shows the walk
and a note; on sm_90a a pipelined gemm inside a walk that is not its tile grid is not
warp-specialized (the pass takes a pipelined loop at the top of the grid only) and keeps the
cp.async ring with wgmma, as the waves written by hand do."""
from pathlib import Path

import pytest

from tlc.codegen import generate
from tlc.driver import check_file
from tlc.ir import print_kernel
from tlc.schedule import schedule
from tlc.schedule.fit import schedule_fitting
from nvcc import BUILD_ARCHS, compile_kernels

PROGRAM = Path(__file__).resolve().parents[1] / "programs" / "persistent.tl"
KERNELS = ["walk", "walk_rows", "walk_cube", "walk_until", "gemm_relu", "gemm_tiles"]


def checked():
    r = check_file(str(PROGRAM))
    assert r.ok, r.diagnostics
    return r


@pytest.mark.nvcc
@pytest.mark.parametrize("arch", BUILD_ARCHS)
def test_every_kernel_compiles(arch, tmp_path):
    compile_kernels(checked(), KERNELS, arch, tmp_path)


def test_every_kernel_of_the_program_is_built():
    assert sorted(KERNELS) == sorted(f.name for f in checked().program.kernels())


def test_emit_ir_shows_the_walk_and_notes_it():
    text = print_kernel(schedule(checked().program, "walk", {}))
    assert ("  # note: line 11: persistent loop over (bx, by): a wave of 4 blocks walks tiles 4 apart from b, in "
            "groups of 8 along the last dimension (fewer where it has fewer tiles)\n") in text
    assert ("  let persistent_group_0: i32 = max(1, min(8, T1))\n"
            "  let persistent_waves_1: i32 = (((T1 - 1) // persistent_group_0 + 1) * T0 * persistent_group_0 - 1) // 4 + 1\n"
            "  for persistent_wave_2 in range(0, persistent_waves_1, 1):\n"
            "    let persistent_tile_3: i32 = persistent_wave_2 * 4 + b\n"
            "    let bx: i32 = persistent_tile_3 // persistent_group_0 % T0\n"
            "    let by: i32 = persistent_tile_3 // (persistent_group_0 * T0) * persistent_group_0 + "
            "persistent_tile_3 % persistent_group_0\n"
            "    if by < T1:\n") in text


PORT = Path(__file__).resolve().parents[1] / "ports" / "gemm_persistent.tl"


@pytest.mark.parametrize("arch", BUILD_ARCHS)
def test_a_pipelined_gemm_in_the_walk_runs_on_the_cp_async_ring(arch):
    """TileLang's persistent gemm: on sm_90a the same gemm without the walk is warp-specialized,
    with it the pass leaves the kernel alone and the ring of sm_80 feeds wgmma."""
    r = check_file(str(PORT))
    assert r.ok, r.diagnostics
    plain = schedule_fitting(r.program, "matmul_non_persistent", {}, target=arch, schedule=schedule)
    assert (plain.warp_spec is not None) == (arch == "sm_90a")
    kernel = schedule_fitting(r.program, "matmul_persistent", {"sm_num": 4}, target=arch, schedule=schedule)  # sm_80: fewer stages
    assert kernel.warp_spec is None
    assert "its pipelined loops are not warp-specialized" in print_kernel(kernel)
    source = generate(kernel, arch, sources=r.sources).source
    body = source[source.index("__global__"):]
    assert "stages: copies run" in body and "iterations ahead through cp.async" in body
    assert ("tl::gemm_wgmma<" in body) == (arch == "sm_90a")
    assert "for (int persistent_wave_" in body
