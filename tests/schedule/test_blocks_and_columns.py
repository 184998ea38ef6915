"""The scheduler's counts behind two decisions of issue #17's plain kernels: which blocked
layout splits a column-reduced tile's columns over the threads (layout_flow.column_split),
and the registers a register-resident kernel holds at once (blocks_per_sm.py)."""
from __future__ import annotations

import pytest

import tlc
from tlc.dtypes import BF16, F16, F32
from tlc.schedule.blocks_per_sm import column_vector_registers, live_fragment_registers, loads_in_flight
from tlc.schedule.layout_flow import column_holders, column_split


@pytest.mark.parametrize("shape, dtype, threads, itemsize, vec, holders", [
    ((32, 256), F32, 256, None, 1, 1),     # column_sums: thread t holds column t
    ((8, 256), BF16, 128, None, 2, 1),     # std.reduce's column tile: two columns a thread
    ((16, 2048), F16, 256, None, 8, 1),    # wide enough for 16-byte runs of whole columns
    ((8, 2048), F32, 256, 2, 8, 1),        # an f32 tile copied from f16: runs of 8
    ((8, 64), F32, 256, None, 1, 4),       # narrower than the block: the fewest holders
    ((8, 96), F32, 256, None, 4, 8),       # every width gives 8 holders: the widest runs
])
def test_column_split_picks_the_runs_with_the_fewest_threads_a_column(shape, dtype, threads, itemsize, vec, holders):
    layout = column_split(shape, dtype, threads, itemsize)
    assert (layout.vec, column_holders(layout)) == (vec, holders)


SRC = """
@kernel
def k(x: f16[M, N], w: f32[N], y: f32[M, N]):
    with grid(M, threads=256) as r:
        row = fragment(f32[1, 2048])
        sq = fragment(f32[1, 2048])
        weight = fragment(f32[2048])
        ss = fragment(f32[1])
        copy(x[r, 0], row)
        for i, j in parallel(1, 2048):
            sq[i, j] = row[i, j] * row[i, j]
        reduce_sum(sq, ss, dim=1)
        copy(w[0], weight)
        for i, j in parallel(1, 2048):
            row[i, j] = row[i, j] * weight[j] / ss[0]
        copy(row, y[r, 0])
"""


def test_live_registers_hoist_loads_skip_streamed_tiles_and_hold_partials():
    """row, weight: 8 registers each at 256 threads; `sq` is written only for the reduction
    right after it (never held); weight's copy may be issued at the top (ptxas hoists loads),
    so row and weight are live together, with ss (1) and the reduction's partials (1).  (The
    f32 weights and output keep both in f32: narrow_fragments.py would hold an f16 row in 16
    bits.)"""
    k = tlc.compile_source(SRC, target="cpu").k.scheduled({}, "sm_90a")
    assert live_fragment_registers(k) == 8 + 8 + 1 + 1
    assert loads_in_flight(k) == 2 * 1  # one run of 8 a thread: one address
    # 18 + 2 + 12 = 32, under the least a thread is counted (ROW_MIN_REGISTERS, 40): 6 blocks
    assert k.min_blocks == 6 and k.notes[-1].startswith("blocks per SM: 6 (__launch_bounds__(256, 6)), as many as fit 40 ")


LOOPED = """
@kernel
def k(x: f32[M, N], out: f32[N]):
    with grid(cdiv(N, 256), threads=256) as bx:
        tile = fragment(f32[16, 256])
        acc = fragment(f32[256])
        clear(acc)
        for t in range(cdiv(M, 16)):
            copy(x[t * 16, bx * 256], tile)
            reduce_sum(tile, acc, dim=0, clear=False)
        copy(acc, out[bx * 256])
"""


def test_a_carried_accumulator_and_a_looped_four_byte_tile():
    """A column sum (column_blocks.py gives each block 32 columns and [128, 32] tiles in runs
    of 4): the partial acc_part (16) is carried around the loop beside the tile (16), with acc's
    4; the tile's 4 runs take 8 registers of addresses, fewer than the looped 4-byte tile (16)."""
    k = tlc.compile_source(LOOPED, target="cpu").k.scheduled({}, "sm_80")
    assert str(k.buffer("tile").layout) == "blocked(vec=4, threads=256)"
    assert k.buffer("tile").shape == (128, 32) and k.buffer("acc_part").shape == (128, 32)
    assert live_fragment_registers(k) == 16 + 16 + 4
    assert loads_in_flight(k) == 16


ROW_VECTORS = """
@kernel
def k(x: f16[M, 1024], g: f32[1024], b: f16[1024], out: f16[M, 1024]):
    with grid(cdiv(M, 2), threads=128) as bx:
        row = fragment(f16[2, 1024])
        copy(x[bx * 2, 0], row)
        for i, j in parallel(2, 1024):
            row[i, j] = f16(f32(row[i, j]) * g[j] + f32(b[j]) + f32(x[bx * 2 + i, j]))
        copy(row, out[bx * 2, 0])
"""


def test_row_vectors_read_at_the_column_are_held_a_column_slot_each():
    """g and b are read at the column only: a thread's two rows share its 8 columns, so g (f32)
    holds 8 registers and b (f16) 4, taken a run at a time and loaded by ptxas at the top (the
    tile op layernorm's g and b spilled 112 bytes on sm_80 uncounted); x read at its row too is
    an element a register of the loop, not held."""
    k = tlc.compile_source(ROW_VECTORS, target="cpu").k.scheduled({}, "sm_80")
    assert str(k.buffer("row").layout) == "blocked(vec=8, threads=128)"
    assert column_vector_registers(k) == 8 + 4


def test_the_tile_op_layernorm_counts_its_weights():
    """The tile op layernorm of rows of 1024 (a [2, 1024] tile at 128 threads): 36 registers of
    fragments, 16 of g and b, 12 besides: 64 a thread, 8 blocks an SM (10 spilled 112 bytes)."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parent / "tileops"))
    from tileops_kit import LAYERNORM

    op = tlc.compile_source("@tile_op" + LAYERNORM, target="cpu").layernorm
    assert [k.min_blocks for k in op.program({}, "sm_80", {}).kernels] == [8]


NN_CONFIGS = [{}, {"THREADS": 512}, {"BN": 1024, "THREADS": 128}, {"T": "f32"}]


@pytest.mark.nvcc
@pytest.mark.slow
@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_the_estimate_never_spills_in_std_nn_or_the_examples(arch, tmp_path):
    """ptxas -v at the blocks per SM the scheduler chose, for std.nn's row kernels left at
    BLOCKS=0 in several configurations and the register-resident examples (bench/plain's are
    checked by tests/plain's builds)."""
    import sys
    from pathlib import Path

    from tlc.codegen import generate

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "codegen"))
    from nvcc import compile_object

    root = Path(__file__).resolve().parents[2]
    nn = tlc.load("std.nn", target="cpu")
    kernels = [(getattr(nn, name), c) for name in ("softmax", "rms_norm", "layer_norm") for c in NN_CONFIGS]
    for stem in ("softmax", "layernorm", "vector_add"):
        module = tlc.load(str(root / "examples" / f"{stem}.tl"), target="cpu")
        kernels.append((getattr(module, stem), {}))
    for i, (fn, constants) in enumerate(kernels):
        k = fn.scheduled(constants, arch)
        assert k.min_blocks and k.notes[-1].startswith("blocks per SM: "), (fn.name, constants)
        log = compile_object(generate(k, arch).source, arch, tmp_path, f"k{i}")
        assert "0 bytes spill stores, 0 bytes spill loads" in log, (fn.name, constants, log)
