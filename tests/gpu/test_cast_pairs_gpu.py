"""codegen/half_pairs.py's CAST_PAIRS on the GPU: a cast of f32 values into a 16-bit fragment that
a gemm reads as its register A, rounded a pair at a time (__floats2half2_rn / __floats2bfloat162_rn),
gives the same bits as one value at a time (tl::cvt) and as NumPy's rounding: exact ties between
two 16-bit neighbours, values past the 16-bit range, NaN and infinities.
The gemm against rows of the identity reads P back exactly."""
import sys
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

import tlc

pytestmark = pytest.mark.gpu
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "codegen"))
from test_half_pairs import CAST  # noqa: E402

BODY = "            p[i, j] = cast(xs[i, j] - dd[i], T)"  # d = 0: P is x rounded


def _inputs(dtype):
    rng = np.random.default_rng(11)
    x = rng.standard_normal((64, 32)).astype(np.float32) * 4
    lo = np.float16 if dtype == "f16" else ml_dtypes.bfloat16
    # exact ties between two 16-bit neighbours, values past the range, NaN and infinities
    a = rng.standard_normal(512).astype(lo).astype(np.float32)
    b = np.nextafter(a.astype(lo), np.array(np.inf, lo)).astype(np.float32)
    x.flat[:512] = (a + b) / 2
    # the last row: values past the range, NaN and infinities (NaN * 0 fills its row of C)
    x[63, :8] = [3.3e38, -1e6, np.nan, np.inf, -np.inf, 65519.0, 65520.0, -65520.0]
    return x, np.zeros(64, np.float32)


@pytest.mark.parametrize("dtype", ["f16", "bf16"])
def test_pairs_round_as_one_at_a_time(tmp_path, monkeypatch, dtype):
    import cupy as cp

    from tlc.codegen import half_pairs

    lo = np.float16 if dtype == "f16" else ml_dtypes.bfloat16
    x, d = _inputs(dtype)
    outs = {}
    for on in (False, True):
        name = f"pc_{int(on)}"
        path = tmp_path / f"{name}.tl"
        path.write_text(CAST.format(body=BODY).replace("def pc(", f"def {name}("))
        kernel = getattr(tlc.load(str(path), target="cuda"), name)
        monkeypatch.setattr(half_pairs, "CAST_PAIRS", on)
        got = []
        for half in (0, 16):  # B's rows the identity's columns half .. half + 15: C = P's columns
            B = np.zeros((16, 32), lo)
            B[np.arange(16), half + np.arange(16)] = 1
            C = cp.zeros((64, 16), cp.float32)
            kernel(cp.asarray(x), cp.asarray(d), cp.asarray(B), C, T=dtype)
            got.append(C.get())
        outs[on] = np.concatenate(got, axis=1)
    assert np.array_equal(outs[False].view(np.uint32), outs[True].view(np.uint32))
    want = x.astype(lo).astype(np.float32)  # NumPy's round to nearest even
    assert np.array_equal(outs[True][:63], want[:63])
