"""The largest finite value of each float dtype, also where NumPy's finfo does not know ml_dtypes'
bfloat16 and float8 (the H200's versions: max_value(bf16) and a bf16 scalar's range check
ended in "dtype(bfloat16) not compatible with finfo")."""
import numpy as np
import pytest

from tlc.dtypes import lookup
from tlc.scalars import float_limit


@pytest.mark.parametrize("name,value", [("bf16", 3.3895313892515355e38), ("f8e4m3", 448.0), ("f8e5m2", 57344.0),
                                        ("f16", 65504.0), ("f32", float(np.finfo(np.float32).max))])
def test_largest_finite_without_numpys_finfo_for_ml_dtypes(name, value, monkeypatch):
    real = np.finfo

    def finfo(dt):
        if np.dtype(dt).name in ("bfloat16", "float8_e4m3fn", "float8_e5m2"):
            raise ValueError(f"data type {np.dtype(dt)!r} not compatible with finfo")
        return real(dt)

    monkeypatch.setattr(np, "finfo", finfo)
    assert lookup(name).largest_finite() == value
    assert float_limit(lookup(name)) == value
