"""`tlc bench [SUITE...]`: the benchmark suites that ship with tlc, each run in one process
against the vendor libraries (bench/ holds the scripts that call them, and the suites that
read files of a source checkout).  A suite is a module with `main(argv, results_dir=...)`
that prints its table and writes its JSON and PNG chart (chart.py) under `results_dir`."""
from __future__ import annotations

import importlib

SUITES = {"gemm": "tlc.benchmarks.gemm",  # std.gemm in every precision against cuBLAS
          "nn": "tlc.benchmarks.nn",  # std.nn's softmax, norms and element-wise chain against PyTorch
          "ops": "tlc.benchmarks.ops"}  # std.elementwise / std.reduce / std.data against PyTorch eager


def run(suite: str, argv: list, results_dir) -> dict:
    """Run one suite with its own options `argv`; returns its results."""
    return importlib.import_module(SUITES[suite]).main(argv, results_dir=results_dir)


def suite_argv(suite: str, *, quick: bool = False, no_chart: bool = False, precisions: str | None = None,
               no_sweep: bool = False, only: str | None = None) -> list:
    """The command line of `suite` for `tlc bench`'s options (each suite takes its own)."""
    argv = [*(["--quick"] if quick else []), *(["--no-chart"] if no_chart else [])]
    if suite == "gemm":
        argv += [*(["--precisions", precisions] if precisions else []), *(["--no-sweep"] if no_sweep else []),
                 "--skip-overheads"]
    if suite == "ops" and only:
        argv += ["--only", only]
    return argv


def run_suites(suites: list, results_dir, **options) -> list[str]:
    """Each of `suites` in turn (`options` as suite_argv takes them); a suite that fails is said
    and the next one runs.  Returns the failures, one line each."""
    from ..diagnostics import TlcError

    failed = []
    for suite in suites:
        print(f"== tlc bench {suite}")
        try:
            run(suite, suite_argv(suite, **options), results_dir)
        except (TlcError, ImportError, RuntimeError) as e:  # said, and the other suites still run
            failed.append(f"{suite}: {type(e).__name__}: {e}" if not isinstance(e, TlcError) else f"{suite}: {e}")
            print(f"!! suite {failed[-1]}")
    return failed
