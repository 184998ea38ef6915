"""A tile's atomic add by the TMA's bulk reduction (tlc/codegen/bulk_reduce.py), in attention's
one-grid backward (bench/attention_bwd_fused.tl: the step's dQ partial into an f32 workspace):
where the launch encoded the map, the issuing thread waits until the last add of this step's
staging buffer (of two the steps take in turn) has read it before the consumers' last kept
meeting before the add, they stage the
accumulator, fence it for the TMA, (in turns: that thread waits for the turn,) meet, and one
thread adds it (4 boxes of 64 x 32 f32, one bulk group); else the per-thread reds and the
block's meetings around their turn.  The turn of an ordered add is counted once the bulk group
is complete.  tests/gpu/test_bulk_reduce_gpu.py runs it on the GPU."""
import re
from pathlib import Path

import pytest

from nvcc import cubin_sass
from tlc.runner import build

FUSED_BWD = str(Path(__file__).resolve().parents[2] / "bench" / "attention_bwd_fused.tl")


def _source(det: bool) -> str:
    return build(FUSED_BWD, kernels=("flash_bwd_fused",), defines=("D=128", f"DETERMINISTIC={det}"), arch="sm_90a")[0]


def _grid1(det: bool) -> str:
    source = _source(det)
    grid = source[source.index("flash_bwd_fused_grid1("):]
    return grid[:grid.index("launch_flash_bwd_fused_grid1")]


@pytest.mark.parametrize("det", [False, True])
def test_the_consumers_stage_the_tile_and_one_thread_adds_it(det):
    grid = _grid1(det)
    start = grid.index("if (tl_tma & 2) {  // the tile's add through shared memory: the TMA's bulk reduction")
    text = grid[start:grid.index("} else {", start)]
    turn = ["if (threadIdx.x == 0) if (b >= 0 && b < B && ((hk * G) + tl::floordiv<int>(it, nq)) >= 0 && ((hk * G) + "
            "tl::floordiv<int>(it, nq)) < H && qb >= 0 && qb < S) tl::turn_wait_from(&turns[((static_cast<long long>(b) * H + "
            "((hk * G) + tl::floordiv<int>(it, nq))) * S + qb)], turn, tl_turn_seen);  // the turn, before the meeting that "
            "ends the staging"] if det else []
    steps = ["float* tl_stage_r = reinterpret_cast<float*>(tl_smem + 149504 + (tl_it & 1) * 32768);  // this step's of "
             "two buffers",
             "tl::copy_f2s_staged<tl_flash_bwd_fused_grid1_layout_1, float, float, 64, 128>(tl_stage_r, dq);",
             "tl::fence_proxy_async();  // written by plain stores, read next by the TMA", *turn,
             "tl::bar_sync_named(5, 256);",
             "if (threadIdx.x == 0) tl::tma_store_tile<float, 64, 128, 64, 4, true>(&tl_map4, tl_stage_r, 0, 0, "
             "(qb * 64), {b, ((hk * G) + tl::floordiv<int>(it, nq))});"]
    assert [line.strip() for line in text.splitlines()[1:] if line.strip()] == steps
    # the last add of this step's buffer (of two: all but the last step's) has read it before
    # the consumers' last kept meeting before the add (dS's, before dQ's product): no meeting of
    # its own
    read = grid.index("if (threadIdx.x == 0) tl::bulk_wait_read<1>();  // the last bulk add of this step's buffer has "
                      "read it\n        tl::bar_sync_named(5, 256);  // sync: the consumers alone\n")
    assert read < grid.index("(ds_s, k_tile, dq);") < start and grid.count("bulk_wait_read<") == 1
    # without the map: the reds as before, the block meeting around their turn
    assert "tl::red_add_pair(&dq_acc[" in grid[start:]
    assert grid.count("turn_done") == (2 if det else 0)
    assert grid.count("if (!(tl_tma & 2)) {  // (else the bulk add's thread waits for the turn: bulk_reduce.py)") == \
        (2 if det else 0)
    end = "if (threadIdx.x == 0) tl::tma_store_wait();  // the last bulk adds are done"
    assert grid.count(end) == 1 and grid.index(end) > grid.index("tl_map4, tl_stage_r")


def test_a_turn_is_counted_once_its_bulk_adds_are_complete():
    grid = _grid1(True)
    assert re.search(r"tl::bulk_turn_done_if\(tl_turn_at, threadIdx.x == 0 && tl_turn_at != nullptr\);", grid)
    assert "if (threadIdx.x == 0 && tl_turn_at != nullptr) { tl::tma_store_wait(); tl::turn_done(tl_turn_at); }" in grid


@pytest.mark.nvcc
def test_the_add_is_the_tmas_and_nothing_spills(tmp_path):
    # the build of launches whose maps all encode (the runtime's: TL_TMA_FLAGS); the generic
    # one, with the reds' path and its turn's meetings beside, spills 8 bytes
    sass, log = cubin_sass("#define TL_TMA_FLAGS 3\n" + _source(True), "sm_90a", tmp_path, "bwd_bulk")
    assert sass.count("UTMAREDG.4D.ADD") == 4 and "C7517" not in log and log.count(" 0 bytes spill stores") == 3
