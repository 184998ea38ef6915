"""What a TileLang port brings, on the GPU: the interpreter's checks against NumPy
(tests/interp/test_interp_porting.py) run again with the kernels compiled for the device,
except the endless while loop, which the GPU runs as written."""
import importlib.util
from pathlib import Path

import pytest

import tlc

pytestmark = pytest.mark.gpu

TESTS = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("interp_porting_checks", TESTS / "interp" / "test_interp_porting.py")
checks = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(checks)


@pytest.fixture(scope="module")
def mod():
    return tlc.load(str(checks.PROGRAM), target="cuda")


CHECKS = ["test_reinterpret_keeps_the_bits", "test_f8_values_inside_expressions", "test_tuple_assignment",
          "test_clamp_if_then_else_infinity_and_extremes", "test_while_loops_per_index_and_uniform",
          "test_while_loops_in_device_functions_and_conditions_that_call_them", "test_the_thread_index_runs_per_thread",
          "test_split_k_adds_each_part_atomically", "test_a_tile_atomic_into_a_region_with_single_indices",
          "test_atomic_max_and_min_of_a_reduced_row",
          "test_gemm_with_tilelangs_keywords", "test_use_swizzle_remaps_every_block_once",
          "test_use_swizzle_on_a_wide_gemm", "test_pipelined_from_start_to_stop",
          "test_an_inner_loop_reusing_an_outer_loops_index"]


def test_every_check_but_the_endless_loop_runs_here():
    assert sorted(CHECKS + ["test_an_endless_while_stops_with_an_error"]) == \
        sorted(name for name in dir(checks) if name.startswith("test_"))


@pytest.mark.parametrize("check", CHECKS)
def test_the_gpu_matches_numpy(mod, check):
    getattr(checks, check)(mod)
