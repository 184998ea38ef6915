"""The registry of targets: tlc's own come through the `tlc.targets` entry points as a
plugin's would; the runtime's choice by compute capability; what a broken plugin does."""
import importlib
import importlib.metadata
import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from tlc import targets
from tlc.cli import main
from tlc.diagnostics import DiagnosticError
from tlc.targets.sm80 import SM80
from tlc.targets.sm86 import SM86
from tlc.targets.sm89 import SM89
from tlc.targets.sm90a import SM90A
from tlc.schedule.sm_limits import blocks_fitting

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def test_the_own_targets_facts_are_their_modules_own():
    """The runtime chooses a GPU's target from `OWN_TARGETS` without importing the others: its
    capability, exactness and host flag must be the Target's, and its name the Target's name."""
    for name, (value, capability, exact, host) in targets.OWN_TARGETS.items():
        module, _, attr = value.partition(":")
        target = getattr(importlib.import_module(module), attr)
        assert (target.name, target.capability, target.exact, target.host) == (name, capability, exact, host)
        for cc in [(7, 5), (8, 0), (8, 6), (8, 7), (8, 9), (9, 0), (10, 0), (12, 0)]:
            assert target.serves(cc) == (name in [s[2] for s in targets.registered().serving(cc)])


def test_the_own_targets_arch_answers_as_their_target():
    """`targets.arch` knows tlc's own targets from `OWN_TARGETS` (a launch from the caches then
    imports no target module): what it serves and NVRTC's `-arch` are the Target's own answers."""
    supported = [(), (80,), (80, 86), (80, 86, 89, 90), (75, 80, 86, 89, 90, 100, 120)]
    for name, (value, *_) in targets.OWN_TARGETS.items():
        module, _, attr = value.partition(":")
        target = getattr(importlib.import_module(module), attr)
        found = targets.Registry({}).arch(name)
        assert type(found) is targets.OwnArch and found.name == name and found.served() == target.served()
        for cc in [(7, 5), (8, 0), (8, 6), (8, 9), (9, 0), (10, 0), (12, 0)]:
            assert found.serves(cc) == target.serves(cc)
            assert [found.compile_arch(cc, s) for s in supported] == [target.compile_arch(cc, s) for s in supported]
    assert targets.registered().arch("sm_90a").compile_arch((9, 0), (90,)) == "sm_90a"


def test_arch_of_an_unknown_name_is_e071():
    with pytest.raises(DiagnosticError) as e:
        targets.arch("sm_75")
    assert str(e.value).splitlines()[0] == "error[E071]: unknown target architecture 'sm_75'"


def test_a_gpu_target_is_chosen_importing_its_module_alone():
    import subprocess
    import sys

    code = ("import sys; from tlc import targets; targets._plugin_entry_points = lambda: []; "
            "t = targets.for_capability((9, 0)); "
            "print(t.name, sorted(m for m in sys.modules if m.startswith('tlc.targets.')))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          cwd=EXAMPLES.parent, check=True)
    assert done.stdout.split(None, 1) == ["sm_90a", "['tlc.targets.base', 'tlc.targets.sm90a']\n"]


def test_a_gpu_targets_arch_and_nvrtc_arch_import_no_target_module():
    """What a launch from the caches asks (`compile.codegen_arch`, `compile.nvrtc_arch`) is
    answered from `OWN_TARGETS`: no target module is imported."""
    import subprocess
    import sys

    code = ("import sys; from tlc import targets; targets._plugin_entry_points = lambda: []; "
            "from tlc.runtime.compile import codegen_arch, nvrtc_arch; a = codegen_arch((9, 0)); "
            "print(a, nvrtc_arch(a, (9, 0), (80, 90)), nvrtc_arch('sm_89', (9, 0), (80, 89)), "
            "sorted(m for m in sys.modules if m.startswith('tlc.targets.')))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          cwd=EXAMPLES.parent, check=True)
    assert done.stdout.split(None, 3) == ["sm_90a", "sm_90a", "compute_89", "['tlc.targets.base']\n"]


def test_tlc_own_targets_are_entry_points():
    import tomllib

    declared = tomllib.loads((EXAMPLES.parent / "pyproject.toml").read_text())["project"]["entry-points"]["tlc.targets"]
    assert sorted(declared.values()) == sorted(targets.OWN)  # the memo leaves out tlc's own distribution
    found = {ep.name: ep.value for ep in importlib.metadata.entry_points(group="tlc.targets")}
    assert found["sm_80"] == "tlc.targets.sm80:SM80" and found["sm_86"] == "tlc.targets.sm86:SM86"
    assert found["sm_89"] == "tlc.targets.sm89:SM89" and found["sm_90a"] == "tlc.targets.sm90a:SM90A"
    assert targets.get("sm_80") is SM80 and targets.get("sm_86") is SM86
    assert targets.get("sm_89") is SM89 and targets.get("sm_90a") is SM90A


@pytest.mark.parametrize("capability, name", [((8, 0), "sm_80"), ((8, 6), "sm_86"), ((8, 7), "sm_86"),
                                              ((8, 9), "sm_89"), ((9, 0), "sm_90a"), ((10, 0), "sm_89"),
                                              ((12, 0), "sm_89"), ((7, 5), None)])
def test_the_target_for_a_capability(capability, name):
    found = targets.for_capability(capability)
    assert (found.name if found else None) == name


def test_unknown_architecture_is_a_diagnostic():
    r = CliRunner().invoke(main, ["build", str(EXAMPLES / "vector_add.tl"), "--arch", "sm_75"])
    assert r.exit_code == 1
    assert r.stderr == "error[E071]: unknown target architecture 'sm_75'\n  = hint: tlc generates code for cpu, sm_80, sm_86, sm_89, sm_90a\n"


class _EntryPoint:
    def __init__(self, name, value, load):
        self.name, self.value, self._load = name, value, load

    def load(self):
        return self._load()


def _broken():
    raise ImportError("no module named 'gone'")


@pytest.mark.parametrize("entry, warning", [
    (_EntryPoint("sm_x", "gone:X", _broken), "tlc target 'sm_x' (gone:X) could not be loaded: no module named 'gone'"),
    (_EntryPoint("sm_y", "tlc.codegen.sm80:Sm80", lambda: object), "tlc target 'sm_y' (tlc.codegen.sm80:Sm80) is a "
     "type, not a tlc.targets.Target (stale package metadata? reinstall the package)"),
])
def test_a_broken_plugin_is_left_out_with_a_warning(monkeypatch, entry, warning):
    monkeypatch.setattr(targets, "_plugin_entry_points",
                        lambda: [entry, *importlib.metadata.entry_points(group=targets.GROUP)])
    targets.registered.cache_clear()
    try:
        with pytest.warns(UserWarning) as caught:
            assert targets.names() == ("cpu", "sm_80", "sm_86", "sm_89", "sm_90a")
        assert [str(w.message) for w in caught] == [warning]
    finally:
        targets.registered.cache_clear()


def test_limits_are_the_targets():
    """Ada and Ampere's 8.6 hold 1536 threads an SM, the A100 and Hopper 2048: blocks of 256
    threads with few registers, 6 against 8; 8.6 holds 16 blocks, the A100 32."""
    assert blocks_fitting(256, 32, SM89) == 6 and blocks_fitting(256, 32, SM86) == 6
    assert blocks_fitting(256, 32, SM80) == 8
    assert blocks_fitting(32, 32, SM86) == 16 and blocks_fitting(32, 32, SM89) == 24 and blocks_fitting(32, 32, SM80) == 32
    assert blocks_fitting(256, 32, SM90A) == 8 and blocks_fitting(256, 32) == 8


def test_shared_memory_limit_on_ampere_86(tmp_path, monkeypatch):
    """An RTX 30 or A10 (8.6) gets sm_86, whose blocks may have 99 KB, not the A100's 163."""
    monkeypatch.chdir(EXAMPLES.parent)
    given = [x for c in ("BM=128", "BN=256", "BK=64", "stages=3") for x in ("-D", c)]
    r = CliRunner().invoke(main, ["build", "examples/gemm.tl", "--arch", "sm_86", *given, "-o", str(tmp_path / "g.cu")])
    assert r.exit_code == 1
    assert r.stderr.splitlines()[0] == ("examples/gemm.tl:12:5: error[E070]: kernel 'matmul' needs 144 KB of shared "
                                        "memory, more than the 99 KB the target allows: Bs (3 stages x 32 KB), As (3 "
                                        "stages x 16 KB)")


def _plugin_dist(folder: Path, name: str = "tlc_plugin", value: str = "tlc_plugin_test:SM_TEST") -> Path:
    """A distribution's metadata in `folder` registering one `tlc.targets` entry point (whose
    module does not exist: these tests only search)."""
    info = folder / f"{name}-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(f"[tlc.targets]\nsm_test = {value}\n")
    return info


def test_the_entry_points_are_searched_once_then_read_from_the_memo(monkeypatch, tmp_path):
    """The search of every distribution's metadata (tens of ms) runs once where a plugin is
    installed; later processes read the entry_points.txt of the distributions it found.  A memo
    that names anything but a distribution's metadata in a folder on sys.path is not believed:
    the search runs again."""
    monkeypatch.setenv("TLC_CACHE_DIR", str(tmp_path))
    _plugin_dist(tmp_path / "site")
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    searched = []
    real = importlib.metadata.entry_points
    monkeypatch.setattr(targets, "entry_points", lambda group: searched.append(group) or real(group=group))
    first = sorted((ep.name, ep.value) for ep in targets._plugin_entry_points())
    assert searched == [targets.GROUP] and not any(value in targets.OWN for _, value in first)  # registered() has those
    assert ("sm_test", "tlc_plugin_test:SM_TEST") in first
    assert sorted((ep.name, ep.value) for ep in targets._plugin_entry_points()) == first and len(searched) == 1
    memo, = tmp_path.glob("tlc-entry-points-*.json")
    doc = json.loads(memo.read_text())
    planted = tmp_path / "planted.dist-info"
    planted.mkdir()
    (planted / "entry_points.txt").write_text("[tlc.targets]\nsm_x = os:system\n")
    doc["dists"].append(str(planted))
    doc["stamps"].append(planted.stat().st_mtime_ns)
    memo.write_text(json.dumps(doc))
    assert sorted((ep.name, ep.value) for ep in targets._plugin_entry_points()) == first and len(searched) == 2


def test_a_folder_on_sys_path_whose_files_change_keeps_the_memo_until_a_distribution_comes(monkeypatch, tmp_path):
    """A script's folder (sys.path[0]) where it writes its results: its change time moves in every
    run, its distributions do not, and the memo still holds (neither the search nor the listing
    of the folders for a plugin, `_may_register`, runs again); a package installed there is seen."""
    monkeypatch.setenv("TLC_CACHE_DIR", str(tmp_path / "cache"))
    script = tmp_path / "script"
    script.mkdir()
    monkeypatch.syspath_prepend(str(script))
    searched, listed = [], []
    real, may_register = importlib.metadata.entry_points, targets._may_register
    monkeypatch.setattr(targets, "entry_points", lambda group: searched.append(group) or real(group=group))
    monkeypatch.setattr(targets, "_may_register", lambda folders: listed.append(1) or may_register(folders))
    first = sorted((ep.name, ep.value) for ep in targets._plugin_entry_points())
    for i in range(2):
        (script / f"results-{i}.npy").write_bytes(b"")
        os.utime(script, ns=(i + 1, i + 1))  # another time, whatever the clock's resolution
        assert sorted((ep.name, ep.value) for ep in targets._plugin_entry_points()) == first
    before = 1 if first else 0  # the search runs only where a plugin is installed
    assert len(listed) == 1 and len(searched) == before
    _plugin_dist(script)
    os.utime(script, ns=(9, 9))
    found = sorted((ep.name, ep.value) for ep in targets._plugin_entry_points())
    assert len(listed) == 2 and len(searched) == before + 1 and ("sm_test", "tlc_plugin_test:SM_TEST") in found
