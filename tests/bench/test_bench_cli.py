"""tlc bench without a GPU (issue 14): the chart of a results file (one bar per case: the
fastest correct std.gemm kernel's ratio to the vendor), the command's messages, and bench/'s
modules being tlc.benchmarks'.  The GPU run is tests/gpu/test_bench_gpu.py."""
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from tlc import cli
from tlc.benchmarks import chart

ROOT = Path(__file__).resolve().parents[2]


def row(label, tflops=None, ratio=None, ok=True, vs="torch.matmul", kernel="matmul"):
    r = {"contender": label, "vs": vs, "kernel": kernel, "ok": ok}
    if tflops is not None:
        r["tflops"] = tflops
    if ratio is not None:
        r["ratio"] = ratio
    return r


RESULTS = {"gpu": "NVIDIA H200", "arch": "sm_90a", "copy_GBps": 4300.0, "cases": [
    {"precision": "f16", "shape": [4096, 4096, 4096], "contenders": [
        row("torch.matmul", 700.0, vs=None, kernel=None),
        row("std matmul", 650.0, 0.93), row("std matmul BM=64", 720.0, 1.03),
        row("std wrong", 900.0, 1.3, ok=False)]},
    {"precision": "bf16", "shape": [16, 8192, 8192], "contenders": [row("F.linear", 50.0, vs=None, kernel=None),
                                                                    row("std matmul_nt", 55.0, 1.1)]},
    {"precision": "i8", "shape": [8192, 8192, 8192], "error": "no torch._int_mm"},
]}


def test_the_bars_are_each_cases_fastest_right_kernel():
    assert chart.ratios(RESULTS) == [("f16 4096^3", 1.03), ("bf16 M=16 N=8192 K=8192", 1.1)]


def test_the_chart_is_a_png(tmp_path):
    pytest.importorskip("matplotlib")
    path = chart.ratio_chart(RESULTS, tmp_path / "gemm.png")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and path.stat().st_size > 5000


def test_an_unknown_suite_is_a_usage_error():
    r = CliRunner().invoke(cli.main, ["bench", "gemm", "convolution"])
    assert r.exit_code == 2
    assert r.output.endswith("Error: no benchmark suite 'convolution'; the suites are: gemm, nn, ops\n")


def test_without_a_gpu_it_says_so(monkeypatch):
    monkeypatch.setattr("tlc.runtime.compile.cuda_unavailable_reason", lambda: "CUDA found no device")
    r = CliRunner().invoke(cli.main, ["bench", "gemm"])
    assert (r.exit_code, r.output) == (1, "error: tlc bench measures on a CUDA GPU and there is none "
                                          "(CUDA found no device)\n")


def test_bench_modules_are_tlcs():
    sys.path.insert(0, str(ROOT / "bench"))
    import gemm_cases
    import sass

    from tlc.benchmarks import gemm_cases as shipped_cases, sass as shipped_sass
    assert gemm_cases is shipped_cases and sass is shipped_sass
