"""Fragment layouts: every element has one owner thread (or its replicas), gemm accumulators
take the mma layout, reductions replicate, parallel loops follow their anchor fragment."""
import itertools

from tlc import ir
from tlc.dtypes import F16, F32
from tlc.schedule.layout import Blocked, MmaAccumulator, Replicated, blocked, mma_accumulator
from kit import GEMM, scheduled

SOFTMAX = """
@kernel
def softmax(X: f32[M, N], Y: f32[M, N], BM: const = 4, BN: const = 256):
    with grid(cdiv(M, BM), threads=128) as bx:
        x = fragment(f32[BM, BN])
        mx = fragment(f32[BM])
        sm = fragment(f32[BM])
        copy(X[bx * BM, 0], x)
        reduce_max(x, mx, dim=1)
        for i, j in parallel(BM, BN):
            x[i, j] = exp(x[i, j] - mx[i])
        reduce_sum(x, sm, dim=1)
        for i, j in parallel(BM, BN):
            x[i, j] = x[i, j] / sm[i]
        copy(x, Y[bx * BM, 0])
"""


def every_element_once(layout, shape, threads):
    seen = {}
    for idx in itertools.product(*(range(d) for d in shape)):
        t, r = layout.owner(idx)
        assert 0 <= t < threads
        assert (t, r) not in seen, (idx, seen[(t, r)])
        seen[(t, r)] = idx
    return seen


def test_mma_accumulator_covers_the_tile_once():
    acc = mma_accumulator((64, 128), 128)
    seen = every_element_once(acc, (64, 128), 128)
    assert len(seen) == 64 * 128 and acc.registers == 64 * 128 // 128


def test_mma_lane_pattern_of_one_piece():
    acc = MmaAccumulator((16, 8), 1, 1)
    assert acc.owner((0, 0)) == (0, 0) and acc.owner((0, 1)) == (0, 1)
    assert acc.owner((8, 0)) == (0, 2) and acc.owner((1, 2)) == (5, 0)


def test_blocked_uses_16_byte_runs():
    lay = blocked((4, 256), F16, 128)
    assert lay.vec == 8
    assert lay.owner((0, 0)) == (0, 0) and lay.owner((0, 7)) == (0, 7) and lay.owner((0, 8)) == (1, 0)
    every_element_once(lay, (4, 256), 128)


def test_gemm_accumulator_gets_mma_layout():
    k = scheduled(GEMM, "matmul")
    assert isinstance(k.buffer("acc").layout, MmaAccumulator)


def test_reduction_destination_is_replicated_over_its_row():
    k = scheduled(SOFTMAX, "softmax")
    x, mx = k.buffer("x").layout, k.buffer("mx").layout
    assert isinstance(x, Blocked)
    assert isinstance(mx, Replicated) and mx.base == x and mx.dropped == (1,)
    row_owners = {x.owner((2, j))[0] for j in range(256)}
    assert mx.owners((2,)) == row_owners


def test_odd_tile_falls_back_to_blocked():
    assert mma_accumulator((24, 8), 128) is None
