"""Rows of the ops table (tlc/benchmarks/ops_rows.py) at other constants, or from another .tl
file, in one process: the tool of bench/queue scripts that ask which tile, or which version of a
kernel, is faster.  On the GPU (`run`) each contender, torch's too, is checked against the float64
reference before it is timed (bench/ops.py's measure) and printed as one line: its label, the
table's columns and tlc's time.  Without a GPU (`check`) each variant runs on the interpreter at
the dry run's shape against NumPy, as `bench/ops.py --dry-run` does: what a queue script times is
checked on the CPU before it is committed.

    sys.path.insert(0, "bench"); from row_variants import run
    run([("gather", "before", "/tmp/before/data.tl", {}),      # that file's gather, the row's constants
         ("gather", "after", None, {}),                        # the row as the table runs it
         ("gather", "BLOCK1024", None, {"T": "f16", "BLOCK": 1024})])   # constants replace the row's

A variant is (operator, label, module, constants): module None is the row's own std module;
constants, where given, replace the row's (T included).  An operator two modules hold is named by
its module where it is not the first's: "broadcast.where" (std.elementwise's is "where")."""
from __future__ import annotations

import dataclasses

MIN_MS = 10.0


def _rows() -> dict:
    from tlc.benchmarks.ops_rows import all_rows

    rows: dict = {}
    for r in all_rows():
        rows.setdefault(r.op, r)  # an operator two modules hold: its first row (std.elementwise's add)
        rows.setdefault(f"{r.module.split('.')[-1]}.{r.op}", r)  # or named by its module: broadcast.where
    return rows


def _variant(rows: dict, op: str, consts: dict):
    row = rows[op]
    return dataclasses.replace(row, constants=consts) if consts else row


def check(variants) -> list[str]:
    """Each variant on the interpreter at the dry run's shape; the failures, as lines."""
    import tlc
    from tlc.benchmarks import ops

    rows, failures = _rows(), []
    for op, label, module, consts in variants:
        row = _variant(rows, op, consts)
        mod = tlc.load(module or row.module, target="cpu")
        real = ops.tlc.load
        ops.tlc.load = lambda *_, **__: mod  # dry_run loads the row's module: this one instead
        try:
            failures += [f"{label}: {line}" for line in ops.dry_run([row])]
        finally:
            ops.tlc.load = real
    return failures


def run(variants, min_ms: float = MIN_MS) -> list[dict]:
    """Each variant timed on the GPU after its output is checked; the records."""
    import torch

    import tlc
    from tlc.benchmarks import ceilings, ops

    rows, mods, records = _rows(), {}, []
    copy_gbs = ceilings.copy_bandwidth(torch, min_ms)
    print(f"copy {copy_gbs:.0f} GB/s", flush=True)
    for op, label, module, consts in variants:
        row = _variant(rows, op, consts)
        path = module or row.module
        try:
            mod = mods[path] if path in mods else mods.setdefault(path, tlc.load(path, target="cuda"))
            rec = ops.measure(row, mod, copy_gbs, min_ms)
        except Exception as e:  # noqa: BLE001 - the rest still run
            print(f"!! {op} {label}: {type(e).__name__}: {str(e)[:300]}", flush=True)
            continue
        us = rec.get("tlc", {}).get("ms", float("nan")) * 1e3
        print(f"{label:<9} {ops.table([rec]).splitlines()[1]}  tlc {us:.1f} us", flush=True)
        records.append({**rec, "label": label})
    return records
