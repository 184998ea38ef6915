"""Bugs the fuzzer found (tests/fuzz, scripts/fuzz), each reduced to a minimal program: the
exact diagnostics it must get, or "" where it must check, build for both targets and (where
inputs are given) run on the interpreter.  tests/fuzz/FINDINGS.md lists what each was."""
from __future__ import annotations

import numpy as np
import pytest

from tlc import runner
from tlc.api import compile_source
from tlc.diagnostics import render_all
from tlc.driver import check_source

# (id, source, expected diagnostics ("" = clean and builds), interpreter call: (name, inputs, expected) or None)
CASES = [
    # A named scalar intermediate of a tile op (`t = 2.0`) passed check and then ended in
    # LoweringError ("'t' cannot be used as a value here") in build: the lowering expanded
    # named tensors only.
    ("tile_op_named_scalar", """\
@tile_op
def op(x: f32[M, N]) -> f32[M, N]:
    t = 2.0
    return x + t
""", "", ("op", [np.ones((2, 3), np.float32)], np.full((2, 3), 3.0, np.float32))),
    ("tile_op_named_scalar_in_epilogue", """\
@tile_op
def op(x: f16[M, K], w: f16[K, N], s: f32) -> f32[M, N]:
    t = s * 0.5
    return (x @ w) + t
""", "", ("op", [np.ones((2, 3), np.float16), np.ones((3, 4), np.float16), 4.0], np.full((2, 4), 5.0, np.float32))),
]


@pytest.mark.parametrize("name,source,expected,call", CASES, ids=[c[0] for c in CASES])
def test_fuzz_regression(name, source, expected, call, tmp_path):
    path = tmp_path / f"{name}.tl"
    path.write_text(source)
    result = check_source(source, str(path))
    assert render_all(result.diagnostics, result.sources) == expected.replace("{path}", str(path))
    if expected:
        return
    for arch in ("sm_80", "sm_90a"):
        runner.build(str(path), arch=arch)
    if call is not None:
        fn, inputs, want = call
        got = getattr(compile_source(source, target="cpu", path=str(path)), fn)(*inputs)
        np.testing.assert_allclose(got, want, rtol=1e-3)
