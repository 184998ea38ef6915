"""Tile atomics (tests/programs/tile_atomics.tl): atomic_add(..., order=(counts[i], turn)) waits
for its turn once per block around the tile's adds (the IR says so; the generated CUDA: one
thread's acquire spin then the block's barrier, the barrier then one thread's release count),
the interpreter adds in block order and counts every block; an mma accumulator's register pairs
go as one 8-byte vector red on sm_90a (codegen/atomic_pairs.py), one by one before it.
tests/gpu/test_tile_atomics_gpu.py runs both on the GPU."""
import re
from pathlib import Path

import numpy as np
import pytest

import tlc
from nvcc import cubin_sass
from tlc.driver import check_file
from tlc.ir.printer import print_kernel
from tlc.runner import build
from tlc.schedule import schedule_grids

PROGRAM = str(Path(__file__).resolve().parents[1] / "programs" / "tile_atomics.tl")


def ordered_inputs(seed=0, NB=5, R=100, C=130):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((NB, R, C)).astype(np.float32)
    want = np.zeros((R, C), np.float32)
    for b in range(NB):  # the blocks' adds in block order, each rounded to f32
        want = want + x[b]
    return x, want, (-(-R // 64), -(-C // 64))


def test_the_ir_waits_for_the_turn_around_the_adds():
    (k,) = schedule_grids(check_file(PROGRAM).program, "ordered_sum", {}, target="sm_90a")
    text = print_kernel(k)
    assert re.search(r"wait until counts\[rx, cx\] >= blk \(acquire\)\n\s+for atomic_add_i_0, atomic_add_j_1 in "
                     r"parallel\(64, 64\):\n\s+atomic_add Y\[.*\n\s+after the block's updates, counts\[rx, cx\] \+= 1 "
                     r"\(release\)", text), text


def test_the_interpreter_adds_in_block_order_and_counts_every_block():
    x, want, tiles = ordered_inputs()
    y = np.zeros(want.shape, np.float32)
    counts = np.zeros(tiles, np.int32)
    tlc.load(PROGRAM, target="cpu").ordered_sum(x, y, counts)
    assert np.array_equal(y, want) and (counts == x.shape[0]).all()


def test_the_cuda_meets_around_one_threads_acquire_and_release():
    source, _ = build(PROGRAM, kernels=("ordered_sum",), arch="sm_90a")
    body = source[source.index("tl::turn_wait(&counts"):]
    assert re.match(r"tl::turn_wait\(&counts\[[^\n]*\], blk\);\n\s*__syncthreads\(\);", body)
    done = source.index("tl::turn_done(&counts")
    before = r"__syncthreads\(\);  // the block's updates before its turn is counted\n\s*if \(threadIdx.x == 0\) [^\n]*$"
    assert re.search(before, source[:done])
    wait = source.index("tl::turn_wait(&counts")
    assert source[source.rindex("\n", 0, wait):wait].strip().startswith("if (threadIdx.x == 0)")


@pytest.mark.nvcc
@pytest.mark.parametrize("arch, pairs", [("sm_90a", True), ("sm_80", False)])
def test_split_k_adds_register_pairs_as_one_vector_red_on_sm90(arch, pairs, tmp_path):
    source, _ = build(PROGRAM, kernels=("splitk",), arch=arch)
    assert "tl::red_add_pair(&C[" in source
    sass, log = cubin_sass(source, arch, tmp_path, "splitk")
    assert ("REDG.E.ADD.F32x2" in sass) == pairs and " 0 bytes spill stores" in log


def splitk_inputs(seed, M, K, N):
    """f16 A and B of a split-K test, and their product in f64."""
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((M, K)).astype(np.float16)
    b = rng.standard_normal((K, N)).astype(np.float16)
    return a, b, a.astype(np.float64) @ b.astype(np.float64)


def test_split_k_on_the_interpreter_matches_numpy():
    a, b, want = splitk_inputs(1, 100, 300, 70)
    c = np.zeros(want.shape, np.float32)
    tlc.load(PROGRAM, target="cpu").splitk(a, b, c)
    assert np.abs(c - want).max() < 1e-4 * np.abs(want).max()


FUSED_BWD = str(Path(__file__).resolve().parents[2] / "bench" / "attention_bwd_fused.tl")


def test_a_warp_specialized_turn_works_under_the_products():
    """codegen/turns.py: in attention's one-grid backward (a warp-specialized ring whose step ends
    with an ordered add) the count is loaded and the last step's turn released right after the
    step's first two products issue, predicated (no branch under the wgmmas), the wait spins on
    the loaded count, the block's meeting after its adds stays, and the last turn is released
    after the loop, each release once the block's bulk adds are complete (codegen/bulk_reduce.py)."""
    source, _ = build(FUSED_BWD, kernels=("flash_bwd_fused",), defines=("D=128", "DETERMINISTIC=True"), arch="sm_90a")
    grid = source[source.index("flash_bwd_fused_grid1("):]
    loop = grid[grid.index("int* tl_turn_at = nullptr;"):]
    order = [loop.index(x) for x in ("(v_tile, (do_tile", "tl::bulk_turn_done_if(tl_turn_at, threadIdx.x == 0 && tl_turn_at",
                                     "tl_turn_seen = tl::turn_load(", "tl::turn_wait_from(", "tl_turn_at = (",
                                     "if (threadIdx.x == 0 && tl_turn_at != nullptr) { tl::tma_store_wait(); "
                                     "tl::turn_done(tl_turn_at); }  // the last turn")]
    assert order == sorted(order) and loop.count("tl::turn_done(") == 1 and "tl::turn_wait(" not in loop
    adds = loop[loop.rindex("tl::red_add_pair(", 0, order[4]):order[4]]
    assert "tl::bar_sync_named(5, 256);  // the block's updates before its turn is counted" in adds


@pytest.mark.nvcc
def test_the_turn_under_the_products_keeps_ptxas_from_waiting(tmp_path):
    source, _ = build(FUSED_BWD, kernels=("flash_bwd_fused",), defines=("D=128", "DETERMINISTIC=True"), arch="sm_90a")
    sass, log = cubin_sass(source, "sm_90a", tmp_path, "bwd")
    grid = dict(zip(*[iter(re.split(r"Function : (\w+)", sass)[1:])] * 2))["flash_bwd_fused_grid1"]
    assert "C7517" not in log and grid.count("MEMBAR.ALL.GPU") == 2  # the loop's and the last turn's
    first = grid.index("HGMMA.64x64x16.F32")
    assert "WARPGROUP.DEPBAR" not in grid[first:grid.index("MEMBAR.ALL.GPU", first)]  # 16 products issued, no wait
