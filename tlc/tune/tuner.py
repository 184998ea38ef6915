"""One `tlc tune` of one kernel for one shape bucket: prune, compile, check, time, record.

Steps, each a function below: the configurations of the space (space.py); those that need
more shared memory, registers or threads than the target has are pruned by scheduling them
(E070, E153, E050, E069: nothing is compiled for them); the rest are compiled in worker processes
on the GPU (pool.py; on the interpreter there is nothing to compile); the reference output is
the kernel's own defaults' (what its `.tl` file means); each candidate's output is checked
against it, and a wrong one is reported and never timed; the right ones are timed one by one
(the progress bar shows the best so far), then the fastest few and the configuration a call
uses today ("shipped": the defaults and config.json's rules) again together, alternating;
the fastest of that round is recorded in config.json for the arch and the bucket.
"""
from __future__ import annotations

import copy
import time
from dataclasses import field

from .. import inputs
from ..diagnostics import DiagnosticError
from ..frozen import record
from ..ir.walk import written_names
from ..schedule import bind_constants, schedule_grids
from . import measure
from .journal import Journal, journal_path
from .space import Candidate, bucket_when, candidates

# what the target cannot hold: shared memory, registers a thread, threads a block (a constant
# block size over 1024 is the type checker's E050), or what its generator cannot emit
RESOURCE_CODES = {"E070": "shared memory", "E153": "registers", "E050": "threads", "E069": "target limits"}
FINAL_ROUND = 4  # the fastest this many are timed again together with the shipped configuration


@record
class Outcome:
    label: str
    constants: dict
    status: str            # ok, wrong, error, pruned, invalid (a value the kernel does not take)
    ms: float | None = None
    why: str = ""
    code: str = ""

    def to_json(self) -> dict:
        return {"label": self.label, "constants": self.constants, "status": self.status, "ms": self.ms,
                "why": self.why, "code": self.code}


@record
class BucketReport:
    kernel: str
    file: str
    arch: str
    target: str
    shapes: dict
    when: dict
    outcomes: list = field(default_factory=list)
    shipped: dict = field(default_factory=dict)     # the constants a call uses today
    shipped_label: str = ""
    final: dict = field(default_factory=dict)       # label -> ms of the final round
    winner: Outcome | None = None
    config: str | None = None                       # the config.json written
    seconds: float = 0.0

    @property
    def pruned(self) -> dict:
        counts: dict = {}
        for o in self.outcomes:
            if o.status == "pruned":
                counts[o.code] = counts.get(o.code, 0) + 1
        return counts

    def count(self, status: str) -> int:
        return sum(o.status == status for o in self.outcomes)

    @property
    def shipped_ms(self) -> float | None:
        return self.final.get(self.shipped_label)

    def to_json(self) -> dict:
        return {"kernel": self.kernel, "file": self.file, "arch": self.arch, "target": self.target,
                "shapes": self.shapes, "bucket": self.when, "candidates": [o.to_json() for o in self.outcomes],
                "pruned": self.pruned, "shipped": {"label": self.shipped_label, "constants": self.shipped,
                                                   "ms": self.shipped_ms},
                "final_round": self.final, "winner": self.winner.to_json() if self.winner else None,
                "config": self.config, "seconds": self.seconds}


@record
class Settings:
    target: str = "cpu"                 # "cpu" (the interpreter) or "cuda"
    arch: str = "sm_80"                 # the target the candidates are scheduled for
    timer: object = None                # runs -> ms (measure.py); None: the executor's own
    jobs: int = 1                       # compile workers (GPU)
    resume: bool = False
    defines: dict = field(default_factory=dict)  # -D: dtypes and constants outside the space
    seed: int = 0
    min_ms: float = 100.0               # GPU: milliseconds of runs per candidate
    progress: object = None             # output.Progress-like: start(total, what), advance(best), close()


def tune_bucket(k, space: dict, shapes: dict, settings: Settings) -> BucketReport:
    """Tune kernel `k` (a `tlc.kernel.Kernel` of a module on `settings.target`) over `space` for
    the bucket of `shapes` (shape symbol -> size text)."""
    started = time.perf_counter()
    program, fn = k.module.program, k.fn
    bound = bind_constants(program, fn, settings.defines)
    values = inputs.prepare(bound, {}, shapes, settings.seed)
    dtypes = {p.name: settings.defines.get(p.name, p.value) for p in fn.params if p.role == "dtype"}
    dtypes.update(k.dtypes_from_arrays(values, settings.defines))
    sizes = {s: inputs.shape_size(s, v) for s, v in shapes.items()}
    defaults = {p.name: p.value for p in fn.params if p.role == "const" and p.has_default}
    fixed = {**settings.defines, **k.sizes_from_arrays(values, settings.defines)}

    def full(constants: dict) -> dict:
        return {**defaults, **fixed, **constants}

    report = BucketReport(k.name, fn.module_path or program.path, settings.arch, settings.target,
                          sizes, bucket_when(sizes, dtypes))
    shipped = full(k.with_recorded(values, {}, settings.arch) if k.recorded_rules() else {})
    report.shipped = {c: v for c, v in shipped.items() if c in defaults}
    todo = candidates(space)
    by_label = {c.label: c for c in todo}
    report.shipped_label = next((c.label for c in todo if full(c.as_dict()) == shipped),
                                "shipped: " + Candidate(tuple(report.shipped.items())).label)

    journal = Journal(journal_path(program.sources, k.name, report.when, settings.arch, settings.target, space),
                      settings.resume)
    done = {label: _outcome(e, by_label[label]) for label, e in journal.entries.items() if label in by_label}
    outcomes = {c.label: done.get(c.label) for c in todo}

    # 1. prune by scheduling: no compile for what the target cannot hold
    for c in todo:
        if outcomes[c.label] is None:
            outcomes[c.label] = _prune(program, k, full(c.as_dict()), c, settings)
            if outcomes[c.label] is not None:
                journal.add(outcomes[c.label].to_json())
    alive = [c for c in todo if outcomes[c.label] is None]

    # 2. compile in parallel (GPU): the cache then holds every kernel
    if settings.target == "cuda" and alive:
        from . import pool
        from ..runtime.compile import current_device

        progress = settings.progress
        if progress:
            progress.start(len(alive) + 2, "compiling")
        # as a call binds them (the dtypes from the arrays too), so that the call finds the
        # cache's entry; the reference (the defaults) and the shipped configuration as well
        def bound(constants: dict) -> dict:
            return k.bind((), {**values, **constants})[1]

        configs = {" defaults": bound(full({})), " shipped": bound(shipped),
                   **{c.label: bound(full(c.as_dict())) for c in alive}}
        try:
            results = pool.compile_all(fn.module_path or program.path, k.name, configs, current_device(),
                                       settings.jobs, on_done=(lambda label: progress.advance(None)) if progress else None)
        finally:
            if progress:
                progress.close()
        for c in alive:
            failed = results.get(c.label)
            if failed is not None:
                code, message = failed
                status = "pruned" if code in RESOURCE_CODES else "invalid" if code.startswith("E") else "error"
                outcomes[c.label] = Outcome(c.label, c.as_dict(), status, why=message, code=code)
                journal.add(outcomes[c.label].to_json())
        alive = [c for c in alive if outcomes[c.label] is None]

    # 3. the reference: the kernel's own defaults
    outputs = _written(program, k, full({}), settings.arch)
    executor = measure.Executor(k, values, outputs, on_gpu=settings.target == "cuda", arch=settings.arch)
    reference = _reference(executor, full, todo)
    timer = settings.timer or (measure.gpu_timer(settings.min_ms) if settings.target == "cuda" else measure.wall_timer)

    # 4. check, then time, each candidate
    progress = settings.progress
    if progress:
        progress.start(len(alive), "measuring")
        progress.best = _best(outcomes)
    try:
        for c in alive:
            outcomes[c.label] = _measure(executor, c, full(c.as_dict()), reference, timer)
            journal.add(outcomes[c.label].to_json())
            if progress:
                progress.advance(_best(outcomes))
    finally:  # an interruption too: the bar ends before the message
        if progress:
            progress.close()
    report.outcomes = [outcomes[c.label] for c in todo]

    # 5. the fastest few and the shipped configuration, again, together
    right = sorted((o for o in report.outcomes if o.status == "ok"), key=lambda o: o.ms)
    if right:
        final = {o.label: executor.runner(full(o.constants)) for o in right[:FINAL_ROUND]}
        if report.shipped_label not in final and _shipped_right(executor, report.shipped_label, outcomes, shipped,
                                                                reference):
            final[report.shipped_label] = executor.runner(shipped)
        report.final = timer(final)
        best = min(report.final, key=lambda label: report.final[label])
        chosen = full(outcomes[best].constants) if best in by_label else shipped
        report.winner = Outcome(best, {n: v for n, v in chosen.items() if n in defaults}, "ok", report.final[best])
    report.seconds = time.perf_counter() - started
    return report


def _shipped_right(executor, label: str, outcomes: dict, shipped: dict, reference: dict) -> bool:
    """Whether the shipped configuration computes the right output: as measured when it is in
    the space; checked here when it is not (a wrong one is never timed, nor chosen)."""
    if label in outcomes:
        return outcomes[label].status == "ok"
    try:
        return measure.check(executor.outputs_of(shipped), reference).ok
    except Exception:  # noqa: BLE001 - one that cannot run is not compared
        return False


def _outcome(entry: dict, c: Candidate) -> Outcome:
    return Outcome(c.label, c.as_dict(), entry.get("status", "error"), entry.get("ms"), entry.get("why", ""),
                   entry.get("code", ""))


def _prune(program, k, constants: dict, c: Candidate, settings: Settings) -> Outcome | None:
    """An Outcome for a candidate the target cannot hold (or the kernel does not take), else None."""
    try:
        kernels = schedule_grids(program, k.name, constants, target=settings.arch)
        if settings.target == "cpu":  # what the GPU compile would find first: the target's limits
            from ..codegen import generate

            for kernel in kernels:
                generate(kernel, settings.arch, sources=program.sources)
    except DiagnosticError as e:
        d = e.diagnostics[0]
        status = "pruned" if d.code in RESOURCE_CODES else "invalid"
        return Outcome(c.label, c.as_dict(), status, why=d.message, code=d.code)
    return None


def _written(program, k, constants: dict, arch: str) -> list:
    kernels = k.scheduled_grids(constants, arch)
    names = set().union(*(written_names(x.body) for x in kernels))
    return [p.name for p in k.fn.tensor_params if p.name in names]


def _reference(executor, full, todo) -> dict:
    """The outputs of the kernel's defaults, or when those cannot run here, of the first
    candidate that runs."""
    for constants in [{}] + [c.as_dict() for c in todo]:
        try:
            return copy.deepcopy(executor.outputs_of(full(constants)))
        except Exception:  # noqa: BLE001 - the next configuration then
            continue
    raise DiagnosticError([_no_reference(executor.kernel)], executor.kernel.module.program.sources)


def _no_reference(k):
    from ..diagnostics import Diagnostic

    return Diagnostic("E342", f"no configuration of '{k.name}' runs, so there is no reference output to check "
                              "candidates against", k.fn.node.name_span,
                      "run the kernel once with tlc run to see why")


def _measure(executor, c: Candidate, constants: dict, reference: dict, timer) -> Outcome:
    try:
        got = executor.outputs_of(constants)
    except Exception as e:  # noqa: BLE001 - a candidate that cannot run is reported, never chosen
        return Outcome(c.label, c.as_dict(), "error", why=f"{type(e).__name__}: {_first_line(e)}")
    verdict = measure.check(got, reference)
    if not verdict.ok:
        return Outcome(c.label, c.as_dict(), "wrong", why=verdict.why)
    ms = timer({c.label: executor.runner(constants)})[c.label]
    return Outcome(c.label, c.as_dict(), "ok", ms)


def _first_line(e: Exception) -> str:
    text = str(e).strip()
    return (text.splitlines() or [""])[0][:300]


def _best(outcomes: dict):
    right = [o for o in outcomes.values() if o is not None and o.status == "ok"]
    return min(right, key=lambda o: o.ms) if right else None
