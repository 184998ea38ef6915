"""The launch memo (runtime/checked_cache.py's LaunchMemo): a new process's first call like one made before
launches its kernel from the program cache without decoding the kernel's checked signature,
binding or reading config.json's rules (issue #15); anything that differs is the general path,
which records the call.  The GPU is stood in for: NVRTC, the device's facts and the launch."""
import json
import os
import time

import numpy as np
import pytest

import tlc
import tlc.runtime
from tlc import api, kernel as kernel_mod
from tlc.runtime import checked_cache, launch
from tlc.runtime import compile as rc

from test_checked_cache import HELPERS, SOURCE as CHECKED

# the checked-module cache's test module (a kernel without constants, importing a helper, and a
# tile op) and a kernel whose dtype parameter its arrays bind
SOURCE = CHECKED + """
@kernel
def copy(x: T[N], y: T[N], T: dtype = f32):
    with grid(cdiv(N, 32), threads=32) as bx:
        for i in parallel(32):
            if bx * 32 + i < N:
                y[bx * 32 + i] = x[bx * 32 + i]
"""


@pytest.fixture
def gpu(h200, monkeypatch):
    """An H200 as far as loading, compiling and calling ask; each launch recorded, not run."""
    monkeypatch.setattr(rc, "require_cuda", lambda: None)
    monkeypatch.setattr(rc, "warm_up_nvrtc", lambda arch: None)
    monkeypatch.setattr(kernel_mod, "_current_device", lambda: 0)
    monkeypatch.setattr(kernel_mod, "_single_gpu", lambda: True)
    monkeypatch.setattr(kernel_mod, "_archs", {})
    launches = []
    monkeypatch.setattr(launch.CompiledKernel, "launch",
                        lambda self, values: launches.append(("launch", self.name, self.binary, sorted(values))))
    monkeypatch.setattr(launch.CompiledKernel, "call_positional",
                        property(lambda self: lambda args: launches.append(("fast", self.name, self.binary, len(args)))))
    monkeypatch.setattr(launch.CompiledKernel, "call",
                        property(lambda self: lambda values: launches.append(("call", self.name, self.binary, sorted(values)))))
    src = h200.parent / "src"
    src.mkdir()
    (src / "helpers.tl").write_text(HELPERS)
    (src / "m.tl").write_text(SOURCE)
    return src / "m.tl", launches


def decodes(monkeypatch) -> list:
    """The qualnames whose checked signature a cached module decodes from now on."""
    seen = []
    real = checked_cache.Signatures.__getitem__
    monkeypatch.setattr(checked_cache.Signatures, "__getitem__", lambda self, q: seen.append(q) or real(self, q))
    return seen


def memo_doc(path) -> dict:
    found, = (path.parent.parent / "cache").glob("*.launch")
    return json.loads(found.read_text())


def arrays(n=100, dtype=np.float32):
    return np.arange(n, dtype=dtype), np.zeros(n, dtype)


@pytest.mark.parametrize("name, extra", [("copy", ()), ("scale", (2.0,))])
def test_a_call_like_one_before_launches_without_the_signature(gpu, monkeypatch, name, extra):
    path, launches = gpu
    getattr(tlc.load(str(path), target="cuda"), name)(*arrays(), *extra)  # checked, built, recorded
    first = launches[-1]
    assert first[0] == "launch" and first[2] == b"cubin of " + name.encode()
    seen = decodes(monkeypatch)
    mod = tlc.load(str(path), target="cuda")  # a new process's: the module from the checked cache
    assert mod._check is not None
    k = getattr(mod, name)
    k(*arrays(), *extra)
    assert launches[-1] == first and seen == []  # the same kernel, its arguments checked at launch
    k(*arrays(), *extra)  # later calls: the launcher kept, as after the general path
    assert launches[-1][:3] == ("fast", name, first[2]) and seen == []
    if name == "scale":  # no constants: the kernel's one launcher, with no test of the signature
        assert k._fast is not None and k._by_signature == {}
    else:
        assert k._fast is None and len(k._by_signature) == 1
    assert k.fn.name == name and len(seen) == 1 and seen[0].endswith(f"m.tl:{name}")  # decoded when read


def test_another_shape_dtype_or_config_json_takes_the_general_path_and_is_recorded(gpu, monkeypatch):
    path, launches = gpu
    tlc.load(str(path), target="cuda").copy(*arrays())
    seen = decodes(monkeypatch)
    tlc.load(str(path), target="cuda").copy(*arrays(50))  # another shape: the memo keys calls by
    assert len(seen) == 1  # their shapes (a shape may choose constants), so this is a miss
    seen.clear()
    tlc.load(str(path), target="cuda").copy(*arrays(dtype=np.float16))
    assert len(seen) == 1 and launches[-1][2] == b"cubin of copy"
    assert len(memo_doc(path)["kernels"]["copy"]["calls"]) == 3  # each recorded
    seen.clear()
    tlc.load(str(path), target="cuda").copy(*arrays(50))
    assert seen == []
    seen.clear()
    (path.parent / "config.json").write_text(json.dumps({"format": 1, "kernels": {}}))
    tlc.load(str(path), target="cuda").copy(*arrays())
    assert len(seen) == 1  # a config.json where there was none: its rules might choose others


def test_a_settled_config_json_is_vouched_for_by_its_stamp_a_rewritten_one_by_its_bytes(gpu, monkeypatch):
    """The memo keeps each config.json's stamp (size, times, inode) beside its SHA-256 where it
    last changed more than two seconds before (here: before now): a call like one before reads
    and hashes it only where the stamp differs; a rewrite of the same size with its modification
    time put back still changes its change time, and its bytes decide."""
    from tlc.runtime import cache as cache_mod

    monkeypatch.setattr(cache_mod, "_SETTLED_NS", 0)
    path, launches = gpu
    config = path.parent / "config.json"
    config.write_text(json.dumps({"format": 1, "kernels": {}}))
    time.sleep(0.01)
    tlc.load(str(path), target="cuda").copy(*arrays())
    [record] = memo_doc(path)["kernels"]["copy"]["calls"].values()
    [stamped] = [c for c in record["configs"] if c[0] == str(config)]
    st = os.stat(config)
    assert stamped[2] == f"{st.st_size}:{st.st_mtime_ns}:{st.st_ctime_ns}:{st.st_ino}"
    hashed, real = [], checked_cache._file_digest
    monkeypatch.setattr(checked_cache, "_file_digest", lambda p: hashed.append(p) or real(p))
    seen = decodes(monkeypatch)
    tlc.load(str(path), target="cuda").copy(*arrays())
    assert seen == [] and hashed == []  # a hit, config.json by its stamp
    config.write_text(json.dumps({"format": 1, "kernels": {"x": []}})[:st.st_size].ljust(st.st_size))
    os.utime(config, ns=(st.st_atime_ns, st.st_mtime_ns))
    tlc.load(str(path), target="cuda").copy(*arrays())
    assert hashed[0] == str(config) and len(seen) == 1  # its bytes differ: the general path (which records it)


@pytest.mark.parametrize("damage", [b"", b"\0" * 64, b'{"format": "tlc-launch-memo-1", "kernels": {"copy": 7}}'])
def test_a_damaged_memo_is_a_miss(gpu, monkeypatch, damage):
    path, launches = gpu
    tlc.load(str(path), target="cuda").copy(*arrays())
    found, = (path.parent.parent / "cache").glob("*.launch")
    found.write_bytes(damage)
    seen = decodes(monkeypatch)
    tlc.load(str(path), target="cuda").copy(*arrays())
    assert len(seen) == 1 and launches[-1][:2] == ("launch", "copy")
    assert list(memo_doc(path)["kernels"]) == ["copy"]  # written again


def test_a_program_entry_gone_is_built_again(gpu, monkeypatch):
    path, launches = gpu
    tlc.load(str(path), target="cuda").copy(*arrays())
    for entry in (path.parent.parent / "cache").glob("p*.bin"):
        entry.unlink()
    tlc.load(str(path), target="cuda").copy(*arrays())
    assert launches[-1][:3] == ("launch", "copy", b"cubin of copy") and len(launches) == 2
    assert any((path.parent.parent / "cache").glob("p*.bin"))


def test_a_signature_written_by_address_is_not_kept():
    from tlc.runtime.checked_cache import signature_key

    assert signature_key((0, ("numpy", np.dtype("float32"), (4,)), float)) is not None
    assert signature_key((0, object())) is None


def test_an_interpreter_module_keeps_no_memo(gpu):
    path, _ = gpu
    mod = api._cached_module(str(path), "cpu")
    assert mod is None or mod._memo is None or mod.target == "cpu"


def test_a_process_records_its_first_call_of_a_kernel_only(gpu):
    """A process whose shapes change at every call writes no file per shape: its first call of
    each kernel is what the next process's first call may be like."""
    path, _ = gpu
    mod = tlc.load(str(path), target="cuda")
    for n in (10, 20, 30):
        mod.copy(*arrays(n))
    assert len(memo_doc(path)["kernels"]["copy"]["calls"]) == 1


TWO_GRIDS = """
@kernel
def twice(x: f32[N], y: f32[N]):
    with grid(cdiv(N, 32), threads=32) as bx:
        for i in parallel(32):
            if bx * 32 + i < N:
                y[bx * 32 + i] = x[bx * 32 + i]
    with grid(cdiv(N, 32), threads=32) as bx:
        for i in parallel(32):
            if bx * 32 + i < N:
                y[bx * 32 + i] = y[bx * 32 + i] * 2.0
"""


def test_a_kernel_of_two_grids_launches_both_and_records_nothing(gpu):
    """A kernel of several grids (flash_bwd, flash_decode's split and combine) launches them in
    order on the general path; the memo's fast paths launch one kernel, so nothing is recorded
    (session 15's H200 run: the first call raised UnboundLocalError here)."""
    path, launches = gpu
    path.write_text(TWO_GRIDS)
    mod = tlc.load(str(path), target="cuda")
    mod.twice(*arrays())
    mod.twice(*arrays())
    assert [(kind, name) for kind, name, *_ in launches] == [("call", "twice_grid0"), ("call", "twice_grid1")] * 2
    assert not list((path.parent.parent / "cache").glob("*.launch"))


def test_a_module_records_copy_of_the_memo_serves_a_call_without_the_memo_file(gpu, monkeypatch):
    """The module record (runtime/checked_cache.py) holds a copy of the launch memo, kept as the
    memo records calls: a new process's load and first call like one before read neither the
    memo's file nor the checked entry; another signature takes the general path, and is
    recorded in both, so that the process after reads neither again."""
    from tlc import files
    from tlc.runtime import cache as cache_mod

    monkeypatch.setattr(cache_mod, "_SETTLED_NS", 0)  # the module's files taken as settled
    path, launches = gpu
    tlc.load(str(path), target="cuda").copy(*arrays())  # checked, built, recorded
    first = launches[-1]
    read, real = [], files.read_regular
    monkeypatch.setattr(files, "read_regular", lambda p, **k: read.append(str(p)) or real(p, **k))
    seen = decodes(monkeypatch)
    tlc.load(str(path), target="cuda").copy(*arrays())
    assert launches[-1] == first and seen == []
    assert not [p for p in read if p.endswith((".launch", ".checked", ".tl"))]
    tlc.load(str(path), target="cuda").copy(*arrays(50))  # another shape: the general path, recorded
    assert len(seen) == 1 and any(p.endswith(".launch") for p in read) is False
    read.clear()
    seen.clear()
    tlc.load(str(path), target="cuda").copy(*arrays(50))
    assert seen == [] and not [p for p in read if p.endswith((".launch", ".checked", ".tl"))]
    assert len(memo_doc(path)["kernels"]["copy"]["calls"]) == 2  # the memo's file kept as ever
