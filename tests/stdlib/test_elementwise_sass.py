"""std.elementwise's f16 math against CUDA's own functions in SASS (scripts/ew-sass: the same
element-wise kernel, sm_90a, instructions an element on the hot path, the identity kernel's
taken off): sinh, ours, is shorter than sinhf, and atan, tan and erf, whose 16-bit results take
tl::fast_atan, fast_tan_near and fast_erf, than atanf, tanf and erff.  The counts at this writing
(tlc / CUDA): sinh 12.4 / 23.1, logsigmoid 15.2 / 34.5, acosh 23.1 / 37.5, atan 12.2 / 18.1,
tan 15.1 / 23.2, erf 15.1 / 21.8 (24.2, 25.2 and 21.8 before the fast forms)."""
from __future__ import annotations

import importlib.util
import tempfile
from importlib.machinery import SourceFileLoader
from pathlib import Path

import pytest

from tlc.benchmarks.sass import find_cuobjdump

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.nvcc
def test_our_math_is_no_longer_than_cudas():
    if find_cuobjdump() is None:
        pytest.skip("no cuobjdump on PATH or in the NVIDIA wheels")
    loader = SourceFileLoader("ew_sass", str(ROOT / "scripts" / "ew-sass"))
    ew_sass = importlib.util.module_from_spec(importlib.util.spec_from_loader("ew_sass", loader))
    loader.exec_module(ew_sass)
    with tempfile.TemporaryDirectory() as d:  # nine nvcc builds, about 20 s
        rows = ew_sass.table(["sinh", "erf", "atan", "tan"], Path(d))
    for name, ((ours, ours_all), (cuda, _)) in rows.items():
        assert ours <= cuda, f"{name}: {ours} SASS instructions an element, CUDA's function {cuda}"
    assert rows["sinh"][0][0] < 0.7 * rows["sinh"][1][0]  # two fast exponentials, no division
    for name in ("erf", "atan", "tan", "sinh"):  # no branch left (tan of f16 needs no check for tanf's range;
        # sinh's where of a polynomial and two exponentials is tl::select: 20.4 in all before)
        (ours, ours_all), (cuda, _) = rows[name]
        assert ours == ours_all and ours < 0.8 * cuda, f"{name}: {ours} ({ours_all} in all), CUDA's {cuda}"
