"""Python work that waits for the next NVRTC compile and runs beside it (`runtime.beside`): the
caches' stores of a first call run on the calling thread while another thread compiles, and
at the latest where the caches are read again, where no compile comes, or at the process's end."""
import threading
import types

import pytest

from tlc import api
from tlc.runtime import beside, checked_cache, compile as rc

from nvrtc_library import stand_in


@pytest.fixture(autouse=True)
def nothing_waiting(monkeypatch):
    monkeypatch.setattr(beside, "_waiting", [])
    yield
    assert beside._waiting == []


@pytest.fixture
def nvrtc(monkeypatch):
    """A stand-in NVRTC that records its thread and, where work waits beside it, ends only
    after that work has run (or after 5 s, which the order recorded then shows)."""
    seen, started, worked = [], threading.Event(), threading.Event()

    def compile_program(prog, options):
        seen.append(("compile starts", threading.current_thread().name))
        started.set()
        if threading.current_thread().name == "tlc-nvrtc-compile":
            worked.wait(5)
        seen.append(("compile ends", threading.current_thread().name))

    fake = types.SimpleNamespace(createProgram=lambda src, name, h, n: name, compileProgram=compile_program,
                                 destroyProgram=lambda prog: None, getCUBIN=lambda prog: b"cubin",
                                 getPTX=lambda prog: b"ptx", getProgramLog=lambda prog: "", NVRTCError=Exception)
    stand_in(monkeypatch, fake)
    monkeypatch.setattr(rc, "cuda_include_dir", lambda: None)
    return types.SimpleNamespace(seen=seen, started=started, worked=worked)


def test_waiting_work_runs_on_the_calling_thread_while_another_compiles(nvrtc):
    def work():
        nvrtc.started.wait(5)
        nvrtc.seen.append(("work", threading.current_thread().name))
        nvrtc.worked.set()
    beside.later(work)
    assert rc.nvrtc_compile('extern "C" __global__ void k() {}', "sm_90a", "k") == b"cubin"
    assert nvrtc.seen == [("compile starts", "tlc-nvrtc-compile"), ("work", threading.current_thread().name),
                          ("compile ends", "tlc-nvrtc-compile")]


def test_a_compile_with_nothing_waiting_runs_on_the_calling_thread(nvrtc):
    assert rc.nvrtc_compile('extern "C" __global__ void k() {}', "sm_90a", "k") == b"cubin"
    assert nvrtc.seen == [("compile starts", threading.current_thread().name),
                          ("compile ends", threading.current_thread().name)]


def test_the_errors_of_the_work_and_of_the_compile_are_raised_on_the_calling_thread(monkeypatch):
    def failing_compile(source, arch, name):
        raise rc.CudaCompileError("rejected")

    def failing_work():
        raise OSError("no space left")
    beside.later(failing_work)
    monkeypatch.setattr(rc, "_nvrtc_compile", lambda source, arch, name: b"cubin")
    with pytest.raises(OSError, match="no space left"):
        rc.nvrtc_compile("", "sm_90a", "k")
    monkeypatch.setattr(rc, "_nvrtc_compile", failing_compile)
    beside.later(failing_work)
    with pytest.raises(rc.CudaCompileError, match="rejected"):  # the compile's, where both fail
        rc.nvrtc_compile("", "sm_90a", "k")


def test_work_runs_once_in_order_when_asked_now():
    done = []
    beside.later(lambda: done.append(1))
    beside.later(lambda: done.append(2))
    beside.run_now()
    beside.run_now()
    assert done == [1, 2] and not beside.waiting()


SOURCE = ("@kernel\ndef k(x: f32[N]):\n    with grid(1, threads=32) as bx:\n"
          "        for i in parallel(32):\n            x[i] = 1.0\n")


def test_load_for_the_gpu_stores_the_checked_module_beside_the_compile(tmp_path, monkeypatch):
    """A file checked for the GPU: its checked entry and module record are written beside the
    next compile, not in the load; a load of it in the same process finds them written."""
    monkeypatch.setenv("TLC_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(api, "_gpu_available", lambda: True)  # as on a GPU machine; runs on the interpreter here
    import tlc.runtime

    monkeypatch.setattr(tlc.runtime, "warm_up", lambda device=None: None)
    path = tmp_path / "k.tl"
    path.write_text(SOURCE)
    stores = []
    real_store = checked_cache.store
    monkeypatch.setattr(checked_cache, "store", lambda *a: stores.append(a[2]) or real_store(*a))
    first = api.load(str(path))
    assert stores == [] and beside.waiting()
    parses = []
    real_check = api.driver.check_source
    monkeypatch.setattr(api.driver, "check_source", lambda *a: parses.append(a) or real_check(*a))
    second = api.load(str(path))
    assert stores == [str(path)] and parses == [] and sorted(second.kernels) == sorted(first.kernels)


def test_a_process_that_loads_and_never_compiles_stores_at_exit(tmp_path):
    """Work left waiting when no compile and no second load comes runs at the process's end:
    the next process finds the checked module."""
    import os
    import subprocess
    import sys

    path = tmp_path / "k.tl"
    path.write_text(SOURCE)
    code = ("import tlc.api as api, tlc.runtime as r\n"
            "api._gpu_available = lambda: True\n"
            "r.warm_up = lambda device=None: None\n"
            f"api.load({str(path)!r})\n"
            "from tlc.runtime import beside\n"
            "assert beside.waiting()\n")
    env = {**os.environ, "TLC_CACHE_DIR": str(tmp_path / "cache")}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert len(list((tmp_path / "cache").glob("*.checked"))) == 1


def test_a_program_entry_whose_parts_another_thread_is_still_making_is_made_again(monkeypatch, tmp_path):
    """`compile_program_kernel` reads the entry's parts after its `run_now`; where another
    thread's `run_now` took that work and has not finished it, the parts are made on this one."""
    import tlc.runtime as runtime
    from tlc.runtime import cache as cache_mod

    monkeypatch.setenv("TLC_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(runtime, "_program_entry", lambda *a: ("sm_90a", "sm_90a", "p" + "0" * 64))
    monkeypatch.setattr(rc, "warm_up_nvrtc", lambda *a, **k: None)
    taken = []
    monkeypatch.setattr(beside, "later", lambda work: taken.append(work))  # as if another thread took it
    monkeypatch.setattr(runtime, "compile_kernel", lambda kernel, generated, cache=None: types.SimpleNamespace(
        binary=b"cubin", arch="sm_90a", one_part=False))
    made = []
    monkeypatch.setattr(runtime, "entry_parts", lambda kernel, generated: made.append(1) or (b"gen", b"ir"))
    monkeypatch.setattr(runtime, "program_entry",
                        lambda kernel, generated, binary, arch, parts, one_part: b"entry:" + b"".join(parts))
    stored = []
    monkeypatch.setattr(cache_mod.KernelCache, "store", lambda self, key, source, entry: stored.append(entry))
    gen = types.SimpleNamespace(source="src")
    runtime.compile_program_kernel({"m.tl": "text"}, "k", {}, 0, lambda arch: ("kernel", gen))
    assert len(taken) == 1 and made == [1] and stored == [b"entry:genir"]
