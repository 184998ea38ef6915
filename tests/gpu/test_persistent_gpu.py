"""persistent(...) on the GPU: the interpreter's checks against TileLang's walk and NumPy
(tests/interp/test_interp_persistent.py) run again with the kernels compiled for the device:
each block visits its tiles in TileLang's order, every tile once, and the persistent gemms
match NumPy: gemm_relu's walk on sm_90a a wgmma gemm fed by the cp.async ring, gemm_tiles's
the grid of its tiles, warp-specialized and persistent (schedule/persistent_grid.py)."""
import importlib.util
from pathlib import Path

import pytest

import tlc

pytestmark = pytest.mark.gpu

TESTS = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("interp_persistent_checks", TESTS / "interp" / "test_interp_persistent.py")
checks = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(checks)

CHECKS = ["test_one_dimension_in_groups_of_eight", "test_three_dimensions_with_a_group_wider_than_the_last",
          "test_break_leaves_the_walk_and_continue_the_tile", "test_a_persistent_gemm_matches_numpy",
          "test_a_persistent_gemm_as_its_tile_grid_matches_numpy"]


@pytest.fixture(scope="module")
def mod():
    return tlc.load(str(checks.PROGRAM), target="cuda")


def test_every_check_runs_here():
    assert sorted(CHECKS + ["test_each_block_walks_tilelangs_tiles_in_order", "test_the_model_visits_every_tile_once"]) \
        == sorted(name for name in dir(checks) if name.startswith("test_"))


@pytest.mark.parametrize("T0, T1, S, G", checks.WALKS)
def test_each_block_walks_tilelangs_tiles_in_order(mod, T0, T1, S, G):
    checks.test_each_block_walks_tilelangs_tiles_in_order(mod, T0, T1, S, G)


@pytest.mark.parametrize("check", CHECKS)
def test_the_gpu_matches_the_interpreters_checks(mod, check):
    getattr(checks, check)(mod)
