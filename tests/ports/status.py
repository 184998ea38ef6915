"""Where each port stands today: `python tests/ports/status.py [--build] [--markdown] [ROW...]`
runs every row of test_ports.py on the interpreter (and with --build generates it for sm_80 and
sm_90a and compiles it with nvcc) and prints one line per row and stage: `ok`, or the first
line of the error, which is what a blocked row's entry quotes.  --markdown prints README.md's
table from test_ports.py's BLOCKED instead (run the tests to know that it is true)."""
from __future__ import annotations

import sys
import tempfile
import traceback
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import test_ports as t  # noqa: E402


def first_line(e: BaseException) -> str:
    text = str(e).strip().splitlines()
    for line in text:
        if "error[" in line or "Error" in line or line.startswith(("E ", "assert")):
            return line.strip()
    return (text[0] if text else type(e).__name__).strip()


def stage(fn) -> str:
    return _stage(fn).replace(f"{t.HERE}/", "").replace("|", "\\|")


def _stage(fn) -> str:
    try:
        fn()
        return "ok"
    except BaseException as e:  # an AssertionError, a DiagnosticError, a crash: all reported
        if isinstance(e, KeyboardInterrupt):
            raise
        if not hasattr(e, "diagnostics") and not isinstance(e, AssertionError):
            return f"{type(e).__name__}: {first_line(e)} [{traceback.extract_tb(e.__traceback__)[-1].name}]"
        return first_line(e)


def build(port):
    kernel = getattr(t.load(port.file, "cpu"), port.kernel)
    _, constants = kernel.bind(tuple(port.make(np.random.default_rng(0)).values()), dict(port.consts))
    for arch in ("sm_80", "sm_90a"):
        with tempfile.TemporaryDirectory() as d:
            t.compile_device(kernel.cuda_source(arch, **constants), arch, Path(d))


def source(port) -> str:
    head = (Path(t.HERE) / port.file).read_text().split("examples/", 1)[1]
    return "examples/" + head.split()[0]


def main(argv):
    with_build, markdown = "--build" in argv, "--markdown" in argv
    rows = [a for a in argv if not a.startswith("--")]
    if markdown:
        print("| row | port | TileLang source | status |\n| --- | --- | --- | --- |")
    for port in t.PORTS:
        if rows and port.id not in rows:
            continue
        if markdown:
            reason = t.BLOCKED.get(port.id, "passes: CPU and build").replace("|", "\\|")
            print(f"| {port.id} | [{port.file}]({port.file}) `{port.kernel}` | {source(port)} | {reason} |")
            continue
        cpu = stage(lambda: t.run_and_check(port, "cpu"))
        line = f"{port.id:40s} cpu: {cpu}"
        if with_build:
            line += f"\n{'':40s} build: {stage(lambda: build(port))}"
        print(line, flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
