"""A reduction whose holders of each kept index split into equal blocks of warps, each block
holding every index once (the warpgroups side by side of a column-split wgmma accumulator:
MLA decode's 64 x 64 scores, each warpgroup 32 of a row's columns), meets in a scratch row a
block: the first lane of each group writes its row, one barrier, no initialization and no
atomics (before: a row combined by atomicCAS loops between two barriers).  What each slot holds
is C's and Python's alike (test_kept_slots); the GPU runs it in tests/gpu's MLA tests."""
from tlc.schedule.layout import MmaAccumulator, Replicated
from tlc.schedule.reduce_slots import slot_plan

SIDE_BY_SIDE = MmaAccumulator((64, 64), 4, 2, False, True)  # two warpgroups, 32 columns each


def test_rows_of_warpgroups_side_by_side_meet_in_two_scratch_rows():
    plan = slot_plan(Replicated(SIDE_BY_SIDE, (1,)), 256)
    assert (plan.mask, plan.complete, plan.warp_rows, plan.parts) == (3, False, False, 2)


def test_rows_over_warps_side_by_side_meet_in_a_row_a_warp():
    """mma.sync's 1 x 4 warps (sm_80): a row is in one quad of each warp."""
    plan = slot_plan(Replicated(MmaAccumulator((64, 128), 1, 4), (1,)), 128)
    assert (plan.mask, plan.parts) == (3, 4)


def test_bands_of_warps_side_by_side_keep_the_atomics():
    """2 x 2 warps: rows 0-31 in warps 0 and 1, 32-63 in 2 and 3; no block of consecutive warps
    holds every row once."""
    plan = slot_plan(Replicated(MmaAccumulator((64, 128), 2, 2), (1,)), 128)
    assert plan.parts == 0 and not plan.complete


def test_columns_of_warpgroups_side_by_side_keep_the_atomics():
    """A column is held by the 4 warps of one warpgroup and by none of the other: no block of
    warps holds every column once."""
    plan = slot_plan(Replicated(SIDE_BY_SIDE, (0,)), 256)
    assert plan.parts == 0 and not plan.complete
