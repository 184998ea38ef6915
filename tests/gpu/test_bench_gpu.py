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


@pytest.mark.parametrize("op", ["permute", "expert_histogram", "topk_softmax"])
def test_bench_ops_times_the_launch_it_checked(op):
    """A kernel row's timed launch (ops._prepare) with its constants (the permutation; the
    routing's BE) and, for expert_histogram, which adds into its counts, the counts zeroed: run
    twice into a poisoned output, it matches PyTorch's result (the H200's first ops run had
    permute and expert_histogram wrong at every element)."""
    torch = pytest.importorskip("torch")
    import tlc
    from tlc.benchmarks import ops, ops_rows
    from tlc.timing import Checked, tolerance, verify

    ops_rows.tables_folder()
    row = next(r for r in ops.ROWS if r.op == op)
    args = ops_rows.device_inputs(row, (1024, 2048))
    ref = row.torch(*(a if a.dtype in (torch.bool, torch.int64) else a.double() for a in args))
    launch, out = ops._prepare(tlc.load(row.module, target="cuda"), row, args)
    launch()
    verdict = verify(Checked(launch, ref, out=out, **tolerance(out.dtype, ref, ops.ULPS)))
    assert verdict.ok, verdict.why
