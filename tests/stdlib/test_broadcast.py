"""std.broadcast against NumPy, one table (broadcast_kit.OPS): every operator on the interpreter at
operand shapes that broadcast along each dimension, none, all but one, and both ways at once
(ragged tiles, rows long enough for a row tile and too short), for each dtype it takes; the module
compiled by nvcc for sm_80 and sm_90a (slow); the registry and the reference page.
tests/gpu/test_broadcast_gpu.py runs the table on the GPU with the default tiles.  Tolerances:
op_tolerances.py (std.elementwise's, the same math)."""
from __future__ import annotations

import zlib

import numpy as np
import pytest

import tlc
from broadcast_kit import BROADCAST_PATH, OPS, check, shapes
from module_checks import (assert_builds_without_spills, assert_reference_page_is_current,
                           defs_without_a_doc_comment)
from op_registry import check_or_record


# several row tiles of BN (rows of 4 or more) and element tiles of BM x BN / 8 (shorter rows)
TILES = dict(BM=2, BN=32, THREADS=32)


@pytest.fixture(scope="module")
def mod():
    return tlc.load(BROADCAST_PATH, target="cpu")


def test_the_module_holds_every_operator_of_the_table(mod):
    assert {op.name for op in OPS} == set(mod.kernels)


def test_every_operator_has_a_doc_comment():
    """The line under each def is a comment saying what it computes (the reference page reads it)."""
    assert defs_without_a_doc_comment(BROADCAST_PATH) == []


PASSED: dict[str, set] = {}  # operator -> the dtypes whose rows passed in this run


@pytest.mark.parametrize("op,dtype", [pytest.param(op, d, id=f"{op.name}-{d}") for op in OPS for d in op.dtypes])
def test_against_numpy(mod, op, dtype):
    rng = np.random.default_rng(zlib.crc32(f"{op.name}{dtype}".encode()))
    for shape_set in shapes(op):
        check(mod, op, dtype, rng, shape_set, TILES)
    PASSED.setdefault(op.name, set()).add(dtype)


def test_a_shape_that_does_not_broadcast_reads_zeros_past_its_end(mod):
    """Shapes are not checked (no device_assert's synchronization a launch): b's third dimension
    of 2 where y has 3 reads b's rows 0 and 1 and then 0, never outside b."""
    a, b = np.ones((1, 1, 3, 4), np.float32), np.arange(8, dtype=np.float32).reshape(1, 1, 2, 4)
    y = np.full((1, 1, 3, 4), np.nan, np.float32)
    mod.add(a, b, y, **TILES)
    np.testing.assert_array_equal(y[0, 0], [[1, 2, 3, 4], [5, 6, 7, 8], [1, 1, 1, 1]])


def test_registry():
    """stdlib/tested.json lists exactly the operators of this table, each of whose rows (every
    dtype) passed in this run (TLC_RECORD_TESTED=1 rewrites it; tests/stdlib/op_registry.py)."""
    table = {op.name: set(op.dtypes) for op in OPS}
    check_or_record("std.broadcast", table, {k: v for k, v in PASSED.items() if v == table.get(k)}, __file__)


@pytest.mark.slow  # 7 s of nvcc an architecture; std.moe's build is this session's one in the default run
@pytest.mark.nvcc
@pytest.mark.parametrize("arch,dtype", [("sm_80", "f16"), ("sm_90a", "bf16")])
def test_builds_with_nvcc(arch, dtype, tmp_path):
    """Every operator of the module, for one dtype, compiles without warnings or spills."""
    assert_builds_without_spills(BROADCAST_PATH, arch, dtype, tmp_path)


def test_the_reference_page_is_generated_from_the_sources():
    """docs/stdlib/broadcast.md is what scripts/stdlib-docs writes (rerun it after editing the .tl)."""
    assert_reference_page_is_current(BROADCAST_PATH)
