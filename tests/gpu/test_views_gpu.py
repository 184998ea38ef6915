"""Views of tensor parameters and im2col on the GPU: the interpreter's checks against NumPy
(tests/interp/test_interp_views.py) run again with the kernels and the convolution port
compiled for the device, where the gathers' bounds and the views' index arithmetic are real."""
import importlib.util
import inspect
from pathlib import Path

import pytest

import tlc

pytestmark = pytest.mark.gpu

TESTS = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("interp_views", TESTS / "interp" / "test_interp_views.py")
checks = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(checks)


@pytest.fixture(scope="module")
def mod():
    return tlc.load(str(checks.PROGRAM), target="cuda")


@pytest.fixture(scope="module")
def port():
    return tlc.load(str(checks.PORT), target="cuda")


def _cases():
    """Every check of the interpreter's module with its parameters (strides, dilations, pads)."""
    out = []
    for name in sorted(x for x in dir(checks) if x.startswith("test_")):
        fn = getattr(checks, name)
        marks = [m for m in getattr(fn, "pytestmark", []) if m.name == "parametrize"]
        if not marks:
            out.append(pytest.param(name, {}, id=name))
            continue
        keys = [k.strip() for k in marks[0].args[0].split(",")]
        for values in marks[0].args[1]:
            out.append(pytest.param(name, dict(zip(keys, values)), id=f"{name}-{'-'.join(map(str, values))}"))
    return out


@pytest.mark.parametrize("check, params", _cases())
def test_the_gpu_matches_numpy(mod, port, check, params):
    fn = getattr(checks, check)
    wanted = inspect.signature(fn).parameters
    fixtures = {"mod": mod, "port": port}
    fn(**{k: fixtures[k] for k in wanted if k in fixtures}, **params)
