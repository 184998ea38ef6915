"""NVRTC's version and architectures for the cache keys without loading NVRTC (issue #15: a call
served from the caches in a new process compiles nothing): a memo of the last process that asked
NVRTC, kept only while nothing that decides which NVRTC loads has changed, and NVRTC's own facts
before any compile, so that no entry is stored under another NVRTC's name.  NVRTC and the
library it is loaded from are stood in for."""
import json
import os
import sys
import time
import types

import pytest

from tlc.runtime import compile as rc


@pytest.fixture
def nvrtc(tmp_path, monkeypatch):
    """A CuPy whose NVRTC says `said["version"]`, counting the times it is asked, loaded from
    `library` (as /proc/self/maps would name it)."""
    monkeypatch.setenv("TLC_CACHE_DIR", str(tmp_path / "cache"))
    for var in rc._NVRTC_ENV:
        monkeypatch.delenv(var, raising=False)
    library = tmp_path / "lib" / "libnvrtc.so.13.0.88"
    library.parent.mkdir()
    library.write_bytes(b"\x7fELF nvrtc")
    settled(library, library.parent)  # a change made later has another time, whatever the clock's tick
    said = {"version": (13, 0), "asked": 0, "mapped": [str(library)], "loaded": False}

    def get_version():
        said["asked"] += 1
        return said["version"]

    fake = types.SimpleNamespace(getVersion=get_version, getSupportedArchs=lambda: [75, 80, 90, 100])
    cupy = types.ModuleType("cupy")
    cupy.__version__, cupy.__file__ = "14.0.0", str(tmp_path / "cupy" / "__init__.py")
    cupy.cuda = types.ModuleType("cupy.cuda")
    cupy.cuda.nvrtc = fake
    monkeypatch.setitem(sys.modules, "cupy", cupy)
    monkeypatch.setitem(sys.modules, "cupy.cuda", cupy.cuda)
    monkeypatch.setitem(sys.modules, "cupy.cuda.nvrtc", fake)
    monkeypatch.setattr(rc, "_mapped_nvrtc", lambda: set(said["mapped"]))
    monkeypatch.setattr(rc, "_nvrtc_loaded", lambda name: said["loaded"])
    monkeypatch.setattr(rc, "_facts", None)
    said["library"] = library
    return said


def new_process(monkeypatch):
    monkeypatch.setattr(rc, "_facts", None)


def settled(*paths):
    t = time.time_ns() - 60 * 10**9
    for p in paths:
        os.utime(p, ns=(t, t))


def test_a_new_process_takes_the_memo_of_the_last_that_asked(nvrtc, monkeypatch):
    assert rc.nvrtc_facts() == ((13, 0), (75, 80, 90, 100)) and nvrtc["asked"] == 1
    new_process(monkeypatch)
    assert rc.nvrtc_version() == (13, 0) and rc.nvrtc_supported_archs() == (75, 80, 90, 100)
    assert nvrtc["asked"] == 1  # NVRTC not loaded
    assert not rc.use_loaded_nvrtc() and nvrtc["asked"] == 2  # before a compile: NVRTC's own, the same


@pytest.mark.parametrize("change", [
    lambda said, mp: said["library"].write_bytes(b"\x7fELF nvrtc 13.1"),  # upgraded in place
    lambda said, mp: settled(said["library"]),  # the same size, another time
    lambda said, mp: (said["library"].parent / "libnvrtc.so.13.1.0").write_bytes(b""),  # another beside it
    lambda said, mp: mp.setenv("LD_LIBRARY_PATH", "/opt/cuda/lib64"),
    lambda said, mp: mp.setenv("CUDA_PATH", "/opt/cuda"),
    lambda said, mp: mp.setattr(sys, "path", sys.path + [str(said["library"].parent.parent / "site-packages")]),
    lambda said, mp: mp.setattr(sys.modules["cupy"], "__version__", "14.1.0"),
    lambda said, mp: said.update(loaded=True),  # an NVRTC is in the process already: asking costs nothing
    lambda said, mp: said["library"].unlink(),
])
def test_whatever_could_change_which_nvrtc_loads_asks_it(nvrtc, monkeypatch, change):
    rc.nvrtc_facts()
    new_process(monkeypatch)
    nvrtc["version"] = (13, 1)
    change(nvrtc, monkeypatch)
    assert rc.nvrtc_version() == (13, 1) and nvrtc["asked"] == 2


def test_a_site_folder_where_a_wheel_is_installed_asks_it(nvrtc, monkeypatch, tmp_path):
    site = tmp_path / "site-packages"
    site.mkdir()
    settled(site)
    monkeypatch.setattr(sys, "path", sys.path + [str(site)])
    rc.nvrtc_facts()
    new_process(monkeypatch)
    (site / "nvidia_cuda_nvrtc-13.1.0.dist-info").mkdir()
    nvrtc["version"] = (13, 1)
    assert rc.nvrtc_version() == (13, 1) and nvrtc["asked"] == 2


@pytest.mark.parametrize("mapped", [[], ["/a/libnvrtc.so.13.0.88", "/b/libnvrtc.so.13.1.0"]])
def test_no_memo_where_the_loaded_library_is_unknown(nvrtc, monkeypatch, mapped):
    nvrtc["mapped"] = mapped  # no /proc, or two of them mapped
    rc.nvrtc_facts()
    new_process(monkeypatch)
    rc.nvrtc_facts()
    assert nvrtc["asked"] == 2


@pytest.mark.parametrize("damage", [
    lambda doc: "not json",
    lambda doc: json.dumps({**doc, "version": [13]}),
    lambda doc: json.dumps({**doc, "version": ["13", 0]}),
    lambda doc: json.dumps({**doc, "archs": []}),
    lambda doc: json.dumps({**doc, "size": doc["size"] + 1}),
    lambda doc: json.dumps({**doc, "places": doc["places"][1:]}),
    lambda doc: json.dumps({k: v for k, v in doc.items() if k != "library"}),
])
def test_a_damaged_memo_asks_nvrtc(nvrtc, monkeypatch, damage):
    rc.nvrtc_facts()
    memo = rc._nvrtc_memo()
    memo.write_text(damage(json.loads(memo.read_text())))
    new_process(monkeypatch)
    assert rc.nvrtc_version() == (13, 0) and nvrtc["asked"] == 2


def test_a_compile_uses_nvrtc_s_own_facts_and_says_when_the_memo_s_differed(nvrtc, monkeypatch):
    rc.nvrtc_facts()
    new_process(monkeypatch)
    assert rc.nvrtc_version() == (13, 0) and nvrtc["asked"] == 1  # the memo's
    nvrtc["version"] = (13, 1)  # as if another NVRTC of the same file and places loaded
    assert rc.use_loaded_nvrtc()  # the keys made from the memo's facts must be made again
    assert rc.nvrtc_version() == (13, 1) and not rc.use_loaded_nvrtc() and nvrtc["asked"] == 2
    new_process(monkeypatch)
    assert rc.nvrtc_version() == (13, 1) and nvrtc["asked"] == 2  # the memo now says what NVRTC said


def test_the_mapped_library_is_read_from_proc(monkeypatch):
    maps = ("7f00-7f10 r-xp 00000000 08:01 42 /usr/lib/libnvrtc.so.13.0.88\n"
            "7f10-7f20 r--p 00000000 08:01 43 /usr/lib/libnvrtc-builtins.so.13.0\n"
            "7f20-7f30 rw-p 00000000 00:00 0 \n"
            "7f30-7f40 r-xp 00000000 08:01 42 /usr/lib/libnvrtc.so.13.0.88\n")
    monkeypatch.setattr("builtins.open", lambda *a, **kw: __import__("io").StringIO(maps))
    assert rc._mapped_nvrtc() == {"/usr/lib/libnvrtc.so.13.0.88"}


def test_a_program_entry_is_stored_and_found_under_nvrtc_s_own_name(nvrtc, monkeypatch):
    import pathlib

    import tlc
    import tlc.runtime

    monkeypatch.setattr(tlc.runtime, "require_cuda", lambda: None)
    monkeypatch.setattr(tlc.runtime, "target_arch", lambda device=None: "sm_80")
    monkeypatch.setattr(rc, "device_capability", lambda device: (8, 0))
    monkeypatch.setattr(rc, "current_device", lambda: 0)
    monkeypatch.setattr(rc, "warm_up_nvrtc", lambda arch: None)
    monkeypatch.setattr(rc, "nvrtc_compile", lambda source, arch, name: b"cubin of NVRTC %d.%d" % nvrtc["version"])
    mod = tlc.load(str(pathlib.Path(__file__).parents[2] / "examples" / "vector_add.tl"), target="cpu")
    built = []

    def build(arch):
        built.append(arch)
        return mod.vector_add.scheduled({}, arch), mod.vector_add.generated({}, arch)

    rc.nvrtc_facts()
    new_process(monkeypatch)
    nvrtc["version"] = (13, 1)  # the memo says 13.0; the NVRTC this process loads is 13.1
    first = tlc.runtime.compile_program_kernel(mod.sources, "vector_add", {}, 0, build)
    assert built == ["sm_80"] and first.binary == b"cubin of NVRTC 13.1" and nvrtc["asked"] == 2
    new_process(monkeypatch)  # the memo now says 13.1: found by it, NVRTC not loaded
    again = tlc.runtime.compile_program_kernel(mod.sources, "vector_add", {}, 0, build)
    assert built == ["sm_80"] and again.binary == b"cubin of NVRTC 13.1" and nvrtc["asked"] == 2


ASK_ON_THE_GPU = r"""
import json, sys
import cupy
from tlc.runtime import compile as rc
before = sorted(rc._mapped_nvrtc())  # an NVRTC that importing CuPy loaded
facts = rc.nvrtc_facts()
if sys.argv[1] == "compile":
    rc.use_loaded_nvrtc()  # as before a compile: NVRTC loaded, its facts remembered
from cupy.cuda import nvrtc
mapped = sorted(rc._mapped_nvrtc())  # before NVRTC is asked here below
print(json.dumps({"facts": facts, "before": before, "mapped": mapped, "nvrtc": [list(nvrtc.getVersion()), list(nvrtc.getSupportedArchs())]}))
"""


@pytest.mark.gpu
def test_on_the_gpu_a_new_process_knows_nvrtc_without_loading_it(tmp_path):
    import subprocess

    env = {**os.environ, "TLC_CACHE_DIR": str(tmp_path)}
    runs = [json.loads(subprocess.run([sys.executable, "-c", ASK_ON_THE_GPU, what], env=env, capture_output=True,
                                      text=True, timeout=120, check=True).stdout.strip().splitlines()[-1])
            for what in ("compile", "launch")]
    compiled, launched = runs
    assert len(compiled["mapped"]) == 1 and list(tmp_path.glob("tlc-nvrtc-*.json"))  # the library, remembered
    if not launched["before"]:  # (a CuPy that loads NVRTC at its import leaves nothing to save)
        assert launched["mapped"] == []  # the second process took the memo: no NVRTC loaded
    assert [list(launched["facts"][0]), list(launched["facts"][1])] == launched["nvrtc"] == compiled["nvrtc"]
