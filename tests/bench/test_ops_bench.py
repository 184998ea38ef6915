"""bench/ops.py without a GPU: its --dry-run checks rows' tlc operators on the interpreter
against NumPy (a wrong contender there would be wrong on the GPU too), and the table puts the
weakest ratio first.  The GPU run itself is not a test (it asserts nothing about time)."""
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))

import ops as bench_ops  # noqa: E402

# one row of each kind: unary math, activation, backward, binary, comparison, logical, ternary, cast
SOME = "expm1,gelu,silu_bwd,atan2,ge,logical_xor,addcdiv,convert_sat"


def test_dry_run_of_one_row_of_each_kind(capsys):
    assert bench_ops.main(["--dry-run", "--only", SOME]) == 0
    rows = [r for r in bench_ops.ROWS if r.op in SOME.split(",")]
    assert f"dry run: {len(rows)} of {len(rows)} rows right" in capsys.readouterr().out


@pytest.mark.slow
def test_dry_run_of_every_row(capsys):
    assert bench_ops.main(["--dry-run"]) == 0, capsys.readouterr().out


def test_a_wrong_contender_fails_the_dry_run():
    row = next(r for r in bench_ops.ROWS if r.op == "exp")
    wrong = bench_ops.Row(row.module, row.op, row.domains, row.torch, lambda x: x + 1.0)
    assert bench_ops.dry_run([wrong])[0].startswith("exp f16: AssertionError: exp f16:")


def test_every_row_is_large_and_rows_cover_every_elementwise_operator():
    from test_elementwise import OPS

    assert {r.op for r in bench_ops.ROWS if r.module == "std.elementwise"} >= {op.name for op in OPS}
    assert bench_ops.LARGE[0] * bench_ops.LARGE[1] * 2 * 2 >= 256 * 2 ** 20  # one f16 read and written


def test_the_table_is_sorted_by_ratio_weakest_first():
    rec = lambda op, r: {"op": op, "dtype": "f16", "bytes": 2 ** 29, "vs_torch": r,  # noqa: E731
                         "tlc": {"gbs": 4000.0 * r, "of_copy": r}, "torch": {"gbs": 4000.0, "of_copy": 1.0}}
    lines = bench_ops.table([rec("a", 1.2), rec("b", 0.8), {"op": "c", "dtype": "f16", "bytes": 0,
                                                              "vs_torch": float("nan")}, rec("d", 1.0)]).splitlines()
    assert [ln.split()[0] for ln in lines[1:]] == ["c", "b", "d", "a"]
    assert "WRONG" in lines[1] and lines[2].endswith("0.80x")
