"""What every fuzz case is held to, and a worker process that runs cases with a time limit.

Oracles (issue 16): no Python exception other than tlc's own errors anywhere (the CLI's exit
3); well-formed diagnostics; no case over the time limit; every program that type-checks
builds for sm_80 and sm_90a (a diagnostic there is recorded as `build-diag`: a checked program
the back end refuses, to triage); the interpreter runs a generated program without crashing;
nvcc -Werror compiles what was built.

`run_case(mode, text, ...)` is the in-process oracle; `Worker` runs it in a child process
(spawned, not forked) with an address-space limit and kills it past the time limit (a hang or a
runaway constant fold must not take the fuzzer, or the machine, with it).
"""
from __future__ import annotations

import multiprocessing
import os
import re
import subprocess
import tempfile
import traceback
from dataclasses import asdict, dataclass, field

ARCHES = ("sm_80", "sm_90a")
# what a checked program is built for: the CUDA targets, the cpu target's C++ (tlc/codegen/cpp),
# and `tlc build --emit ir`'s text of the scheduled tile IR
BUILDS = (("sm_80", "cu"), ("sm_90a", "cu"), ("cpu", "cu"), ("sm_90a", "ir"))
NVCC_FLAGS = {"sm_80": ["-arch=sm_80"], "sm_90a": ["-gencode=arch=compute_90a,code=sm_90a"]}


@dataclass
class Outcome:
    status: str  # ok | rejected | build-diag | internal | timeout | slow | interp-diag | nvcc-error
    stage: str = ""  # check | build:sm_80 | interp:NAME | nvcc:sm_80 ...
    detail: str = ""
    codes: list = field(default_factory=list)
    seconds: float = 0.0  # wall
    cpu: float = 0.0  # the worker's CPU seconds: what the time limit judges on a shared machine

    @property
    def failed(self) -> bool:
        return self.status in ("internal", "timeout", "nvcc-error", "mismatch")

    def to_json(self) -> dict:
        return asdict(self)


def _internal(stage: str) -> Outcome:
    return Outcome("internal", stage, traceback.format_exc()[-6000:])


def check_text(text: str, path: str):
    """(CheckResult or None, Outcome or None): an Outcome only when the check itself failed."""
    from tlc.diagnostics import render_all, to_json_lines
    from tlc.driver import check_source

    try:
        result = check_source(text, path)
        assert result.ok == (not result.diagnostics), "ok disagrees with the diagnostics"
        for d in result.diagnostics:
            assert re.fullmatch(r"E\d{3}", d.code), f"malformed diagnostic {d}"
        render_all(result.diagnostics, result.sources)
        to_json_lines(result.diagnostics)
    except Exception:  # noqa: BLE001 - any exception escaping check is the bug we look for
        return None, _internal("check")
    return result, None


def build_file(path: str, arch: str, program=None, emit: str = "cu"):
    """(the text or None, Outcome or None) of `tlc build path --arch arch --emit emit`; `program`,
    the file's CheckedProgram, spares `tlc.load` checking the file again (a third of the time)."""
    from tlc import api, runner
    from tlc.diagnostics import DiagnosticError, TlcError

    def load(file, target="auto"):
        return api.Module(program, target) if program is not None and file == path else real_load(file, target)

    stage = f"build:{arch}" + (f":{emit}" if emit != "cu" else "")
    real_load, api.load = api.load, load
    try:
        source, _ = runner.build(path, arch=arch, header=True, emit=emit)
        return source, None
    except DiagnosticError as e:
        return None, Outcome("build-diag", stage, str(e)[:2000], [d.code for d in e.diagnostics])
    except TlcError as e:
        return None, Outcome("build-diag", stage, str(e)[:2000], ["TlcError"])
    except Exception:  # noqa: BLE001
        return None, _internal(stage)
    finally:
        api.load = real_load


def nvcc_werror(source: str, arch: str, tmp: str) -> Outcome | None:
    """nvcc -Werror's failure to compile `source` for `arch`, or None (also when no CUDA
    toolkit is found where tlc looks for one)."""
    from tlc.diagnostics import TlcError
    from tlc.runtime.compile import find_nvcc

    try:
        nvcc = find_nvcc()
    except TlcError:
        return None
    cu = os.path.join(tmp, f"k_{arch}.cu")
    with open(cu, "w") as f:
        f.write(source)
    cmd = [nvcc, "-std=c++17", "-Werror", "all-warnings", *NVCC_FLAGS[arch], "-c", cu, "-o", cu + ".o"]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        return Outcome("nvcc-error", f"nvcc:{arch}", (done.stdout + done.stderr)[-4000:])
    return None


def interp_cases(text: str, path: str, cases) -> Outcome | None:
    """Run each generated kernel on the interpreter with its recipe's inputs."""
    import numpy as np

    from tlc.api import compile_source
    from tlc.diagnostics import TlcError

    mod = compile_source(text, target="cpu", path=path)
    with np.errstate(all="ignore"):
        for case in cases:
            args = case.inputs()
            try:
                getattr(mod, case.name)(*args, **case.constants)
            except TlcError as e:
                return Outcome("interp-diag", f"interp:{case.name}", str(e)[:2000], ["TlcError"])
            except Exception:  # noqa: BLE001
                return _internal(f"interp:{case.name}")
    return None


def tuning_case(seed: int) -> Outcome:
    """tests/fuzz/tuning.py's case `seed`: a kernel at its defaults and at other tiles."""
    from . import tuning

    try:
        status, detail = tuning.run(tuning.case(seed))
    except Exception:  # noqa: BLE001
        return _internal("tuning")
    out = {"ok": "ok", "skip": "skipped", "base-diag": "rejected", "variant-diag": "rejected",
           "variant-error": "interp-diag", "mismatch": "mismatch"}[status]
    return Outcome(out, f"tuning:{status}", detail, sorted(set(re.findall(r"error\[(E\d{3})\]", detail))))


def run_case(text: str, *, build: bool = True, interp_cases_=None, nvcc_arch: str | None = None,
             name: str = "fuzz.tl", tuning: int | None = None) -> Outcome:
    """Check `text`; if it is clean, build it for both targets, then (optionally) run the
    given kernel cases on the interpreter and compile the build of `nvcc_arch` with nvcc.
    `tuning`: tests/fuzz/tuning.py's case of that seed instead (`text` is not read)."""
    if tuning is not None:
        return tuning_case(tuning)
    with tempfile.TemporaryDirectory(prefix="tlc-fuzz-") as tmp:
        path = os.path.join(tmp, name)
        with open(path, "w", encoding="utf-8", newline="") as f:
            f.write(text)
        result, bad = check_text(text, path)
        if bad is not None:
            return bad
        if not result.ok:
            return Outcome("rejected", "check", "", sorted({d.code for d in result.diagnostics}))
        built = {}
        if build and any(result.program.functions[q].kind in ("kernel", "tile_op") for q in result.program.names.values()):
            for arch, emit in BUILDS:
                text_, bad = build_file(path, arch, result.program, emit)
                if bad is not None:
                    return bad
                if emit == "cu":
                    built[arch] = text_
        if interp_cases_:
            bad = interp_cases(text, path, interp_cases_)
            if bad is not None:
                return bad
        if nvcc_arch and built.get(nvcc_arch):
            bad = nvcc_werror(built[nvcc_arch], nvcc_arch, tmp)
            if bad is not None:
                return bad
    return Outcome("ok")


# ---- a worker process with a time limit --------------------------------------------------------


def _serve(conn, memory_limit: int) -> None:
    import resource
    import time

    if memory_limit:
        resource.setrlimit(resource.RLIMIT_AS, (memory_limit, memory_limit))
    while True:
        try:
            job = conn.recv()
        except EOFError:
            return
        t0, c0 = time.perf_counter(), time.process_time()
        try:
            out = run_case(job.pop("text"), **job)
        except MemoryError:
            out = Outcome("internal", "memory", "MemoryError")
        out.seconds, out.cpu = time.perf_counter() - t0, time.process_time() - c0
        conn.send(out)


class Worker:
    """One child process running `run_case`; `run(text, timeout, **kw)` -> Outcome."""

    def __init__(self, memory_limit: int = 3 << 30):
        self.memory_limit = memory_limit
        self.proc = None

    def _start(self) -> None:
        # spawned, not forked: a fork of a process that has run a cpu-target kernel inherits
        # GNU libgomp's thread pool without its threads, and the child's first OpenMP region
        # waits for them forever (CI's slow run hung on test_fuzz_tuning after the cpu table)
        ctx = multiprocessing.get_context("spawn")
        self.conn, child = ctx.Pipe()
        self.proc = ctx.Process(target=_serve, args=(child, self.memory_limit), daemon=True)
        self.proc.start()
        child.close()

    def run(self, text: str, timeout: float = 10.0, wall: float | None = None, **kw) -> Outcome:
        """The case's Outcome; "timeout" when it used more than `timeout` s of CPU, or gave no
        answer in `wall` s (default 6 x timeout: other work on the machine slows the wall clock,
        not the CPU time a case needs)."""
        if self.proc is None or not self.proc.is_alive():
            self._start()
        self.conn.send(dict(text=text, **kw))
        wall = wall or 6 * timeout
        if self.conn.poll(wall):
            try:
                out = self.conn.recv()
            except EOFError:
                pass
            else:
                if out.cpu > timeout and not out.failed:
                    out = Outcome("timeout", out.stage, f"{out.cpu:.1f} s of CPU (over {timeout:.0f} s); it ended "
                                  f"{out.status}", out.codes, out.seconds, out.cpu)
                return out
            self.close()
            return Outcome("internal", "worker", "the worker process died (killed by a signal?)")
        self.close()
        return Outcome("timeout", "", f"no answer in {wall:.0f} s", seconds=wall)

    def run_confirmed(self, text: str, timeout: float = 10.0, **kw) -> Outcome:
        """`run`, with a case that gave no answer in time tried once more with three times the
        wall time: on a machine shared with other work a slow case is not yet a hang ("slow"
        if the second try finishes within the CPU limit)."""
        out = self.run(text, timeout, **kw)
        if out.status != "timeout" or out.cpu:
            return out
        again = self.run(text, timeout, wall=18 * timeout, **kw)
        if again.status == "timeout":
            return again
        return Outcome("slow", again.stage, f"no answer in {6 * timeout:.0f} s once, then {again.seconds:.1f} s "
                       f"({again.cpu:.1f} s CPU, {again.status})", again.codes, again.seconds, again.cpu)

    def close(self) -> None:
        if self.proc is not None:
            self.proc.kill()
            self.proc.join()
            self.proc = None
