"""tlc bench ops (bench/ops.py) without a GPU: its --dry-run checks rows' tlc operators on the interpreter
against NumPy (a wrong contender there would be wrong on the GPU too), and the table puts the
weakest ratio first.  The GPU run itself is not a test (it asserts nothing about time)."""
import dataclasses
import sys
from pathlib import Path

import numpy as np
import pytest

from tlc.diagnostics import TlcError
from tlc.kernel import CallError

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "tests" / "stdlib"))

import ops as bench_ops  # noqa: E402  (bench/ops.py is tlc.benchmarks.ops)

# one row of each kind: unary math, activation, backward, binary, comparison, logical, ternary, cast
SOME = "expm1,gelu,silu_bwd,atan2,ge,logical_xor,addcdiv,convert_sat"


def test_dry_run_of_one_row_of_each_kind(capsys):
    assert bench_ops.main(["--dry-run", "--only", SOME])["failures"] == []
    rows = [r for r in bench_ops.ROWS if r.op in SOME.split(",")]
    assert f"dry run: {len(rows)} of {len(rows)} rows right" in capsys.readouterr().out


@pytest.mark.slow
def test_dry_run_of_every_row(capsys):
    assert bench_ops.main(["--dry-run"])["failures"] == [], capsys.readouterr().out


def test_a_wrong_contender_fails_the_dry_run():
    row = next(r for r in bench_ops.ROWS if r.op == "exp")
    wrong = bench_ops.Row(row.module, row.op, row.domains, row.torch, lambda x: x + 1.0)
    assert bench_ops.dry_run([wrong])[0].startswith("exp f16: AssertionError: exp f16:")


def test_the_dry_run_checks_the_launch_the_gpu_run_times():
    """Each kernel row goes through ops._launch, the call the GPU run checks and times, twice,
    into an output poisoned as tlc.timing's check poisons it.  On the H200 the permute row was
    timed as op(x, y), a call of the default (identity) permutation: 133,729,900 of 2^27
    elements wrong; and expert_histogram's launch added its counts into the poisoned output (all
    64 counts off by up to 2^31): its kernel adds into counts, which the row now zeroes."""
    assert bench_ops.dry_run([r for r in bench_ops.ROWS if r.op in ("permute", "expert_histogram", "topk_k8")]) == []
    row = next(r for r in bench_ops.ROWS if r.op == "expert_histogram")
    [failure] = bench_ops.dry_run([dataclasses.replace(row, accumulates=False)])
    assert failure.startswith("expert_histogram i64: AssertionError")


def test_every_launch_of_a_kernel_row_binds_its_constants():
    row = next(r for r in bench_ops.ROWS if r.op == "permute")
    calls = []

    class Op:  # a kernel of the cpu target: no launcher
        def launcher(self, *args, **constants):
            raise CallError("the GPU's")

        def __call__(self, *args, **constants):
            calls.append(constants)

    launch = bench_ops._launch(Op(), row, [np.zeros((2, 3, 4, 5))], np.zeros((2, 4, 3, 5)))
    launch()
    launch()
    assert calls == [{"T": "f16", "BR": 32, "BC": 64, "P0": 0, "P1": 2, "P2": 1, "P3": 3}] * 2


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


def test_rows_whose_pytorch_is_checked_apart_say_so_in_the_table():
    """PyTorch's f16 threshold, sigmoid_bwd, tanh_bwd and cumsums were outside the float64
    reference's tolerance on the H200 (its kernels round the threshold to f16, take the forward's
    f16 output, sum in f16): those rows check it as it defines them, or on inputs whose f16 sums
    are exact, and the table's line says which."""
    rows = {r.op: r for r in bench_ops.ROWS}
    assert all(rows[op].note for op in ("threshold", "sigmoid_bwd", "tanh_bwd", "cumsum", "cumsum_axis0"))
    assert rows["threshold"].torch_rounds_scalars and rows["sigmoid_bwd"].torch_inputs is not None
    x = rows["cumsum"].inputs((4, 8))[0]
    assert x.dtype == np.float16 and set(np.unique(x)) <= {-2, -1, 0, 1, 2}
    rec = {"op": "threshold", "dtype": "f16", "bytes": 2 ** 29, "vs_torch": 1.0, "note": rows["threshold"].note,
           "tlc": {"gbs": 4000.0, "of_copy": 1.0}, "torch": {"gbs": 4000.0, "of_copy": 1.0}}
    assert bench_ops.table([rec]).splitlines()[1].endswith(f"1.00x  ({rows['threshold'].note})")


def test_bench_ops_is_tlcs():
    from tlc.benchmarks import ops

    assert bench_ops is ops and len(ops.ROWS) > 150


def test_outside_a_source_checkout_the_suite_says_what_it_needs(monkeypatch, tmp_path):
    from tlc.benchmarks import ops_rows

    monkeypatch.setattr(ops_rows, "__file__", str(tmp_path / "site-packages" / "tlc" / "benchmarks" / "ops_rows.py"))
    monkeypatch.delenv(ops_rows.TABLES_ENV, raising=False)
    with pytest.raises(TlcError) as e:
        ops_rows.tables_folder()
    assert str(e.value) == (f"the ops suite reads its operators' tables from a source checkout's tests/stdlib, and "
                            f"this tlc ({tmp_path / 'site-packages' / 'tlc'}) is not one; run it from a clone of the "
                            "repository (pip install -e .) or set TLC_OPS_TABLES to a clone's tests/stdlib")
    # an installed tlc (CI's) finds the tables that bench/ops.py names
    tables = Path(__file__).resolve().parents[1] / "stdlib"
    monkeypatch.setenv(ops_rows.TABLES_ENV, str(tables))
    assert ops_rows.tables_folder() == tables


def test_only_arithmetic_rows_count_flops():
    """The roofline's points: std.elementwise and std.reduce rows, one operation per element."""
    assert bench_ops.ARITHMETIC == ("std.elementwise", "std.reduce")
    assert {r.module for r in bench_ops.ROWS} == {"std.elementwise", "std.reduce", "std.data", "std.nn_train",
                                                 "std.nn_layers", "std.moe", "std.broadcast"}


def test_dry_run_of_nn_train_rows_of_each_kind():
    """std.nn_train's and std.nn_layers' rows make their own inputs (probabilities, head-shaped
    x with its tables, index tensors, NCHW batches): one of each against nn_train_kit's
    references (test_dry_run_of_every_row runs them all)."""
    rows = [r for r in bench_ops.ROWS if r.module in ("std.nn_train", "std.nn_layers")]
    assert len(rows) == 9
    assert bench_ops.dry_run([r for r in rows if r.op in ("softmax_bwd", "rope", "embedding", "batch_norm")]) == []
