"""The cpu target's library cache (runtime/cpp.py `load`) when its entries do not load: a damaged
(truncated) library raised ctypes' OSError "cannot read file data" out of every later call, and
a TLC_CACHE_DIR on a noexec mount "failed to map segment from shared object" out of the first.
No C++ compiler runs: the stand-in "compiles" by copying a shared library that loads (the
_ctypes extension's), so each test is the cache's logic alone."""
import ctypes
import shutil

import _ctypes
import pytest

import tlc
from tlc.runtime import cpp as runtime_cpp

SOURCE = "// a kernel's C++ (the text only keys the cache here)\n"


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """(the cached library's path, the stand-in compiler's runs) over an empty cache in tmp_path."""
    if runtime_cpp.find_compiler() is None:  # (toolchain(), in the cache key, asks the compiler its version)
        pytest.skip("no C++ compiler")
    monkeypatch.setenv("TLC_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(runtime_cpp, "_warned_uncached", False)
    compiles, run = [], runtime_cpp.subprocess.run

    def compiler(command, **kw):
        if "-o" not in command:  # toolchain()'s `g++ --version`
            return run(command, **kw)
        compiles.append(command)
        shutil.copyfile(_ctypes.__file__, command[command.index("-o") + 1])
        return runtime_cpp.subprocess.CompletedProcess(command, 0, "", "")
    monkeypatch.setattr(runtime_cpp.subprocess, "run", compiler)
    return runtime_cpp.library_path(SOURCE), compiles


def test_a_damaged_library_in_the_cache_is_compiled_again_over_it(cache):
    path, compiles = cache
    path.parent.mkdir(parents=True)
    path.write_bytes(b"\x7fELF truncated")
    assert isinstance(runtime_cpp.load(SOURCE, "twice"), ctypes.CDLL) and len(compiles) == 1
    assert path.read_bytes() == open(_ctypes.__file__, "rb").read()


def test_a_cache_whose_libraries_do_not_load_warns_and_loads_a_temporary_copy(cache, monkeypatch):
    path, compiles = cache
    real = ctypes.CDLL

    def noexec(name, *a, **k):
        if str(name).startswith(str(path.parent)):
            raise OSError(f"{name}: failed to map segment from shared object")
        return real(name, *a, **k)
    monkeypatch.setattr(runtime_cpp.ctypes, "CDLL", noexec)
    with pytest.warns(tlc.runtime.CacheWarning) as caught:
        assert isinstance(runtime_cpp.load(SOURCE, "twice"), real)
    assert [str(w.message) for w in caught] == [
        f"tlc: cannot load libraries from the cpu target's cache in {path.parent} ({path}: failed to map segment "
        "from shared object); kernels will be compiled again in every process. Set TLC_CACHE_DIR to a writable "
        "directory that is not mounted noexec to cache them."]
    assert len(compiles) == 2  # the first build, and the second taking the entry for damaged


def test_a_library_that_loads_nowhere_is_the_calls_error(cache, monkeypatch):
    path, _ = cache

    def refused(name, *a, **k):
        raise OSError(f"{name}: failed to map segment from shared object")
    monkeypatch.setattr(runtime_cpp.ctypes, "CDLL", refused)
    with pytest.warns(tlc.runtime.CacheWarning), pytest.raises(tlc.TlcError) as e:
        runtime_cpp.load(SOURCE, "twice")
    kept = str(e.value).split("(")[1].split(")")[0]
    assert kept != str(path) and str(e.value) == (
        f"the cpu target cannot load the library compiled for 'twice' ({kept}): {kept}: failed to map segment "
        "from shared object")
