"""Targets are plugins: tlc's own come through the same table as a package's would."""
import importlib.metadata

from click.testing import CliRunner

from tlc import codegen
from tlc.cli import main
from kit_codegen import EXAMPLES


def test_unknown_architecture_is_a_diagnostic():
    r = CliRunner().invoke(main, ["build", str(EXAMPLES / "vector_add.tl"), "--arch", "sm_75"])
    assert r.exit_code == 1
    assert r.stderr == "error[E071]: unknown target architecture 'sm_75'\n  = hint: tlc generates code for sm_80, sm_90a\n"


def test_a_plugin_target_is_found_by_its_entry_point(monkeypatch):
    class FakeEntryPoint:
        name = "sm_test"

        def load(self):
            return codegen.Sm80

    real = importlib.metadata.entry_points
    monkeypatch.setattr(importlib.metadata, "entry_points",
                        lambda group=None: [FakeEntryPoint()] if group == "tlc.targets" else real(group=group))
    codegen.targets.cache_clear()
    try:
        assert codegen.targets()["sm_test"] is codegen.Sm80
    finally:
        codegen.targets.cache_clear()
