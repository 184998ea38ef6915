"""The cpu target's library cache (runtime/cpp.py) when its entries do not load: a damaged
(truncated) library raised ctypes' OSError "cannot read file data" out of every later call, and
a TLC_CACHE_DIR on a noexec mount "failed to map segment from shared object" out of the first.
The compiler is a stand-in that copies the library compiled once into the default cache."""
import ctypes
import shutil

import numpy as np
import pytest

import tlc
from tlc.codegen import cpp as codegen_cpp
from tlc.runtime import cpp as runtime_cpp

TWICE = """
@kernel
def twice(x: f32[N], y: f32[N]):
    with grid(cdiv(N, 32), threads=32) as b:
        for i in parallel(32):
            y[b * 32 + i] = x[b * 32 + i] * 2.0
"""


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """(module, compiles): `twice` on the cpu target over an empty cache in tmp_path, whose
    compiler copies the library built once into the default cache, counting its runs."""
    mod = tlc.compile_source(TWICE, target="cpp", path="twice.tl")
    source = codegen_cpp.generate(mod.twice.scheduled({}, "cpu")).source
    built = runtime_cpp.build(source, "twice")
    monkeypatch.setenv("TLC_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(runtime_cpp, "_warned_uncached", False)
    compiles = []

    def compiler(command, **_):
        compiles.append(command)
        shutil.copyfile(built, command[command.index("-o") + 1])
        return runtime_cpp.subprocess.CompletedProcess(command, 0, "", "")
    monkeypatch.setattr(runtime_cpp.subprocess, "run", compiler)
    return tlc.compile_source(TWICE, target="cpp", path="twice.tl"), runtime_cpp.library_path(source), compiles


def called(mod) -> bool:
    x, y = np.arange(40, dtype=np.float32), np.zeros(40, np.float32)
    mod.twice(x, y)
    return (y == 2 * x).all()


def test_a_damaged_library_in_the_cache_is_compiled_again_over_it(cache):
    mod, path, compiles = cache
    path.parent.mkdir(parents=True)
    path.write_bytes(b"\x7fELF truncated")
    assert called(mod) and len(compiles) == 1
    assert path.read_bytes()[:4] == b"\x7fELF" and path.stat().st_size > 1000


def test_a_cache_whose_libraries_do_not_load_warns_and_loads_a_temporary_copy(cache, monkeypatch):
    mod, path, compiles = cache
    real = ctypes.CDLL

    def noexec(name, *a, **k):
        if str(name).startswith(str(path.parent)):
            raise OSError(f"{name}: failed to map segment from shared object")
        return real(name, *a, **k)
    monkeypatch.setattr(runtime_cpp.ctypes, "CDLL", noexec)
    with pytest.warns(tlc.runtime.CacheWarning) as caught:
        assert called(mod)
    assert [str(w.message) for w in caught] == [
        f"tlc: cannot load libraries from the cpu target's cache in {path.parent} ({path}: failed to map segment "
        "from shared object); kernels will be compiled again in every process. Set TLC_CACHE_DIR to a writable "
        "directory that is not mounted noexec to cache them."]
    assert len(compiles) == 2  # the first build, and the second taking the entry for damaged


def test_a_library_that_loads_nowhere_is_the_calls_error(cache, monkeypatch):
    mod, path, _ = cache

    def refused(name, *a, **k):
        raise OSError(f"{name}: failed to map segment from shared object")
    monkeypatch.setattr(runtime_cpp.ctypes, "CDLL", refused)
    with pytest.warns(tlc.runtime.CacheWarning), pytest.raises(tlc.TlcError) as e:
        called(mod)
    kept = str(e.value).split("(")[1].split(")")[0]
    assert kept != str(path) and str(e.value) == (
        f"the cpu target cannot load the library compiled for 'twice' ({kept}): {kept}: failed to map segment "
        "from shared object")
