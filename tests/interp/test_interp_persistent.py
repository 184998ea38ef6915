"""persistent(...), TileLang's T.Persistent, on the interpreter (tests/programs/persistent.tl):
every tile is visited once, by the block and in the order TileLang's walk gives it, for ragged
domains (the last extent not a multiple of the group), a group larger than the last extent,
one wave, one to three dimensions; `break` and `continue` leave the walk and the tile; a
persistent gemm matches NumPy.  tests/gpu/test_persistent_gpu.py runs these checks on the GPU."""
from pathlib import Path

import numpy as np
import pytest

import tlc

PROGRAM = Path(__file__).resolve().parents[1] / "programs" / "persistent.tl"


@pytest.fixture(scope="module")
def mod():
    return tlc.load(str(PROGRAM), target="cpu")


def tilelang_walk(domain, wave_size, index, group_size=8):
    """The tiles block `index` visits, in order: TileLang's PersistentFor (src/ir.cc at
    a35008a4) step by step, its early break included."""
    last = domain[-1]
    g = max(1, min(group_size, last))
    grouped = [-(-last // g), *domain[:-1], g]
    padded = int(np.prod(grouped))
    waves = -(-padded // wave_size)
    for w in range(waves):
        rem = w * wave_size + index
        if waves >= 2 and padded <= rem:
            break
        idxs = [0] * len(grouped)
        for i in range(len(grouped) - 1, 0, -1):
            idxs[i], rem = rem % grouped[i], rem // grouped[i]
        idxs[0] = rem
        last_coord = idxs[0] * g + idxs[-1]
        if last_coord < last:
            yield (*idxs[1:-1], last_coord)


def expected(domain, S, group_size=8):
    owner, step = np.full(domain, -1, np.int32), np.full(domain, -1, np.int32)
    visits = np.zeros(domain, np.int32)
    for b in range(S):
        for n, tile in enumerate(tilelang_walk(domain, S, b, group_size), 1):
            owner[tile], step[tile] = b, n
            visits[tile] += 1
    return owner, step, visits


def test_the_model_visits_every_tile_once():
    """The reference itself: no tile missed or repeated (else the walks below prove nothing)."""
    for domain, S, g in [((5, 7), 4, 8), ((3, 9), 2, 4), ((1, 1), 3, 8), ((2, 3, 5), 5, 16), ((11,), 3, 8)]:
        assert (expected(domain, S, g)[2] == 1).all()


# (tile rows, tile columns, blocks, group size): ragged groups, a group wider than the row, more
# blocks than tiles (one wave), one block, groups of one
WALKS = [(5, 7, 4, 8), (3, 9, 2, 4), (6, 10, 4, 3), (4, 4, 32, 2), (7, 3, 1, 1)]


@pytest.mark.parametrize("T0, T1, S, G", WALKS)
def test_each_block_walks_tilelangs_tiles_in_order(mod, T0, T1, S, G):
    owner, step = np.full((T0, T1), -1, np.int32), np.full((T0, T1), -1, np.int32)
    visits = np.zeros((T0, T1), np.int32)
    mod.walk(owner, step, visits, S=S, G=G)
    want_owner, want_step, want_visits = expected((T0, T1), S, G)
    np.testing.assert_array_equal(visits, want_visits)
    np.testing.assert_array_equal(owner, want_owner)
    np.testing.assert_array_equal(step, want_step)


def test_one_dimension_in_groups_of_eight(mod):
    owner, step = np.full(19, -1, np.int32), np.full(19, -1, np.int32)
    mod.walk_rows(owner, step)
    want_owner, want_step, _ = expected((19,), 3)
    np.testing.assert_array_equal(owner, want_owner)
    np.testing.assert_array_equal(step, want_step)


def test_three_dimensions_with_a_group_wider_than_the_last(mod):
    owner, visits = np.full((2, 3, 5), -1, np.int32), np.zeros((2, 3, 5), np.int32)
    mod.walk_cube(owner, visits)
    want_owner, _, want_visits = expected((2, 3, 5), 5, 16)
    np.testing.assert_array_equal(visits, want_visits)
    np.testing.assert_array_equal(owner, want_owner)


def test_break_leaves_the_walk_and_continue_the_tile(mod):
    owner = np.full((5, 6), -1, np.int32)
    mod.walk_until(owner, 3)
    want = np.full((5, 6), -1, np.int32)
    for b in range(4):
        for n, (bx, by) in enumerate(tilelang_walk((5, 6), 4, b, 2), 1):
            if n > 3:
                break
            if (bx + by) % 3:
                want[bx, by] = b
    np.testing.assert_array_equal(owner, want)


def relu_gemm_matches_numpy(kernel, M, N, K, seed):
    """kernel(A, B, C) writes relu(A @ B) into C (f16), every element."""
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((M, K)).astype(np.float16)
    B = rng.standard_normal((K, N)).astype(np.float16)
    C = np.full((M, N), np.nan, np.float16)
    kernel(A, B, C)
    ref = np.maximum(A.astype(np.float64) @ B.astype(np.float64), 0)
    np.testing.assert_allclose(C.astype(np.float64), ref, rtol=2e-2, atol=2e-2)


def test_a_persistent_gemm_matches_numpy(mod):
    relu_gemm_matches_numpy(mod.gemm_relu, 150, 200, 70, 20)  # 3 x 4 tiles of 64 x 64 over 3 blocks, all ragged


def test_a_persistent_gemm_as_its_tile_grid_matches_numpy(mod):
    """gemm_tiles: on sm_90a (and so on the H200) the grid of its tiles, warp-specialized
    (tests/schedule/test_persistent_grid.py); here the walk as written."""
    relu_gemm_matches_numpy(mod.gemm_tiles, 300, 270, 130, 21)  # 3 x 3 tiles of 128 x 128
