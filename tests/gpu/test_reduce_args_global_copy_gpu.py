"""A reduction's dim and clear by position, and copies from global memory to global memory, on
the GPU: the interpreter's checks against NumPy (tests/interp/test_interp_reduce_args_global_copy.py)
run again with the kernels compiled for the device, where the staged copies' vector runs and
their alignment checks (rows of 99 elements) are real."""
import importlib.util
import inspect
from pathlib import Path

import pytest

import tlc

pytestmark = pytest.mark.gpu

TESTS = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("interp_reduce_args_global_copy",
                                               TESTS / "interp" / "test_interp_reduce_args_global_copy.py")
checks = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(checks)
# every check of the module's kernels (those taking `mod`); the rank-3 reduction is the interpreter's alone
CASES = [pytest.param(name, n, id=f"{name}-{n}" if n else name)
         for name in sorted(x for x in dir(checks) if x.startswith("test_"))
         if "mod" in inspect.signature(getattr(checks, name)).parameters
         for n in ([128, 99] if "n" in inspect.signature(getattr(checks, name)).parameters else [None])]


@pytest.fixture(scope="module")
def mod():
    return tlc.load(str(checks.PROGRAM), target="cuda")


@pytest.mark.parametrize("check, n", CASES)
def test_the_gpu_matches_numpy(mod, check, n):
    getattr(checks, check)(mod, *([n] if n else []))
