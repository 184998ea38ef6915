"""Compiling `tlc tune`'s candidates in parallel worker processes (spawned: CUDA does not
survive a fork).  Each worker loads the module once, then schedules, generates and compiles a
configuration through NVRTC into the on-disk kernel cache, so that the tuning process then
finds every kernel there and only launches it."""
from __future__ import annotations

import os
from concurrent.futures import ProcessPoolExecutor, as_completed

_modules: dict = {}  # path -> the module, in a worker


def default_jobs() -> int:
    return max(1, min(16, os.cpu_count() or 1))


def compile_all(path: str, kernel: str, configs: dict, where, jobs: int, on_done=None, work=None) -> dict:
    """label -> None (compiled) or (code, message) for each of `configs` (label -> constants),
    by `work(path, kernel, constants, where)` (`compile_one` for GPU `where`, by default;
    `generate_one` for an arch); `on_done(label)` after each."""
    work = work or compile_one
    results: dict = {}
    if jobs <= 1 or len(configs) <= 1:
        for label, constants in configs.items():
            results[label] = work(path, kernel, constants, where)
            if on_done:
                on_done(label)
        return results
    import multiprocessing

    with ProcessPoolExecutor(max_workers=min(jobs, len(configs)), mp_context=multiprocessing.get_context("spawn")) as pool:
        futures = {pool.submit(work, path, kernel, constants, where): label for label, constants in configs.items()}
        for future in as_completed(futures):
            label = futures[future]
            try:
                results[label] = future.result()
            except Exception as e:  # noqa: BLE001 - a worker that died: the candidate is reported, not chosen
                results[label] = ("ERROR", f"{type(e).__name__}: {e}")
            if on_done:
                on_done(label)
    return results


def compile_one(path: str, kernel: str, constants: dict, device: int):
    """None when the kernel compiled, else (the diagnostic's code or "ERROR", its message)."""
    from ..api import load
    from ..diagnostics import DiagnosticError

    try:
        import cupy

        cupy.cuda.Device(device).use()
        mod = _modules.get(path)
        if mod is None:
            mod = _modules[path] = load(path, target="cuda")
        mod.kernels[kernel].compiled_grids(constants, device)
        return None
    except DiagnosticError as e:
        d = e.diagnostics[0]
        return (d.code, d.message)
    except Exception as e:  # noqa: BLE001 - NVRTC's refusal is a tlc bug, reported with the candidate
        return ("ERROR", f"{type(e).__name__}: {' '.join(str(e).split())[:300]}")


def generate_one(path: str, kernel: str, constants: dict, arch: str):
    """`compile_one` without a GPU: the configuration scheduled and its CUDA C generated for
    `arch` (what a worker does before NVRTC); None, or (the diagnostic's code, its message)."""
    from ..api import load
    from ..codegen import generate
    from ..diagnostics import DiagnosticError

    try:
        mod = _modules.get(path)
        if mod is None:
            mod = _modules[path] = load(path, target="cpu")
        k = mod.kernels[kernel]
        for scheduled in k.scheduled_grids(constants, arch):
            generate(scheduled, arch, sources=mod.program.sources)
        return None
    except DiagnosticError as e:
        return (e.diagnostics[0].code, e.diagnostics[0].message)
