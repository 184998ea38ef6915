"""`tlc bench` runs its suites (gemm, nn, ops) without a GPU here: the suites stood in for,
each given its own options; no suite named runs them all; a failing suite is said and the
next one still runs.  bench/rowwise.py is the nn suite's caller.  The GPU runs are
tests/gpu/test_bench_gpu.py."""
import math
import sys
import types
from pathlib import Path

import pytest
from click.testing import CliRunner

from tlc import benchmarks, cli
from tlc.benchmarks import nn
from tlc.diagnostics import TlcError

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def ran(monkeypatch):
    """The suites as stand-ins on a 'GPU' with 'PyTorch': the (suite, argv, folder) of each run."""
    monkeypatch.setattr("tlc.runtime.compile.cuda_unavailable_reason", lambda: None)
    monkeypatch.setitem(sys.modules, "torch", types.ModuleType("torch"))
    calls = []

    def run(suite, argv, results_dir):
        calls.append((suite, argv, results_dir))
        if suite == "nn" and "fail-nn" in str(results_dir):
            raise TlcError("std.nn's softmax: E071 unknown target architecture 'sm_120'")
        return {}

    monkeypatch.setattr(benchmarks, "run", run)
    return calls


def test_no_suite_runs_every_suite_with_its_own_options(ran):
    r = CliRunner().invoke(cli.main, ["bench", "--quick", "--precisions", "f16", "--only", "silu", "--out", "out"])
    assert r.exit_code == 0, r.output
    assert ran == [("gemm", ["--quick", "--precisions", "f16", "--skip-overheads"], "out"),
                   ("nn", ["--quick"], "out"),
                   ("ops", ["--quick", "--only", "silu"], "out")]
    assert r.output == "== tlc bench gemm\n== tlc bench nn\n== tlc bench ops\n"


def test_a_failing_suite_is_said_and_the_rest_run(ran):
    r = CliRunner().invoke(cli.main, ["bench", "nn", "ops", "--no-chart", "--out", "fail-nn"])
    assert [s for s, _, _ in ran] == ["nn", "ops"] and ran[1][1] == ["--no-chart"]
    assert r.exit_code == 1
    assert r.stdout == ("== tlc bench nn\n"
                        "!! suite nn: std.nn's softmax: E071 unknown target architecture 'sm_120'\n"
                        "== tlc bench ops\n")
    assert r.stderr == "error: tlc bench: 1 of 2 suites failed (nn; said above)\n"


def test_rowwise_is_the_nn_suite():
    sys.path.insert(0, str(ROOT / "bench"))
    import rowwise

    assert rowwise.main is nn.main and rowwise.short_name("NVIDIA H200") == "h200"


def test_nn_table_names_each_kernels_best_and_the_wrong_ones():
    cases = [{"name": "softmax", "torch": {"ms": 0.5, "gbs": 1074.0, "of_copy": 0.25},
              "best": {"config": {"BN": 8192, "THREADS": 128}, "gbs": 3675.0, "of_copy": 0.86, "vs_torch": 3.43}},
             {"name": "rms_norm", "torch": {"ms": None, "gbs": math.nan, "of_copy": math.nan}, "best": None}]
    assert nn.table(cases).splitlines() == [
        "kernel          tlc GB/s  of copy torch GB/s  of copy  vs torch  best",
        "softmax             3675     0.86       1074     0.25     3.43x  BN=8192,THREADS=128",
        "rms_norm           WRONG               WRONG                     no right configuration"]


def test_every_nn_kernel_has_its_flop_count():
    """The roofline places each nn case by its FLOPs per element; a kernel without one would
    end the GPU run in a KeyError after its timing."""
    import re

    measured = set(re.findall(r'measure\(results, "(\w+)"', Path(nn.__file__).read_text()))
    assert measured == set(nn.FLOPS_PER_ELEMENT) == {"softmax", "rms_norm", "layer_norm", "silu_residual"}


def test_an_nn_record_is_what_the_chart_reads(monkeypatch):
    """nn.measure's record (its timing stood in for: torch 0.5 ms, one configuration wrong)
    gives the chart its bar and its two roofline points."""
    import numpy as np

    from tlc.benchmarks import chart

    def timed(record, contenders, **timing):
        record["rel_err"] = {name: 0.0 for name in contenders}
        record["wrong"] = {"tlc THREADS=512": "WRONG: 3 of 12 elements"}
        return {"torch": 0.5, "tlc THREADS=128": 0.25}

    monkeypatch.setattr(nn, "timed", timed)
    results = {"suite": "nn", "copy_GBps": 4000.0, "tc_peak_tflops": 700.0, "cases": []}
    out, ref = np.zeros(12, np.float16), np.ones(12)
    nn.measure(results, "softmax", 2 ** 30, 2 ** 28, 4000.0, None, None, [dict(THREADS=128), dict(THREADS=512)],
               out, ref, 100.0)
    [case] = results["cases"]
    assert case["best"]["config"] == {"THREADS": 128} and case["configs"][1]["error"] == "WRONG: 3 of 12 elements"
    assert chart.ratios(results) == [("softmax", 2.0)]
    flops = 5.0 * 2 ** 28
    assert chart.points(results) == [chart.Point("softmax", "tlc", flops / 2 ** 30, flops / 0.25 / 1e9),
                                     chart.Point("softmax", "vendor", flops / 2 ** 30, flops / 0.5 / 1e9)]
