"""std.elementwise on the GPU: every row of tests/stdlib/test_elementwise.py's table (each
operator in each of its dtypes, the casts between every pair of dtypes) against NumPy with the
same tolerances (tests/stdlib/op_tolerances.py), at the table's ragged shape and at a large
ragged one that takes many blocks and a partial last one."""
import pathlib
import sys
import zlib

import numpy as np
import pytest

import tlc

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "stdlib"))
from op_tolerances import assert_close, numpy_dtype  # noqa: E402
from test_elementwise import CASTS, MODULE, OPS, call, case, cast_case  # noqa: E402

pytestmark = pytest.mark.gpu


@pytest.fixture(scope="module")
def ew():
    return tlc.load(MODULE, target="cuda")


@pytest.mark.parametrize("shape", [(37, 45), (1000, 1537)])
@pytest.mark.parametrize("op", OPS, ids=lambda o: o.name)
def test_op(ew, op, shape):
    rng = np.random.default_rng(zlib.crc32(op.name.encode()))
    for dtype in op.dtypes:
        args, scalars, ref, out = case(op, dtype, rng, shape)
        got = np.asarray(call(ew, op, dtype, args, scalars))
        assert got.dtype == numpy_dtype(out)
        assert_close(got, ref, op.name, out, f" at {shape} on the GPU")


@pytest.mark.parametrize("sat", [False, True], ids=["convert", "convert_sat"])
def test_casts_between_every_pair(ew, sat):
    rng = np.random.default_rng(7)
    for src, dst in CASTS:
        x, want = cast_case(src, dst, sat, rng)
        got = np.asarray(getattr(ew, "convert_sat" if sat else "convert")(x, S=src, D=dst))
        assert_close(got, want, "convert", dst, f" from {src} on the GPU")


def test_saturating_cast_keeps_nan(ew):
    x = np.array([[np.nan, 1e6, -1e6, 3.0]], np.float32)
    got = np.asarray(ew.convert_sat(x, S="f32", D="f8e4m3")).astype(np.float32)
    assert np.isnan(got[0, 0]) and got[0, 1:].tolist() == [448.0, -448.0, 3.0]
