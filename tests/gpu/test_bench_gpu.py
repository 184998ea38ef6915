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
