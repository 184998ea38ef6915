"""`tlc run` on the GPU: the default target, --check against the interpreter, --bench."""
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from tlc.cli import main

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.gpu


def tlc(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def test_run_uses_the_gpu_and_check_agrees():
    r = tlc("run", ROOT / "examples/gemm.tl", "-k", "matmul", "--shape", "M=300,N=200,K=100", "--check")
    assert r.exit_code == 0, r.stdout + r.stderr
    assert r.stdout.startswith("running matmul on the GPU (")
    err = float(re.search(r"largest relative error (\S+)", r.stdout).group(1))
    assert err < 2e-2


def test_bench_reports_time_and_throughput():
    r = tlc("run", ROOT / "examples/gemm.tl", "-k", "matmul", "--shape", "M=2048,N=2048,K=2048", "--bench")
    assert r.exit_code == 0, r.stdout + r.stderr
    m = re.search(r"bench: ([\d.]+) us median, ([\d.]+) TFLOP/s, ([\d.]+) GB/s", r.stdout)
    assert m and float(m.group(2)) > 10, r.stdout


def test_check_on_softmax_and_vector_add():
    r = tlc("run", ROOT / "examples/softmax.tl", "-k", "softmax", "--shape", "M=37,N=1000", "--check")
    assert r.exit_code == 0, r.stdout + r.stderr
    r = tlc("run", ROOT / "examples/vector_add.tl", "-k", "vector_add", "--shape", "N=5000", "--in", "alpha=1.5",
            "--check")
    assert r.exit_code == 0, r.stdout + r.stderr
