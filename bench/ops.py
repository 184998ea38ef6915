"""The std operators against PyTorch eager on the GPU, one process (issue 13's benchmark).

The benchmark is tlc.benchmarks.ops (`tlc bench ops` runs it too; its docstring says what is
measured and how, tlc/benchmarks/ops_rows.py holds the rows); this script writes
bench/results/ops-<gpu>.json and its chart.

    python bench/ops.py [--quick] [--only silu,add] [--json out.json]
    python bench/ops.py --dry-run     # no GPU: every row's tlc operator on the interpreter
"""
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
# the rows' tables are this checkout's tests/stdlib, also where tlc is installed apart from it (CI)
os.environ.setdefault("TLC_OPS_TABLES", str(ROOT / "tests" / "stdlib"))

from tlc.benchmarks import ops  # noqa: E402

if __name__ == "__main__":
    results = ops.main(sys.argv[1:], results_dir=ROOT / "bench" / "results")
    sys.exit(1 if results.get("failures") else 0)
sys.modules[__name__] = ops
