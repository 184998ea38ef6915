"""tests/programs/cumsum.tl (cumsum over shared and fragment tiles, buffers allocated inside an
if and a loop) generated for sm_80 and sm_90a and compiled by nvcc with warnings as errors; and
what the schedule and the generated code do with it: a fragment's scan goes through a shared
scratch between barriers, a buffer allocated in an if takes the bytes of one whose uses ended
before it, and the scan's call carries the decisions (tile view, accumulator, layouts)."""
from __future__ import annotations

import pathlib

import pytest

from nvcc import BUILD_ARCHS, compile_device
from tlc import ir, runner
from tlc.api import load

PROGRAM = pathlib.Path(__file__).resolve().parents[1] / "programs" / "cumsum.tl"


@pytest.mark.nvcc
@pytest.mark.parametrize("arch", BUILD_ARCHS)
def test_every_kernel_compiles_with_werror(arch, tmp_path):
    # the device half, what the program is about (the scans, the buffers' bytes); its launchers are plain
    compile_device(runner.build(str(PROGRAM), arch=arch)[0], arch, tmp_path)


def scheduled(name: str, **constants) -> ir.Kernel:
    return load(str(PROGRAM), target="cpu").kernels[name].scheduled(constants, "sm_80")


def test_a_fragment_scan_goes_through_a_shared_scratch_between_barriers():
    k = scheduled("fragment_columns")
    text = ir.print_kernel(k)
    assert "shared tile_scan: f32[48, 16]" in text  # the destination's dtype: sums in f32
    assert ("  copy tile -> tile_scan\n  sync\n  cumsum tile_scan -> tile_scan dim=0 reverse\n  sync\n"
            "  copy tile_scan -> sums\n") in text


def test_a_buffer_allocated_in_an_if_reuses_the_bytes_of_an_earlier_one():
    k = scheduled("reused_after_branch")
    offsets = {b.name: b.smem_offset for b in k.buffers if b.scope == "shared"}
    assert offsets == {"early": 0, "late": 0}
    assert k.smem_bytes == 2304  # one [16, 32] f32 tile with its padding, not two


def test_buffers_of_the_two_branches_of_an_if_share_bytes():
    k = scheduled("branches_share_bytes")
    offsets = {b.name: b.smem_offset for b in k.buffers if b.scope == "shared"}
    assert offsets == {"up": 0, "down": 0} and k.smem_bytes == 2304


def test_tiles_allocated_inside_a_pipelined_loop_are_staged():
    k = scheduled("staged_in_a_pipelined_loop")
    assert {b.name: b.layout.stages for b in k.buffers if b.scope == "shared"} == {"As": 3, "Bs": 3}


def test_the_scan_call_carries_the_tile_view_and_the_accumulator():
    text = runner.build(str(PROGRAM), kernels=["shared_to_shared_ints", "shared_rows"])[0]
    # i32 into i64: summed in 64-bit unsigned (wrapping); one line of 256; 40 threads
    assert "tl::cumsum_shared<tl::ScanOp::sum, unsigned long long, int, long long, 1, 256, 1, false, 40, 1, 256, 0, 0, 0, 0>(dst, src);" in text
    # dim 1 of [8, 80]: 8 lines of 80 (rows of 320 bytes: no padding)
    assert "tl::cumsum_shared<tl::ScanOp::sum, float, float, float, 8, 80, 1, false, 128, 8, 80, 0, 0, 0, 0>(tile, tile);" in text


def test_products_maxima_and_minima_take_their_op_and_accumulator():
    text = runner.build(str(PROGRAM), kernels=["other_scans"])[0]
    # f32 rows of 256: products and maxima in float; i32 minima in int (signed), not unsigned
    assert "tl::cumsum_shared<tl::ScanOp::prod, float, float, float, 4, 256, 1, false, 64, 4, 256, 4, 0, 4, 0>" in text
    assert "tl::cumsum_shared<tl::ScanOp::max, float, float, float, 4, 256, 1, false, 64, 4, 256, 4, 0, 4, 0>" in text
    assert "tl::cumsum_shared<tl::ScanOp::min, int, int, int, 1, 4, 256, false, 64, 4, 256, 4, 0, 4, 0>(ints, ints);" in text


def test_a_fragment_scanned_along_its_rows_stays_in_registers():
    """schedule/scan_registers.py: a f32 fragment's rows, i32 sums, f16 maxima and a gemm
    accumulator scan in place with no shared copy; a f16 sum (rounded once, from f32) takes one."""
    assert [b.scope for b in scheduled("fragment_rows").buffers] == ["fragment"]
    assert "  cumsum tile -> tile dim=1 reverse\n" in ir.print_kernel(scheduled("fragment_rows", reverse=True))
    kinds = ir.print_kernel(scheduled("fragment_row_kinds"))
    assert "shared" not in kinds and "  cummax hi -> hi dim=1\n" in kinds and "  cumsum n -> n dim=1\n" in kinds
    assert not [b for b in scheduled("accumulator_rows").buffers if b.name.startswith("acc_")]
    text = ir.print_kernel(scheduled("fragment_rows_f16_sums"))
    assert "shared tile_scan: f16[4, 128]" in text
    assert "  copy tile -> tile_scan\n  sync\n  cumsum tile_scan -> tile_scan dim=1\n  sync\n  copy tile_scan -> tile\n" in text


def test_the_fragment_scan_call_and_a_one_column_exchange():
    """The scan's call names the layout and the runs' totals (8 rows of 256 / 4 runs); the
    carry's loop reads one column of the tile, so only that column goes to shared memory."""
    text = runner.build(str(PROGRAM), kernels=["fragment_rows", "fragment_rows_carried"])[0]
    assert ("tl::cumsum_fragment<tl::ScanOp::sum, float, tl_fragment_rows_layout_0, 8, 256, false, 64>(tile, "
            "reinterpret_cast<float*>(tl_smem + 0 + tl_red_phase * TL_RED_STRIDE));  // its runs' totals: 8 x 64") in text
    assert "tl::exchange_f2s_column<tl_fragment_rows_carried_layout_0, float, 64>(reinterpret_cast<float*>(tl_smem + 0), tile, 63);" in text
    assert "tl::exchange_f2s<tl_fragment_rows_carried_layout_0" not in text
