"""`tlc bench ops`: the std operators against PyTorch eager on the GPU, one process (issue 13's
benchmark; bench/ops.py runs it too).

Each row (ops_rows.py) is one operator of std.elementwise, std.broadcast, std.reduce, std.data,
std.nn_train, std.nn_layers or std.moe at a large size (>= 256 MiB of traffic: its inputs read
once and its output written once; std.moe's align step at a batch's 2^17 ids) in
one dtype, timed by the same method as PyTorch eager's equivalent in the same run (tlc.timing:
CUDA events, warm-up, L2 flushed, median, contenders alternating).  Before timing, every
contender's output (PyTorch's too) is checked against a float64 reference (PyTorch's own
function on float64 copies of the inputs): a wrong one is reported and never timed
(checks.py).  Where PyTorch's kernel defines the operator at the row's dtype apart from the
real numbers (threshold's scalar rounded to f16, a backward given the forward's f16 output),
its result is checked against that definition, and the table's line says so (Row.note).  The table gives GB/s, the fraction of the device's copy bandwidth (a
device-to-device copy of 1 GiB, measured in the same run; ceilings.py) and the ratio to
PyTorch, sorted by that ratio so the weakest rows come first.  Writes ops-<gpu>.json
(bench/ops.py: bench/results/ops-<gpu>.json; or --json) and a PNG chart beside it (chart.py:
ratio bars and a roofline, where std.elementwise and std.reduce rows count one operation per
element of their largest input; std.data rows do no arithmetic and are not on it).  Not a
test: it asserts nothing about time.

    tlc bench ops [--quick] [--only silu,add]
    python bench/ops.py --dry-run     # no GPU: every row's tlc operator on the interpreter at a
                                      # small ragged shape against NumPy (and PyTorch on the CPU,
                                      # where it is installed); tests/bench/test_ops_bench.py
"""
from __future__ import annotations

import argparse
import collections
import math
from pathlib import Path

import numpy as np

import tlc

from . import ceilings
from .checks import ratio, timed, write
from .ops_rows import _TORCH_DTYPES, Row, all_rows, device_inputs, host_inputs, tables_folder

LARGE = (1 << 14, 1 << 13)  # 2^27 elements: 256 MiB of f16 each way
SMALL = (37, 45)  # the dry run's ragged shape
ULPS = 4  # tolerance in units of the result's dtype (tlc.timing.tolerance): one rounding of an f32 result
ARITHMETIC = ("std.elementwise", "std.reduce")  # the modules whose rows are on the roofline


def __getattr__(name: str):
    if name == "ROWS":  # every row, built on first use (bench/ops.py's name)
        return list(all_rows())
    raise AttributeError(name)


def dry_run(rows: list[Row]) -> list[str]:
    """Every row's tlc operator on the interpreter at SMALL against its NumPy reference (and
    PyTorch's on the CPU where it is installed); the failures, as lines."""
    tables_folder()
    from op_tolerances import assert_close, numpy_dtype

    try:
        import torch
    except ImportError:
        torch = None
    mods, failures = {}, []
    for row in rows:
        mod = mods.setdefault(row.module, tlc.load(row.module, target="cpu"))
        args = host_inputs(row, SMALL)
        want = row.numpy(*(a.astype(np.float64) if a.dtype != np.bool_ else a for a in args), *row.scalars)
        out = row.out_dtype or row.dtype
        try:
            if row.out_shape is None:
                got = getattr(mod, row.kernel or row.op)(*args, *row.scalars, **row.tlc_constants())
            else:  # the GPU run's launch, into an output poisoned as tlc.timing.verify poisons it
                got = np.zeros(row.out_shape(args[0].shape), numpy_dtype(out))
                launch = _launch(getattr(mod, row.kernel or row.op), row, args, got)
                launch()
                _poison(got)
                launch()
            assert_close(got, np.asarray(want), row.op, out)
            if torch is not None and row.dtype in ("f32", "bool"):  # PyTorch's CPU kernels, where it has them
                res = row.reference(*(torch.from_numpy(a) for a in args))
                if res.dtype in (torch.float8_e4m3fn, torch.float8_e5m2, torch.bfloat16):  # NumPy takes neither
                    res = res.float()
                assert_close(res.numpy(), np.asarray(want), row.op, out, " (torch)")
        except Exception as e:  # noqa: BLE001 - every row's failure is reported
            failures.append(f"{row.name}: {type(e).__name__}: {str(e).strip()[:300]}")
    return failures


def measure(row: Row, mod, copy_gbs: float, min_ms: float, shape=LARGE) -> dict:
    """One row on the GPU: both contenders checked against PyTorch's function in float64 (the
    inputs widened), then timed; bytes = inputs read + output written."""
    import torch

    from ..timing import Checked, tolerance

    args = device_inputs(row, shape)
    def widen(xs):  # the reference's float64 inputs (indices stay): made once, never timed
        return [a if a.dtype in (torch.bool, torch.int64) else a.double() for a in xs]

    ref = row.reference(*widen(args))
    launch, out = _prepare(mod, row, args)
    tol = lambda ref: tolerance(out.dtype, ref, ULPS) if out.dtype != torch.bool else {"rtol": 0.0, "atol": 0.0}  # noqa: E731
    # PyTorch's own inputs, made before timing (torch_inputs), and its reference where its
    # kernel defines the operator at this dtype apart from the real numbers (Row's fields)
    targs, scalars = (row.torch_inputs(*args) if row.torch_inputs else args), row.scalars
    if row.torch_rounds_scalars:
        scalars = tuple(torch.tensor(s, dtype=args[0].dtype).item() for s in scalars)
    torch_ref = row.torch(*widen(targs), *scalars) if row.torch_inputs or row.torch_rounds_scalars else ref
    nbytes = sum(a.numel() * a.element_size() for a in args) + out.numel() * out.element_size()
    record: dict = {"module": row.module, "op": row.op, "dtype": row.dtype, "bytes": nbytes,
                    "flops": float(max(a.numel() for a in args)) if row.module in ARITHMETIC else 0.0}
    if row.note:
        record["note"] = row.note
    ms = timed(record, {"torch": Checked(lambda: row.torch(*targs, *row.scalars), torch_ref, **tol(torch_ref)),
                        "tlc": Checked(launch, ref, out=out, **tol(ref))}, min_ms=min_ms)
    for who in ("torch", "tlc"):
        if who in ms:
            gbs = nbytes / ms[who] / 1e6
            record[who] = {"ms": ms[who], "gbs": gbs, "of_copy": gbs / copy_gbs}
    record["vs_torch"] = ratio(ms, "torch", "tlc")
    del args, targs, ref, torch_ref, out
    torch.cuda.empty_cache()
    return record


def _prepare(mod, row: Row, args):
    """(launch, result): the operator's kernels relaunched into one allocated result (no host
    work in the timed call); constants bound first."""
    op = getattr(mod, row.kernel or row.op)
    if row.out_shape is None:
        return op.prepare(*args, *row.scalars, **row.tlc_constants())
    import torch  # a kernel: one output allocated here, the call's arguments bound by its first call

    out = torch.empty(row.out_shape(tuple(args[0].shape)), dtype=getattr(torch, _TORCH_DTYPES[row.out_dtype or row.dtype]),
                      device=args[0].device)
    launch = _launch(op, row, args, out)
    launch()  # compiled here
    return launch, out


def _launch(op, row: Row, args, out):
    """A kernel row's call with `out` (NumPy or PyTorch) last among its tensors (or at the row's
    out_at), its constants bound at every launch: a
    call without them is a call of the defaults (the permute row, timed as op(x, y), ran the
    identity permutation on the H200).  One grid with no workspaces: its `launcher`, which
    checks once; otherwise the call.  A row that `accumulates` zeroes `out` first, as PyTorch's
    bincount makes a zeroed tensor (the zeroing is timed)."""
    from ..kernel import CallError

    at = len(args) if row.out_at is None else row.out_at
    tensors = [*args[:at], out, *args[at:]]
    call = lambda: op(*tensors, *row.scalars, **row.tlc_constants())  # noqa: E731
    try:
        call = op.launcher(*tensors, *row.scalars, **row.tlc_constants())
    except CallError:  # the cpu target, or several grids
        pass
    if not row.accumulates:
        return call

    def zeroed():
        out[...] = 0
        call()
    return zeroed


def _poison(x: np.ndarray) -> None:
    """What tlc.timing's check fills an output with first: the minimum of an integer dtype, True
    in a bool one, NaN in a float one (ml_dtypes' too)."""
    x[...] = np.iinfo(x.dtype).min if np.issubdtype(x.dtype, np.integer) else (True if x.dtype == np.bool_ else np.nan)


def table(records: list[dict]) -> str:
    key = lambda r: r["vs_torch"] if r.get("vs_torch") == r.get("vs_torch") and "vs_torch" in r else -1  # noqa: E731
    lines = [f"{'operator':<22} {'MiB':>6} {'tlc GB/s':>9} {'of copy':>8} {'torch GB/s':>10} {'of copy':>8} {'vs torch':>9}"]
    seen = collections.Counter((r["op"], r["dtype"]) for r in records)
    for r in sorted(records, key=key):
        t, p = r.get("tlc"), r.get("torch")
        cell = lambda x, k, fmt: format(x[k], fmt) if x else "WRONG"  # noqa: E731
        # an operator two modules hold (std.elementwise's add, std.broadcast's) is named with its module
        op = r["op"] if seen[r["op"], r["dtype"]] == 1 else f"{r['module'].removeprefix('std.')}.{r['op']}"
        lines.append(f"{op + ' ' + r['dtype']:<22} {r['bytes'] / 2**20:>6.0f} {cell(t, 'gbs', '9.0f'):>9} "
                     f"{cell(t, 'of_copy', '8.2f'):>8} {cell(p, 'gbs', '10.0f'):>10} {cell(p, 'of_copy', '8.2f'):>8} "
                     f"{r['vs_torch']:>8.2f}x" + (f"  ({r['note']})" if r.get("note") else ""))
    return "\n".join(lines)


def main(argv=None, *, results_dir: Path | None = None, name: str = "ops") -> dict:
    """The suite, its options as `argv`; writes `name`-<gpu>.json (or --json) under
    `results_dir` (default: the current folder) and its chart beside it.  Returns the results
    ({"failures": [...]} for --dry-run)."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dry-run", action="store_true", help="Check every row on the interpreter (no GPU).")
    ap.add_argument("--only", help="Comma-separated operator names.")
    ap.add_argument("--quick", action="store_true", help="100 ms a contender instead of 300.")
    ap.add_argument("--min-ms", type=float, help="Milliseconds a contender is timed for (overrides --quick).")
    ap.add_argument("--json", help="Where to write the results (default <results_dir>/ops-<gpu>.json).")
    ap.add_argument("--no-chart", action="store_true", help="Write no PNG chart (it needs matplotlib).")
    args = ap.parse_args(argv)
    rows = [r for r in all_rows() if not args.only or r.op in args.only.split(",")]
    if args.dry_run:
        failures = dry_run(rows)
        for line in failures:
            print("!!", line)
        print(f"dry run: {len(rows) - len(failures)} of {len(rows)} rows right on the interpreter")
        return {"suite": "ops", "dry_run": True, "rows": len(rows), "failures": failures}
    import torch

    results: dict = {"suite": "ops", **ceilings.device_facts(torch), "shape": list(LARGE), "rows": []}
    min_ms = args.min_ms or (100.0 if args.quick else 300.0)
    print(f"GPU: {results['gpu']} ({results['arch']}), PyTorch {torch.__version__}")
    copy_gbs = ceilings.measure(torch, results, min_ms)
    mods = {}
    for row in rows:
        mod = mods.setdefault(row.module, tlc.load(row.module, target="cuda"))
        try:
            record = measure(row, mod, copy_gbs, min_ms)
        except Exception as e:  # noqa: BLE001 - a row that cannot run is reported, the rest go on
            record = {"module": row.module, "op": row.op, "dtype": row.dtype, "bytes": 0, "vs_torch": math.nan,
                      "error": f"{type(e).__name__}: {str(e)[:300]}"}
            print(f"!! {row.name}: {record['error']}")
        else:  # each row as it is measured, so that a run stopped early still says something
            print(table([record]).splitlines()[1], flush=True)
        results["rows"].append(record)
    print(table(results["rows"]))
    write(results, args.json or Path(results_dir or ".") / f"{name}-{ceilings.gpu_slug(results['gpu'])}.json",
          chart=not args.no_chart)
    return results
