"""`tlc bench [SUITE...]`: the benchmark suites that ship with tlc, each run in one process
against the vendor libraries (bench/ holds the scripts that call them, and the suites that
read files of a source checkout).  A suite is a module with `main(argv, results_dir=...)`
that prints its table and writes its JSON and PNG chart under `results_dir`."""
from __future__ import annotations

import importlib

SUITES = {"gemm": "tlc.benchmarks.gemm"}  # name -> module


def run(suite: str, argv: list, results_dir) -> dict:
    """Run one suite with its own options `argv`; returns its results."""
    return importlib.import_module(SUITES[suite]).main(argv, results_dir=results_dir)
