"""NVRTC started on a thread before a compile (`compile.warm_up_nvrtc`): its first compile in a
process costs ~200 ms more than the next on the H200, which the scheduling and the code
generation of a kernel not in the cache hide.  A stand-in NVRTC records the compiles: the
warm-up compiles a kernel-less program with the kernel's options, once per process, and the
kernel's compile starts only after it has ended (one compile at a time)."""
import threading
import time
import types

import pytest

from tlc.runtime import compile as rc

from nvrtc_library import stand_in


@pytest.fixture
def nvrtc(monkeypatch):
    calls, lock = [], threading.Lock()

    class NVRTCError(Exception):
        pass

    def compile_program(prog, options):
        with lock:
            calls.append(("start", prog, tuple(options)))
        if prog == "tl_warm_up.cu":
            time.sleep(0.05)
        with lock:
            calls.append(("end", prog))

    fake = types.SimpleNamespace(createProgram=lambda src, name, h, n: name, compileProgram=compile_program,
                                 destroyProgram=lambda prog: None, getCUBIN=lambda prog: b"cubin",
                                 getPTX=lambda prog: b"ptx", getProgramLog=lambda prog: "", NVRTCError=NVRTCError)
    stand_in(monkeypatch, fake)
    monkeypatch.setattr(rc, "cuda_include_dir", lambda: None)
    return calls


def test_the_warm_up_runs_first_and_once(nvrtc):
    rc.warm_up_nvrtc("sm_90a")
    rc.warm_up_nvrtc("sm_90a")
    assert rc.nvrtc_compile('extern "C" __global__ void k() {}', "sm_90a", "k") == b"cubin"
    options = rc.nvrtc_options("sm_90a")
    assert nvrtc == [("start", "tl_warm_up.cu", options), ("end", "tl_warm_up.cu"), ("start", "k.cu", options),
                     ("end", "k.cu")]


def test_a_compile_with_no_warm_up_compiles_alone(nvrtc):
    assert rc.nvrtc_compile('extern "C" __global__ void k() {}', "sm_90a", "k") == b"cubin"
    assert [c[:2] for c in nvrtc] == [("start", "k.cu"), ("end", "k.cu")]


def test_load_for_the_gpu_starts_it_when_the_file_was_not_checked_before(tmp_path, monkeypatch):
    """A checked-module cache miss (the file is parsed and checked, its kernels then compiled)
    starts the warm-up; a hit (whose kernels are likely in the kernel cache) does not."""
    from tlc import api
    import tlc.runtime

    monkeypatch.setenv("TLC_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(api, "_gpu_available", lambda: True)  # as on a GPU machine; runs on the interpreter here
    started = []
    monkeypatch.setattr(tlc.runtime, "warm_up", lambda device=None: started.append(device))
    path = tmp_path / "k.tl"
    path.write_text("@kernel\ndef k(x: f32[N]):\n    with grid(1, threads=32) as bx:\n"
                    "        for i in parallel(32):\n            x[i] = 1.0\n")
    api.load(str(path))
    api.load(str(path))
    assert started == [None]

