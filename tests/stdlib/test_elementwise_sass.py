"""std.elementwise's f16 math against CUDA's own functions in SASS (scripts/ew-sass: the same
element-wise kernel, sm_90a, instructions an element on the hot path, the identity kernel's
taken off): sinh and hypot, ours, are shorter than sinhf and hypotf, and atan, tan, erf, sin,
cos, acosh and expm1, whose 16-bit results take tl::fast_atan, fast_tan_near, fast_erf,
fast_sin_near, fast_cos_near, fast_acosh_near and fast_expm1, than atanf, tanf, erff, sinf, cosf,
acoshf and expm1f.  The counts at this writing (tlc / CUDA): sinh 15.0 / 23.1, logsigmoid 15.2 /
34.5, acosh 10.1 / 37.6 (23.1 as log1p of t + sqrt(t (x + 1))), expm1 8.4 / 28.0 (13.1 as expf
minus 1 beside a degree-7 polynomial), atan 12.2 / 18.1, tan 14.5 / 23.2, erf 14.1 / 21.8 (24.2,
25.2 and 21.8 before the fast forms), sin 11.1 / 24.6, cos 13.2 / 25.6 (sinf's and cosf's own
before; 14.1 and 15.1 with a degree-9 polynomial), hypot 13.6 / 23.5 (36.8 before: both arms of
a where, a division and two roots)."""
from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from script_kit import load_script

from tlc.benchmarks.sass import find_cuobjdump


@pytest.mark.nvcc
@pytest.mark.slow  # ~16 s of nvcc and cuobjdump over every math function: the README run keeps under 5 minutes
def test_our_math_is_no_longer_than_cudas():
    if find_cuobjdump() is None:
        pytest.skip("no cuobjdump on PATH or in the NVIDIA wheels")
    ew_sass = load_script("ew-sass")
    with tempfile.TemporaryDirectory() as d:  # nineteen nvcc builds, about 40 s
        rows = ew_sass.table(["sinh", "erf", "atan", "tan", "sin", "cos", "hypot", "acosh", "expm1"], Path(d))
    for name, ((ours, ours_all), (cuda, _)) in rows.items():
        assert ours <= cuda, f"{name}: {ours} SASS instructions an element, CUDA's function {cuda}"
    assert rows["sinh"][0][0] < 0.7 * rows["sinh"][1][0]  # two fast exponentials, no division
    for name in ("erf", "atan", "tan", "sinh", "sin", "cos", "hypot", "acosh", "expm1"):  # no branch left (tan, sin and cos of
        # f16 need no check for the range of tanf's, sinf's and cosf's fast reduction;
        # sinh's where of a polynomial and two exponentials is tl::select: 20.4 in all before)
        (ours, ours_all), (cuda, _) = rows[name]
        assert ours == ours_all and ours < 0.8 * cuda, f"{name}: {ours} ({ours_all} in all), CUDA's {cuda}"
