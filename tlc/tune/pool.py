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


def compile_all(path: str, kernel: str, configs: dict, device: int, jobs: int, on_done=None) -> dict:
    """label -> None (compiled) or (code, message) for each of `configs` (label -> constants);
    `on_done(label)` after each."""
    results: dict = {}
    if jobs <= 1 or len(configs) <= 1:
        for label, constants in configs.items():
            results[label] = compile_one(path, kernel, constants, device)
            if on_done:
                on_done(label)
        return results
    import multiprocessing

    with ProcessPoolExecutor(max_workers=min(jobs, len(configs)), mp_context=multiprocessing.get_context("spawn")) as pool:
        futures = {pool.submit(compile_one, path, kernel, constants, device): label for label, constants in configs.items()}
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
