"""`tlc tune` (LANGUAGE.md section 6): search a kernel's `@autotune` space (or `--space`) for
the fastest configuration that computes the right output, per shape bucket, and record it in
the `config.json` beside the `.tl` file, which calls then read (tlc/config_table.py).

Modules: `space` (the configurations, the buckets), `tuner` (one bucket: prune, compile,
check, time), `pool` (parallel compiles), `measure` (runs, checks, timers), `journal`
(`--resume`), `output` (progress bar, summary, JSON).  `tune()` below ties them to a file.
"""
from __future__ import annotations

import datetime
from pathlib import Path

from .. import config_table
from ..diagnostics import Diagnostic, DiagnosticError
from ..schedule.bind import parse_value
from . import measure
from .output import Progress, summary, to_json
from .space import bucket_when, candidates, parse_space, space_of
from .tuner import BucketReport, Settings, tune_bucket

__all__ = ["tune", "tune_kernel", "Settings", "BucketReport", "Progress", "summary", "to_json", "candidates",
           "bucket_when", "TIMERS"]

TIMERS = {"fake": measure.fake_timer, "wall": measure.wall_timer}


def tune(path: str, kernel: str, shapes, *, space=(), target: str = "auto", arch: str | None = None, timer=None,
         jobs: int | None = None, resume: bool = False, defines: dict | None = None, seed: int = 0,
         min_ms: float = 100.0, write: bool = True, user_config: bool = False, progress=None) -> list:
    """Tune `kernel` of the `.tl` file at `path` (or `std.NAME`) for each bucket of `shapes`
    (a list of {shape symbol: size}); `space`: `--space` items (NAME=V1,V2), else the kernel's
    @autotune.  Returns one `BucketReport` per bucket; records the winners unless `write` is
    false (into the per-user config.json when `user_config`)."""
    from ..api import load

    mod = load(path, target=_executor(target))
    k = mod.kernels.get(kernel)
    if k is None or k.fn.kind != "kernel":
        known = ", ".join(name for name, x in mod.kernels.items() if x.fn.kind == "kernel") or "none"
        raise DiagnosticError([Diagnostic("E344", f"{path} has no kernel '{kernel}' to tune", None,
                                          f"its kernels are: {known}")])
    return tune_kernel(k, shapes, space=parse_space(space, k.fn), arch=arch, timer=timer, jobs=jobs, resume=resume,
                       defines=defines, seed=seed, min_ms=min_ms, write=write, user_config=user_config,
                       progress=progress)


def tune_kernel(k, shapes, *, space: dict | None = None, arch: str | None = None, timer=None, jobs: int | None = None,
                resume: bool = False, defines: dict | None = None, seed: int = 0, min_ms: float = 100.0,
                write: bool = True, user_config: bool = False, progress=None) -> list:
    """`tune` for a loaded kernel `k` (its module's target is the executor)."""
    from .pool import default_jobs

    target = k.module.target
    try:
        space = space_of(k.fn, space or {})
    except DiagnosticError as e:  # shown with the kernel's line
        raise DiagnosticError(e.diagnostics, k.module.program.sources) from None
    arch = _arch(target, arch)
    tl_path = k.fn.module_path or k.module.program.path
    config = _config_path(tl_path, user_config) if write else None
    if isinstance(timer, str):
        timer = TIMERS[timer]
    settings = Settings(target=target, arch=arch, timer=timer, jobs=jobs or default_jobs(), resume=resume,
                        defines={name: parse_value(v) if isinstance(v, str) else v for name, v in (defines or {}).items()},
                        seed=seed, min_ms=min_ms, progress=progress)
    reports = []
    for bucket in shapes:
        report = tune_bucket(k, space, {s: str(v) for s, v in bucket.items()}, settings)
        if report.winner is not None and config is not None:
            config_table.record(config, Path(tl_path).name, k.name, _rule(report))
            report.config = str(config)
            k.forget_rules()
        reports.append(report)
    return reports


def _executor(target: str) -> str:
    if target in ("cpu", "cuda"):
        return target
    from ..runtime.compile import cuda_unavailable_reason

    return "cuda" if cuda_unavailable_reason() is None else "cpu"


def _arch(target: str, arch: str | None) -> str:
    from .. import targets

    if target == "cuda":
        from ..runtime import target_arch

        device_arch = target_arch()
        if arch is not None and arch != device_arch:
            raise DiagnosticError([Diagnostic(
                "E343", f"--arch {arch}: the GPU here runs {device_arch} kernels, and tlc tune measures on it", None,
                f"drop --arch, or tune on the interpreter with --target cpu --arch {arch} (which checks and prunes "
                "for that target but times the interpreter)")])
        return device_arch
    targets.get(arch or "sm_80")  # E071 for an unknown one
    return arch or "sm_80"


def _config_path(tl_path: str, user_config: bool) -> Path:
    """Where the winners go: the config.json beside the file, or the per-user one; a folder that
    cannot be written is said before anything is measured."""
    if user_config:
        config = config_table.user_path(tl_path)
    else:
        config = config_table.beside(tl_path)
        if not config_table.writable_folder(config):
            raise config_table.ConfigError(
                f"cannot record the tuned configurations in {config}: the folder {config.parent} is read-only; "
                "give --user-config to record them in your own config.json (read before the folder's), "
                f"{config_table.user_path(tl_path)}, or --no-write to only measure")
    if config.exists():
        config_table.check_writable(config)
    return config


def _rule(report: BucketReport) -> dict:
    where = "the GPU" if report.target == "cuda" else "the interpreter (--target cpu)"
    shipped = report.shipped_ms
    note = (f"tlc tune {datetime.date.today().isoformat()} on {where}: {_us(report.winner.ms)} at "
            f"{', '.join(f'{s}={v}' for s, v in report.shapes.items())}"
            + (f", the shipped {report.shipped_label} {_us(shipped)}" if shipped is not None else "")
            + f"; {len(report.outcomes)} configurations, {sum(report.pruned.values())} pruned, "
              f"{report.count('wrong')} wrong")
    return {"arch": [report.arch], "when": report.when, "constants": report.winner.constants, "note": note}


def _us(ms: float) -> str:
    return f"{ms * 1e3:.1f} us"
AUTOTUNE_TIMER = None  # what `autotune=True` times with (None: the executor's own); tests set "fake"
