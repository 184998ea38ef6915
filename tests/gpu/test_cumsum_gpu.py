"""cumsum and buffers allocated inside an if or a loop on the GPU: the interpreter's checks
against NumPy (tests/interp/test_interp_cumsum.py) run again with tests/programs/cumsum.tl
compiled for the device, where the warp scans (tl/scan.cuh: shuffles within 32-element
segments, the carry between them, a partial warp kept out, a block of 16 threads scanning
alone), the shared scratch of a fragment's scan and the barriers around it are real."""
import importlib.util
import inspect
from pathlib import Path

import pytest

import tlc

pytestmark = pytest.mark.gpu

TESTS = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("interp_cumsum", TESTS / "interp" / "test_interp_cumsum.py")
checks = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(checks)

# each check with the arguments its parametrize gives it on the CPU
CASES = [pytest.param(name, value, id=f"{name}-{value}" if value is not None else name)
         for name in sorted(x for x in dir(checks) if x.startswith("test_"))
         for value in (next((m.args[1] for m in getattr(getattr(checks, name), "pytestmark", [])
                             if m.name == "parametrize"), [None]))]


@pytest.fixture(scope="module")
def mod():
    return tlc.load(str(checks.PROGRAM), target="cuda")


@pytest.mark.parametrize("check, value", CASES)
def test_the_gpu_matches_numpy(mod, check, value):
    fn = getattr(checks, check)
    extra = [p for p in inspect.signature(fn).parameters if p != "mod"]
    fn(mod, **({extra[0]: value} if extra else {}))
