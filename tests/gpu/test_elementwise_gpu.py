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
from test_elementwise import BACKWARDS, CASTS, KINKS, MODULE, OPS, call, case, cast_case  # noqa: E402

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


def _torch_forward(name, F):
    return {"relu": F.relu, "leaky_relu": lambda x, s: F.leaky_relu(x, s), "sigmoid": lambda x: x.sigmoid(),
            "tanh": lambda x: x.tanh(), "silu": F.silu, "gelu": lambda x: F.gelu(x, approximate="tanh"),
            "gelu_erf": F.gelu, "softplus": F.softplus, "elu": lambda x, a: F.elu(x, a), "hardswish": F.hardswish,
            "mish": F.mish}[name]


@pytest.mark.parametrize("bwd", list(BACKWARDS))
def test_backward_against_pytorch_autograd(ew, bwd):
    """NAME_bwd(dy, x) on the GPU against PyTorch autograd of NAME in f32 (x away from kinks)."""
    torch = pytest.importorskip("torch")
    import torch.nn.functional as F

    fwd, scalars = BACKWARDS[bwd]
    rng = np.random.default_rng(zlib.crc32(bwd.encode()))
    x = (rng.standard_normal((300, 517)) * 3).astype(np.float32)
    x = np.where(np.min([np.abs(x - k) for k in KINKS], axis=0) < 1e-2, x + 0.1, x).astype(np.float32)
    dy = rng.standard_normal(x.shape).astype(np.float32)
    xt = torch.tensor(x, device="cuda", requires_grad=True)
    _torch_forward(fwd, F)(xt, *scalars).backward(torch.tensor(dy, device="cuda"))
    got = np.asarray(getattr(ew, bwd)(dy, x, *scalars))
    np.testing.assert_allclose(got, xt.grad.cpu().numpy(), rtol=2e-5, atol=2e-6 * np.abs(dy).max(), err_msg=bwd)
