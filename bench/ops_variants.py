"""bench/ops.py's rows at other constants, one process: which tiles or thread counts move a row?
Each variant is the row as bench/ops.py measures it (tlc.benchmarks.ops.measure: the output
checked against PyTorch's float64 result before its time counts, PyTorch eager timed in the same
run), its constants merged over the row's own; the row's defaults come first as `default`.
A row's inputs are made once for all its variants.

    python3 bench/ops_variants.py transpose "B=128" "B=128,THREADS=512" pad "BN=512"
    python3 bench/ops_variants.py --min-ms 20 moe_permute "BD=2048,BLOCKS=0"
    python3 bench/ops_variants.py --option tlc.schedule.atomic_groups.GROUP_ATOMICS=1 expert_histogram
    python3 bench/ops_variants.py --shape 16384,8191 broadcast.pow BLOCKS=8

--option MODULE.NAME=VALUE sets a compiler switch (a module constant, an int) before anything
compiles, for the whole run: run such a process with a TLC_CACHE_DIR of its own, since the
kernel cache's key holds the sources and constants, not the switches.  A variant's item
@MODULE.NAME=VALUE sets a run-time switch (one read when a launcher is made) for that variant
alone: `expert_histogram @tlc.runtime.host_asserts.HOST_DECIDED_ASSERTS=1`.
"""
import argparse
import contextlib
import dataclasses
import importlib
import json
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("TLC_OPS_TABLES", str(ROOT / "tests" / "stdlib"))

import tlc  # noqa: E402
from tlc.benchmarks import ceilings, ops  # noqa: E402
from tlc.benchmarks.ops_rows import all_rows  # noqa: E402

from switches import switched as setting  # noqa: E402  (bench/, this file's folder)


def parse(words: list[str]) -> list[tuple[str, list[dict]]]:
    """[op, variant, variant, op, ...] -> [(op, [{constant: value}, ...])]: a word with no `=`
    names the next op; values are ints where they read as ints, else strings (dtypes)."""
    groups = []
    for w in words:
        if "=" not in w:
            groups.append((w, []))
            continue
        if not groups:
            raise SystemExit(f"a variant ({w}) before any op")
        sets = {}
        for item in w.split(","):
            k, _, v = item.partition("=")
            sets[k] = int(v) if v.lstrip("-").isdigit() else v
        groups[-1][1].append(sets)
    return groups


def apply_options(options: list[str]) -> None:
    """Each MODULE.NAME=VALUE set on its module (the type of the constant there: an int or a
    bool), before anything compiles."""
    for opt in options:
        name, _, value = opt.partition("=")
        where, _, attr = name.rpartition(".")
        try:
            module = importlib.import_module(where)
        except ImportError:
            raise SystemExit(f"--option {opt}: no module {where}") from None
        if not hasattr(module, attr) or not value.lstrip("-").isdigit():
            raise SystemExit(f"--option {opt}: {where} has no constant {attr}, or {value!r} is not an integer")
        setattr(module, attr, type(getattr(module, attr))(int(value)))
        print(f"option {where}.{attr} = {getattr(module, attr)!r}")


def variant_rows(spec: list[str]) -> list[tuple[str, str, object]]:
    """(op, label, row) of each variant of `spec`, each op's defaults first ("default")."""
    rows = {}
    for r in all_rows():  # an op two modules hold is named with its module too (broadcast.pow)
        rows.setdefault(r.op, r)
        rows.setdefault(f"{r.module.removeprefix('std.')}.{r.op}", r)
    out = []
    for op, variants in parse(spec):
        if op not in rows:
            raise SystemExit(f"no row {op!r} in bench/ops.py's table")
        row = rows[op]
        for sets in [{}] + variants:
            label = ",".join(f"{k}={v}" for k, v in sets.items()) or "default"
            constants = {k: v for k, v in sets.items() if not k.startswith("@")}
            out.append((op, label, dataclasses.replace(row, constants={**row.tlc_constants(), **constants})
                        if constants else row))
    return out


@contextlib.contextmanager
def switched(label: str):
    """The run-time switches a variant names (`@MODULE.NAME=VALUE` among its items: read when a
    launcher is made, as runtime/host_asserts.py's) set for the variant's run, then put back.
    A compiler switch (one the kernel cache's key does not hold) is not one of these: it takes
    --option and a process of its own."""
    settings = []
    for item in (item[1:] for item in label.split(",") if item.startswith("@")):
        name, _, value = item.partition("=")
        where, _, attr = name.rpartition(".")
        module = importlib.import_module(where)
        settings.append((module, attr, type(getattr(module, attr))(int(value))))
    with setting(settings):
        yield


def compare(before: dict, after: dict) -> list[str]:
    """A line per variant the two runs share: tlc's time, fraction of copy and ratio to PyTorch
    in each, and after's speedup over before (each run's ratios against its own PyTorch)."""
    key = lambda r: (r["module"], r["op"], r["dtype"], r.get("variant", "default"))  # noqa: E731
    old = {key(r): r for r in before["rows"] if r.get("tlc")}
    lines = []
    for r in after["rows"]:
        b = old.get(key(r))
        if b is None or not r.get("tlc"):
            continue
        name = f"{r['module'].removeprefix('std.')}.{r['op']} {r['dtype']} {key(r)[3]}"
        lines.append(f"{name:<40} {b['tlc']['ms'] * 1e3:8.1f} us ({b['tlc']['of_copy']:.2f}, {b['vs_torch']:.2f}x) -> "
                     f"{r['tlc']['ms'] * 1e3:8.1f} us ({r['tlc']['of_copy']:.2f}, {r['vs_torch']:.2f}x): "
                     f"{b['tlc']['ms'] / r['tlc']['ms']:.3f}x")
    return lines


def shape_arg(text: str) -> tuple[int, int]:
    """--shape M,N: two positive integers."""
    parts = text.split(",")
    if len(parts) != 2 or not all(p.isdigit() and int(p) > 0 for p in parts):
        raise argparse.ArgumentTypeError(f"{text!r} is not M,N (two positive integers)")
    return int(parts[0]), int(parts[1])


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--min-ms", type=float, default=20.0)
    ap.add_argument("--dry-run", action="store_true", help="Each variant on the interpreter against NumPy (no GPU).")
    ap.add_argument("--option", action="append", default=[], help="MODULE.NAME=VALUE: a compiler switch for the run")
    ap.add_argument("--json", help="Also write the records here (each with its op's variant label).")
    ap.add_argument("--shape", type=shape_arg, default=ops.LARGE,
                    help="M,N: the rows' size as bench/ops.py takes it (default %(default)s); a ragged N runs a "
                         "kernel's generic build rather than its whole-runs one")
    ap.add_argument("spec", nargs="*", help="op name (broadcast.pow: an op two modules hold), then its variants "
                                            "(NAME=VALUE,...); the next op")
    ap.add_argument("--compare", nargs=2, metavar=("BEFORE", "AFTER"),
                    help="Print the rows two --json runs share, after's speedup over before (no GPU).")
    args = ap.parse_args(argv)
    if args.compare:
        for line in compare(*(json.loads(Path(p).read_text()) for p in args.compare)):
            print(line)
        return {}
    apply_options(args.option)
    variants = variant_rows(args.spec)
    if args.dry_run:
        failures = ops.dry_run([row for _, _, row in variants])
        for line in failures:
            print("!!", line)
        print(f"dry run: {len(variants) - len(failures)} of {len(variants)} variants right on the interpreter")
        return {"suite": "ops_variants", "dry_run": True, "failures": failures}
    import torch

    made = {}  # each row's inputs made once, for all its variants (the host draws index tensors)
    draw = ops.device_inputs

    def inputs(row, shape, seed=0):
        key = (row.module, row.op)
        if key not in made:
            made[key] = draw(row, shape, seed)
        return made[key]
    ops.device_inputs = inputs
    results: dict = {"suite": "ops_variants", "rows": []}
    print(f"GPU: {torch.cuda.get_device_name()}")
    copy_gbs = ceilings.measure(torch, results, args.min_ms)
    mods = {}
    for op, label, row in variants:
        mod = mods.setdefault(row.module, tlc.load(row.module, target="cuda"))
        try:
            with switched(label):
                rec = ops.measure(row, mod, copy_gbs, args.min_ms, shape=args.shape)
        except Exception as e:  # noqa: BLE001 - a variant that cannot run is reported, the rest go on
            print(f"!! {op} {label}: {type(e).__name__}: {str(e)[:300]}")
            continue
        rec["variant"] = label
        results["rows"].append(rec)
        t = rec.get("tlc")
        print(f"{label:<28} {ops.table([rec]).splitlines()[1]}" + (f"  tlc {t['ms'] * 1e3:.1f} us" if t else ""),
              flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))
    return results


if __name__ == "__main__":
    sys.exit(1 if main().get("failures") else 0)
