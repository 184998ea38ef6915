"""scripts/run-all-kernels (what compute-sanitizer runs on the GPU) on the interpreter: every
example and std kernel has a case, a kernel without one is reported, and a result that is wrong
or never written fails its case."""
import sys

import numpy as np
import pytest
from script_kit import load_script


@pytest.fixture(scope="module")
def rak():
    return load_script("run-all-kernels")


def all_cases(rak, quick=True):
    rng = np.random.default_rng(0)
    return [c for make in rak.CASES.values() for c in make(rng, quick)]


def test_every_kernel_and_std_math_function_has_a_case(rak, monkeypatch):
    assert rak.uncovered(all_cases(rak)) == []
    monkeypatch.delitem(rak.MATH, "gelu_erf")  # a std.math function without a NumPy reference here
    without = [c for c in all_cases(rak) if "softmax" not in c.kernels]
    assert rak.uncovered(without) == ["examples/softmax.tl.softmax", "std.math.gelu_erf", "std.nn.softmax"]


def test_a_wrong_or_unwritten_result_fails(rak):
    ref = np.arange(6.0).reshape(2, 3)
    assert rak.mismatch(ref.astype(np.float16), ref, 2e-3) is None
    assert rak.mismatch(ref * 1.01, ref, 2e-3) == "relative error 0.01 > 0.002"
    unwritten = ref.copy()
    unwritten[1, 2] = np.nan
    assert rak.mismatch(unwritten, ref, 2e-3) == "1 of 6 elements not written (or not finite)"
    assert rak.mismatch(np.array([1, 2, 4], np.int32), np.array([1, 2, 3]), 0.0) == "1 of 3 elements differ"
    assert rak.mismatch(ref.T, ref, 1.0) == "shape (3, 2), the reference's (2, 3)"


def test_a_chosen_subset_runs_on_the_interpreter(rak, monkeypatch, capsys):
    monkeypatch.setattr(sys, "argv", ["run-all-kernels", "--target", "cpu", "--quick", "vector_add"])
    assert rak.main() == 0
    out = capsys.readouterr().out.splitlines()
    assert out == ["ok   examples/vector_add.tl: vector_add n=3001", "ok   examples/vector_add.tl: vector_add n=1",
                   "run-all-kernels (cpu, quick): 2 runs, 0 failed, 0 kernels uncovered; every result matched NumPy"]


def test_a_failing_case_is_reported_and_the_others_still_run(rak, monkeypatch, capsys):
    def broken(rng, quick):
        for c in rak.examples(rng, quick):
            if c.kernels == ("vector_add",):
                yield c._replace(call=lambda m, x, y, out, alpha: None)  # writes nothing
    monkeypatch.setitem(rak.CASES, "examples", broken)
    monkeypatch.setattr(rak, "uncovered", lambda cases: [])
    monkeypatch.setattr(sys, "argv", ["run-all-kernels", "--target", "cpu", "--quick", "vector_add"])
    assert rak.main() == 1
    assert capsys.readouterr().out.splitlines() == [
        "FAIL examples/vector_add.tl: vector_add n=3001: 3001 of 3001 elements not written (or not finite)",
        "FAIL examples/vector_add.tl: vector_add n=1: 1 of 1 elements not written (or not finite)",
        "run-all-kernels (cpu, quick): 2 runs, 2 failed, 0 kernels uncovered"]
