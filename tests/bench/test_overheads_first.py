"""bench/overheads.py's first calls without a GPU: the cold process runs with NVRTC's cache
empty (a new CUDA_CACHE_PATH: NVRTC 13 keeps its programs in the driver's compute cache, which
a kernel compiled on the machine before would hit), the cached one with the environment as it
was; NVRTC's share of a call (the child's timer of `runtime.compile.nvrtc_compile`) and how its
cache was handled are reported.  The GPU runs are the device queue's."""
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))
import overheads  # noqa: E402


def child_result(**nvrtc):
    return {"import_ms": 900.0, "import_tlc_ms": 200.0, "context_ms": 300.0, "load_ms": 150.0, "call_ms": 600.0,
            "ok": True, "decoded": True, "error": 0.001,
            "nvrtc": {"wait_ms": 40.0, "compile_ms": 360.0, "compiles": 1, **nvrtc}}


@pytest.fixture
def children(monkeypatch):
    """subprocess.run stood in for: each child's (script, env), its answer a fixed record; a
    child with a CUDA_CACHE_PATH writes a 'cache entry' there, as NVRTC does."""
    seen = []

    def run(cmd, env=None, **kw):
        if cmd[1:3] == ["-m", "compileall"]:
            return subprocess.CompletedProcess(cmd, 0, "", "")
        seen.append((cmd[2], dict(env)))
        if "CUDA_CACHE_PATH" in env:
            assert os.listdir(env["CUDA_CACHE_PATH"]) == []  # empty when the child starts
            Path(env["CUDA_CACHE_PATH"], "index").write_bytes(b"x" * 2048)
        cached = "CUDA_CACHE_PATH" not in env
        return subprocess.CompletedProcess(cmd, 0, json.dumps(child_result(compiles=0 if cached else 1)) + "\n", "")

    monkeypatch.setattr(subprocess, "run", run)
    monkeypatch.delenv("TLC_BENCH_NVRTC_CACHE", raising=False)
    monkeypatch.delenv("TLC_BENCH_FIRST_PROFILE", raising=False)
    monkeypatch.delenv("TLC_BENCH_FIRST_CACHE", raising=False)
    monkeypatch.setenv("CUDA_CACHE_DISABLE", "1")  # the user's setting: the cold child measures the cache on
    return seen


def test_the_cold_call_runs_with_an_empty_nvrtc_cache_and_the_cached_as_it_was(children, capsys):
    results = {}
    overheads.first_result(results)
    (cold_script, cold), (cached_script, cached) = children
    assert cold_script == cached_script == overheads.FIRST_CALL
    assert cold["CUDA_CACHE_PATH"] != cached.get("CUDA_CACHE_PATH") and "CUDA_CACHE_DISABLE" not in cold
    assert cached["CUDA_CACHE_DISABLE"] == "1" and cold["TLC_CACHE_DIR"] == cached["TLC_CACHE_DIR"]
    assert results["first_cold"]["nvrtc_cache"] == (
        f"NVRTC's cache: empty at the start (CUDA_CACHE_PATH={cold['CUDA_CACHE_PATH']}); 1 files, 2 KB in it after")
    overheads.report_first(results)
    out = capsys.readouterr().out.splitlines()
    assert out[1].startswith("first call, empty cache, new process: load + call 750.0 ms (goal < 500;")
    assert out[2] == ("  NVRTC 400.0 ms of the call's 600.0 (67%): 1 compile 360.0 ms after waiting 40.0 ms for the "
                      "warm-up thread; the rest (Python: schedule, generate, load, launch) 200.0 ms")
    assert out[3] == f"  {results['first_cold']['nvrtc_cache']}"
    assert out[4].startswith("first call, kernel in the disk cache, new process: load + call 750.0 ms (goal < 2;")


def test_the_machines_nvrtc_cache_when_asked(children, monkeypatch):
    monkeypatch.setenv("TLC_BENCH_NVRTC_CACHE", "machine")
    results = {}
    overheads.first_result(results)
    assert all("CUDA_CACHE_PATH" not in env for _, env in children)
    assert results["first_cold"]["nvrtc_cache"].startswith("NVRTC's cache: the machine's")


def test_each_kernel_in_its_own_process_with_both_caches_empty(children, capsys):
    results = {}
    for name in ("rms_norm", "flash_fwd"):
        overheads.kernel_first_calls(results, [name])
        overheads.report_kernels(results, [name])
    (s1, e1), (s2, e2) = children
    assert s1 == s2 == overheads.KERNEL_CALL
    assert e1["TLC_CACHE_DIR"] != e2["TLC_CACHE_DIR"] and e1["CUDA_CACHE_PATH"] != e2["CUDA_CACHE_PATH"]
    assert json.loads(e1["TLC_BENCH_KERNEL"])[0] == "std.nn" and json.loads(e2["TLC_BENCH_KERNEL"])[0] == "std.attention"
    out = capsys.readouterr().out.splitlines()
    assert out[0] == ("rms_norm (std.nn), first call, empty tlc and NVRTC caches, new process: load + call 750.0 ms "
                      "(load 150.0, call 600.0); matches PyTorch (max error 0.001, tolerance 0.02)")
    assert out[1].startswith("  NVRTC 400.0 ms of the call's 600.0") and out[2].startswith("  NVRTC's cache: empty")


def test_a_wrong_result_is_said(children, monkeypatch, capsys):
    results = {"kernel_softmax": {**child_result(), "ok": False, "error": 0.5, "nvrtc_cache": "c"}}
    overheads.report_kernels(results, ["softmax"])
    assert "WRONG RESULT (max error 0.5, tolerance 0.001)" in capsys.readouterr().out


def test_unknown_kernels_are_refused(capsys):
    with pytest.raises(SystemExit):
        overheads.main(["--only", "first", "--kernels", "matmul,gemv"])
    assert "--kernels: no such kernel gemv (known: matmul, rms_norm, softmax, flash_fwd)" in capsys.readouterr().err


def test_the_kernels_code_compiles():
    for module, kernel, setup, check, tol in overheads.KERNELS.values():
        compile(setup, kernel, "exec")
        compile(check, kernel, "eval")
        assert f"mod.{kernel}(" in setup and tol > 0
    compile(overheads.KERNEL_CALL, "child", "exec")
    compile(overheads.FIRST_CALL, "child", "exec")


def test_the_childs_nvrtc_timer_times_the_wait_and_the_compile_apart(monkeypatch):
    """NVRTC_TIMER as the children run it, over runtime.compile with NVRTC stood in for: the
    wait for a warm-up thread still running, then the compile."""
    import tlc.runtime.compile as rc

    def compile_(source, arch, name):
        time.sleep(0.05)
        return b"cubin"

    warm = threading.Thread(target=time.sleep, args=(0.1,))
    monkeypatch.setattr(rc, "nvrtc_compile", compile_)
    monkeypatch.setattr(rc, "_warm_up", warm)
    scope = {"time": time}
    exec(overheads.NVRTC_TIMER, scope)
    warm.start()
    assert rc.nvrtc_compile("src", "sm_90a", "k") == b"cubin"
    n = scope["NVRTC"]
    assert n["compiles"] == 1 and 80 <= n["wait_ms"] < 1000 and 40 <= n["compile_ms"] < 1000
