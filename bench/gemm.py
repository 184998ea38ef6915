"""GEMM benchmark of std.gemm against the vendor library on the GPU, in one process (issue #5).

The benchmark is tlc.benchmarks.gemm (`tlc bench gemm` runs it too; its docstring says what is
measured and how); this script adds the compiler and launch costs of bench/overheads.py,
which read files of this checkout, and writes bench/results/gemm-<gpu>.json and its chart.
"""
from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from tlc.benchmarks.gemm import copy_bandwidth, main  # noqa: E402,F401  (fusion.py imports copy_bandwidth from here)

import overheads  # noqa: E402

if __name__ == "__main__":
    main(results_dir=ROOT / "bench" / "results", overheads=overheads)
