"""tlc bench gemm on the GPU (issue 14): it prints the table and writes its JSON and PNG chart."""
import json

import pytest
from click.testing import CliRunner

from tlc import cli

pytestmark = pytest.mark.gpu


def test_bench_gemm_writes_json_and_png(tmp_path):
    pytest.importorskip("torch")
    r = CliRunner().invoke(cli.main, ["bench", "gemm", "--quick", "--precisions", "f16", "--no-sweep",
                                      "--out", str(tmp_path)])
    assert r.exit_code == 0, r.output[-3000:]
    [out] = list(tmp_path.glob("gemm-*-quick.json"))
    results = json.loads(out.read_text())
    assert [c["precision"] for c in results["cases"]] == ["f16", "f16"]
    assert all("ratio" in row for c in results["cases"] for row in c["contenders"] if row.get("kernel") and row["ok"])
    assert out.with_suffix(".png").read_bytes()[:4] == b"\x89PNG"
    assert "best std.gemm per case" in r.output


def test_bench_nn_and_ops_write_json_and_png(tmp_path):
    """The two memory-bound suites, ops on three rows (one of each module): every case checked
    before its time, the ceilings recorded, the roofline's points in the PNG's results."""
    pytest.importorskip("torch")
    from tlc.benchmarks import chart

    r = CliRunner().invoke(cli.main, ["bench", "nn", "ops", "--quick", "--only", "silu,sum_axis1,transpose",
                                      "--out", str(tmp_path)])
    assert r.exit_code == 0, r.output[-3000:]
    [nn_json] = list(tmp_path.glob("nn-*.json"))
    [ops_json] = list(tmp_path.glob("ops-*.json"))
    nn = json.loads(nn_json.read_text())
    assert [c["name"] for c in nn["cases"]] == ["softmax", "rms_norm", "layer_norm", "silu_residual"]
    assert all(c["wrong"] == {} and c["best"]["ms"] > 0 for c in nn["cases"])
    assert nn["copy_GBps"] > 500 and nn["tc_peak_tflops"] > 50
    ops = json.loads(ops_json.read_text())
    assert sorted(row["op"] for row in ops["rows"]) == ["silu", "sum_axis1", "transpose"]
    assert all(row["wrong"] == {} and row["tlc"]["ms"] > 0 for row in ops["rows"])
    assert {p.label for p in chart.points(ops) if p.who == "tlc"} == {"silu f16", "sum_axis1 f16"}  # transpose: no FLOPs
    for path in (nn_json, ops_json):
        assert path.with_suffix(".png").read_bytes()[:4] == b"\x89PNG"


@pytest.mark.parametrize("op", ["permute", "expert_histogram", "topk_softmax", "hardswish_bwd", "threshold",
                                "sigmoid_bwd", "tanh_bwd", "cumsum", "cumsum_axis0"])
def test_bench_ops_rows_checked_wrong_on_the_h200_are_right(op):
    """The rows of the H200's first ops run with a contender reported wrong, at 2^23 elements:
    permute's and expert_histogram's timed launch (the permutation's constants; the counts
    zeroed, the kernel adding into them), topk_softmax's (its BE), hardswish_bwd at x = +-3, and
    PyTorch checked as its kernels define the operator at f16 (threshold's threshold rounded
    to f16, the backwards on the f16 forward output, cumsum's f16 sums on integers)."""
    pytest.importorskip("torch")
    import tlc
    from tlc.benchmarks import ops

    row = next(r for r in ops.ROWS if r.op == op)
    record = ops.measure(row, tlc.load(row.module, target="cuda"), 1.0, 1.0, shape=(2048, 4096))
    assert record["wrong"] == {} and record["vs_torch"] > 0, record
