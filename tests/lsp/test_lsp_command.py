"""`tlc lsp` on a machine without pygls: one line saying what to install, exit status 2; a
check that fails inside tlc is a diagnostic in the editor (E360, E361), not a dead server."""
import sys

from tlc import scheduled_check
from tlc.diagnostics import TlcError, render
from tlc.lsp import analysis

from click.testing import CliRunner

from tlc import cli


def test_lsp_without_pygls_says_what_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "lsprotocol", None)
    monkeypatch.delitem(sys.modules, "tlc.lsp.server", raising=False)
    result = CliRunner().invoke(cli.main, ["lsp"])
    assert (result.exit_code, result.stdout, result.stderr) == (
        2, "", "error: tlc lsp needs pygls (lsprotocol is not installed): pip install 'tlc[lsp]'\n")


def _raises(error):
    def schedule_all(*args):
        raise error
    return schedule_all


def test_an_error_outside_the_file_is_e360(monkeypatch):
    monkeypatch.setattr(scheduled_check, "schedule_all", _raises(TlcError("the target sm_80 is not installed")))
    result = analysis.check("N = 1\n", "/tmp/a.tl")
    assert [render(d, result.sources) for d in result.diagnostics] == [
        "/tmp/a.tl:1:1: error[E360]: the target sm_80 is not installed\n  |\n1 | N = 1\n  | ^"]


def test_a_bug_in_tlc_is_e361(monkeypatch):
    monkeypatch.setattr(scheduled_check, "schedule_all", _raises(KeyError("grid")))
    result = analysis.check("N = 1\n", "/tmp/a.tl")
    assert [render(d, result.sources) for d in result.diagnostics] == [
        "/tmp/a.tl:1:1: error[E361]: internal compiler error while checking this file: KeyError: 'grid'\n  |\n"
        "1 | N = 1\n  | ^\n  = hint: please report it with the file that caused it"]
