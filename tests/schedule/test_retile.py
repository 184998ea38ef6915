"""Which default tile constants the compiler may change (schedule/retile.py): only those whose
value the program's meaning does not depend on.  A K tile counted by the caller's own loop
bounds (TileLang's `T.Pipelined(k0, k1)`) or named in a parameter's shape keeps its default;
the GPU ran such a kernel with its K tile doubled for wgmma and summed the wrong columns."""
from __future__ import annotations

import pytest

from tlc.schedule import schedule
from tlc.schedule.fit import schedule_fitting
from tlc.schedule.retile import retileable

from kit import program

GEMM = """
@kernel
def matmul(A: f16[M, K], B: f16[K, N], C: f32[M, N], k0: i32, k1: i32, BM: const = 64, BN: const = 64,
           BK: const = 32):
    with grid(cdiv(N, BN), cdiv(M, BM), threads=128) as (bx, by):
        As = shared(f16[BM, BK])
        Bs = shared(f16[BK, BN])
        acc = fragment(f32[BM, BN])
        clear(acc)
        for k in LOOP:
            copy(A[by * BM, k * BK], As)
            copy(B[k * BK, bx * BN], Bs)
            gemm(As, Bs, acc)
        for i, j in parallel(BM, BN):
            C[by * BM + i, bx * BN + j] = acc[i, j]
"""


def function(src: str):
    return program(src).function("matmul").node


@pytest.mark.parametrize("loop, expected", [
    ("pipelined(cdiv(K, BK), stages=3)", True),      # every K tile from 0: any BK covers the same columns
    ("range(cdiv(K, BK))", True),
    ("pipelined(k0, k1, stages=3)", False),           # k0, k1 count tiles of the default BK
    ("range(1, cdiv(K, BK))", False),                 # skips the first BK columns
    ("range(cdiv(K, BK) - 1)", False),
])
def test_a_k_loop_from_zero_over_every_tile_may_take_another_k_tile(loop, expected):
    assert retileable(function(GEMM.replace("LOOP", loop)), "BK") is expected


def test_tile_sizes_used_as_grid_extents_and_element_loops_may_change():
    f = function(GEMM.replace("LOOP", "pipelined(cdiv(K, BK))"))
    assert retileable(f, "BM") and retileable(f, "BN")


@pytest.mark.parametrize("edit, name", [
    (("C[by * BM + i, bx * BN + j]", "C[by + i, bx * BN + j]"), "BM"),  # a block index used alone
    (("clear(acc)", "clear(acc)\n        s = BK + 1"), "BK"),             # the value itself, in arithmetic
    (("C: f32[M, N]", "C: f32[M, N // BN]"), "BN"),                    # a parameter shaped by the tile
])
def test_a_use_that_ties_the_meaning_to_the_value_keeps_it(edit, name):
    src = GEMM.replace("LOOP", "pipelined(cdiv(K, BK))").replace(*edit)
    assert not retileable(function(src), name)


def test_a_slices_end_counts_tiles_too():
    src = GEMM.replace("LOOP", "pipelined(cdiv(K, BK))").replace(
        "copy(A[by * BM, k * BK], As)", "copy(A[by * BM:(by + 1) * BM, k * BK:(k + 1) * BK], As)")
    assert retileable(function(src), "BK") and retileable(function(src), "BM")


def k_tile(loop: str) -> dict:
    kernel = schedule_fitting(program(GEMM.replace("LOOP", loop)), "matmul", {}, target="sm_90a", schedule=schedule)
    return dict(kernel.constants)["BK"], kernel.notes


def test_wgmma_grows_only_a_k_tile_the_meaning_does_not_depend_on():
    bk, notes = k_tile("pipelined(cdiv(K, BK), stages=3)")
    # grown to 64 for wgmma, then to 256 for the ring's lookahead (fit.ring_k_tile)
    assert bk == 256 and any("BK=64 (default 32): wgmma on sm_90a" in note for note in notes)
    bk, notes = k_tile("pipelined(k0, k1, stages=3)")
    assert bk == 32 and not any("wgmma on" in note for note in notes)


def test_shared_memory_fitting_shrinks_only_such_tiles_too():
    from tlc.schedule.fit import adjustable

    free = {"BM": 64, "BN": 64, "BK": 32}
    _, tiles = adjustable(function(GEMM.replace("LOOP", "pipelined(k0, k1, stages=3)")), {}, free)
    assert sorted(tiles) == ["BM", "BN"]
    _, tiles = adjustable(function(GEMM.replace("LOOP", "pipelined(cdiv(K, BK), stages=3)")), {}, free)
    assert sorted(tiles) == ["BK", "BM", "BN"]
