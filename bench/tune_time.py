"""The figure issue #14 asks for: how long `tlc tune` takes over std.gemm's 48-point @autotune
space for one shape (goal: under 2 minutes on the H200, thanks to pruning and parallel
compiles), and the tuned configuration's time against the shipped one's.  The kernel cache is
a fresh temporary folder unless --warm, so that the compiles count.  Nothing is recorded.

    python bench/tune_time.py [--shape M=4096,N=4096,K=4096] [--kernel matmul] [-D T=bf16] [--warm]

The same through the command line: `time tlc tune std.gemm -k matmul --shape M=4096,N=4096,K=4096 --no-write`.
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shape", default="M=4096,N=4096,K=4096")
    parser.add_argument("--kernel", default="matmul")
    parser.add_argument("-D", dest="defines", action="append", default=[])
    parser.add_argument("--warm", action="store_true", help="keep the kernel cache (time without compiles)")
    args = parser.parse_args()
    if not args.warm:
        os.environ["TLC_CACHE_DIR"] = tempfile.mkdtemp(prefix="tlc-tune-time-")
    import tlc.tune
    from tlc.inputs import parse_assignments

    started = time.perf_counter()
    report, = tlc.tune.tune("std.gemm", args.kernel, [parse_assignments([args.shape], "--shape")], target="cuda",
                            defines=parse_assignments(args.defines, "-D"), write=False, progress=tlc.tune.Progress())
    seconds = time.perf_counter() - started
    print(tlc.tune.summary(report))
    print()
    print(f"tune time: {seconds:.1f} s for {len(report.outcomes)} configurations "
          f"({sum(report.pruned.values())} pruned, {report.count('ok')} right, {report.count('wrong')} wrong, "
          f"{report.count('error') + report.count('invalid')} failed), {args.kernel} {args.shape}")
    if report.winner is None:
        sys.exit("no configuration gave the right output")
    shipped = report.shipped_ms
    print(f"tuned {report.winner.label}: {report.winner.ms * 1e3:.1f} us; shipped {report.shipped_label}: "
          f"{shipped * 1e3:.1f} us; shipped / tuned = {shipped / report.winner.ms:.3f}x")


if __name__ == "__main__":
    main()
