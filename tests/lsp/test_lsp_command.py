"""`tlc lsp` on a machine without pygls: one line saying what to install, exit status 2."""
import sys

from click.testing import CliRunner

from tlc import cli


def test_lsp_without_pygls_says_what_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "lsprotocol", None)
    monkeypatch.delitem(sys.modules, "tlc.lsp.server", raising=False)
    result = CliRunner().invoke(cli.main, ["lsp"])
    assert (result.exit_code, result.stdout, result.stderr) == (
        2, "", "error: tlc lsp needs pygls (lsprotocol is not installed): pip install 'tlc[lsp]'\n")
