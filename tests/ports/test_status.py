"""status.py --build compiles a row as test_port_builds does: through the suite's own compile
helper (it called test_ports.compile_object after the suite moved to compile_device, and every
row's build stage ended in AttributeError)."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import status  # noqa: E402


def test_a_build_compiles_each_target_through_the_suites_helper(monkeypatch):
    built = []
    monkeypatch.setattr(status.t, "compile_device", lambda source, arch, where: built.append((arch, "cumsum_shared" in source)))
    port = next(p for p in status.t.PORTS if p.id == "chunk_local_cumsum")
    assert status.stage(lambda: status.build(port)) == "ok"
    assert built == [("sm_80", True), ("sm_90a", True)]
