"""A default K tile deep enough for a warp-specialized ring (schedule/fit.py ring_k_tile): where
the ring's stages keep less tensor-core work in flight than std.gemm's default tiles do, a K
tile the caller left at its default doubles until they keep as much (the plain gemm's 128 x 128
x 64 in 3 stages ran at 0.70x of the tuned kernel on the H200).  A given K tile, one the
program's meaning depends on, a skinny (memory-bound) tile and targets without the ring keep
theirs; growth stops where shared memory ends."""
from __future__ import annotations

from pathlib import Path

import tlc
from tlc.schedule import schedule
from tlc.schedule.fit import RING_LOOKAHEAD, ring_lookahead, schedule_fitting

from kit import GEMM, program

PORTS = Path(__file__).resolve().parents[1] / "ports"
RING_NOTE = ("BK=128 (default 32): the warp-specialized ring's 3 stages keep 2 K steps in flight ahead of the "
             "tensor cores, 2.1M multiply-adds at BK=64 (the K tile wgmma takes), too few to cover the TMA's "
             "latency (std.gemm's 128x256x64 tiles in 3 stages keep 4.2M); 4.2M at BK=128; give the constant "
             "to choose")


def fitted(constants: dict, target: str = "sm_90a"):
    return schedule_fitting(program(GEMM), "matmul", constants, target=target, schedule=schedule)


def bk(kernel) -> int:
    return dict(kernel.constants)["BK"]


def test_a_ring_short_of_work_in_flight_takes_a_deeper_k_tile():
    before = fitted({"BK": 64})
    assert ring_lookahead(before) == 2 * 128 * 128 * 64 < RING_LOOKAHEAD
    kernel = fitted({})
    assert bk(kernel) == 128 and ring_lookahead(kernel) == RING_LOOKAHEAD
    assert kernel.notes[-1] == RING_NOTE and kernel.warp_spec.stages == 3
    # the wgmma growth's note stays before it, the accumulator and its registers are unchanged
    assert kernel.notes[0].startswith("BK=64 (default 32): wgmma on sm_90a")
    assert [b.layout for b in kernel.buffers if b.scope == "fragment"] == \
        [b.layout for b in before.buffers if b.scope == "fragment"]


def test_enough_stages_or_a_given_k_tile_keep_it():
    kernel = fitted({"stages": 5})  # 4 x 128x128x64 in flight: as much as std.gemm's default
    assert bk(kernel) == 64 and ring_lookahead(kernel) == RING_LOOKAHEAD and not any("ring" in n for n in kernel.notes)
    kernel = fitted({"BK": 64})
    assert bk(kernel) == 64 and not kernel.notes


def test_std_gemms_default_tiles_are_the_measure_and_keep_theirs():
    gemm = tlc.load("std.gemm", target="cpu")
    kernel = gemm.matmul.scheduled({}, "sm_90a")
    assert bk(kernel) == 64 and ring_lookahead(kernel) == RING_LOOKAHEAD and not kernel.notes
    # a decode's 16-row tile streams the weight: memory sets its pace, not the tensor cores
    kernel = gemm.matmul_skinny.scheduled({}, "sm_90a")
    assert bk(kernel) == 128 and ring_lookahead(kernel) < RING_LOOKAHEAD and not kernel.notes


def test_growth_stops_where_shared_memory_ends():
    """64 x 64 tiles: BK=256 keeps 2 x 64x64x256 = 2.1M, still short, but BK=512 would need 384
    KB of stages."""
    kernel = fitted({"BM": 64, "BN": 64})
    assert bk(kernel) == 256 and ring_lookahead(kernel) < RING_LOOKAHEAD
    assert kernel.notes[-1].startswith("BK=256 (default 32): the warp-specialized ring's 3 stages")


def test_an_8_bit_multiply_add_counts_half():
    mod = tlc.load(str(PORTS / "gemm_fp8.tl"), target="cpu")
    kernel = mod.matmul.scheduled({}, "sm_90a")
    assert dict(kernel.constants)["block_K"] == 256  # 128 bytes grown to 256
    assert ring_lookahead(kernel) == 2 * 128 * 128 * 256 // 2 == RING_LOOKAHEAD


def test_no_ring_no_growth():
    assert bk(fitted({}, target="sm_80")) == 32


def test_the_deeper_ring_runs_as_numpy_says():
    """Ragged in M, N and K (two K steps of 128, the second partial), ring and all."""
    import numpy as np

    from tlc.interp import run_kernel

    kernel = fitted({})
    rng = np.random.default_rng(0)
    a = rng.standard_normal((70, 200)).astype(np.float16)
    b = rng.standard_normal((200, 150)).astype(np.float16)
    c = np.full((70, 150), np.nan, np.float16)
    run_kernel(kernel, {"A": a, "B": b, "C": c})
    ref = a.astype(np.float32) @ b.astype(np.float32)
    assert np.abs(c.astype(np.float32) - ref).max() <= 2e-3 * np.abs(ref).max()
