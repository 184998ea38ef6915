"""A staged buffer read after its pipelined loop, on the GPU against NumPy (and so against the
interpreter, which tests/codegen/test_stage_after_loop.py runs on the same cases): the
reproducer (examples/gemm.tl writing As to D after the loop) for n = 1..7 tiles of K with 2, 3
and 4 stages, where the ring used to read stage 0 instead of stage (n - 1) % stages; and the
other uses (a copy, a partial write, a gemm, a reduce, a second ring over one tile fewer) at the n and stages
where the two differ."""
from __future__ import annotations

import functools
import pathlib
import sys

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "codegen"))
from test_stage_after_loop import VARIANTS, check, run_case  # noqa: E402

from tlc.api import compile_source  # noqa: E402

pytestmark = pytest.mark.gpu


@functools.cache
def on_gpu(variant: str):
    return compile_source(VARIANTS[variant], target="cuda", path=f"stage_after_{variant}.tl")


@pytest.mark.parametrize("stages", [2, 3, 4])
@pytest.mark.parametrize("n", range(1, 8))
def test_the_reproducer_reads_the_last_tile(n, stages):
    got, want = run_case(on_gpu("element"), "element", n, stages, seed=n)
    check(got, want, "element")


@pytest.mark.parametrize("variant", ["copy", "write", "gemm", "reduce", "second_loop"])
@pytest.mark.parametrize("n, stages", [(1, 3), (2, 2), (2, 3), (3, 2), (5, 3), (6, 4), (7, 4)])
def test_other_uses_after_the_loop_see_the_last_tile(variant, n, stages):
    got, want = run_case(on_gpu(variant), variant, n, stages, seed=n)
    check(got, want, variant)
