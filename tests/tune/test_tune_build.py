"""What `tlc tune` prunes for a target is what that target cannot hold, and what it keeps
compiles: scale.tl's candidates on sm_80 and sm_90a, pruned by scheduling (E070: 272 KB of
shared memory, over both targets' limits), the rest built with nvcc -Werror."""
import pathlib
import sys

import pytest

import tlc
import tlc.tune

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "codegen"))  # the nvcc helper
from nvcc import compile_device  # noqa: E402


@pytest.mark.nvcc
@pytest.mark.parametrize("arch", [pytest.param("sm_80", marks=pytest.mark.slow), "sm_90a"])
def test_what_is_kept_builds_and_what_is_pruned_does_not_fit(arch, tmp_path, monkeypatch):
    monkeypatch.setenv("TLC_CACHE_DIR", str(tmp_path / "cache"))
    report, = tlc.tune.tune(str(HERE / "scale.tl"), "scale", [{"N": 100}], space=["BLOCK=32,64", "ROWS=1,1024"],
                            target="cpu", arch=arch, timer="fake", write=False)
    assert {o.label: o.status for o in report.outcomes} == {
        "BLOCK=32 ROWS=1": "ok", "BLOCK=32 ROWS=1024": "ok", "BLOCK=64 ROWS=1": "ok", "BLOCK=64 ROWS=1024": "pruned"}
    limit = {"sm_80": "163 KB", "sm_90a": "227 KB"}[arch]
    pruned, = [o for o in report.outcomes if o.status == "pruned"]
    assert (pruned.code, pruned.why) == ("E070", f"kernel 'scale' needs 272 KB of shared memory, more than the {limit} "
                                                 "the target allows: tile (272 KB)")
    mod = tlc.load(str(HERE / "scale.tl"), target="cpu")
    for i, o in enumerate(x for x in report.outcomes if x.status == "ok"):
        compile_device(mod.scale.cuda_source(arch, **o.constants), arch, tmp_path, f"k{i}")
