"""The repository's layout and what an install carries: grammar/, templates/ and stdlib/ sit at
the top level beside tlc/ and install as tlc.grammar, tlc.templates and tlc.stdlib
(pyproject.toml lists the packages and maps those three); tlc/package_data.py finds them in an
install and in a bare source checkout on sys.path.  CI installs the package non-editable, so
these tests there also check the wheel's contents."""
import subprocess
import sys
from pathlib import Path

import pytest

from tlc import package_data

ROOT = Path(__file__).resolve().parents[1]


def pyproject() -> dict:
    tomllib = pytest.importorskip("tomllib")
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]


def test_the_data_folders_are_at_the_top_level():
    assert (ROOT / "grammar" / "tile.lark").is_file()
    assert (ROOT / "templates" / "kernel.cu.j2").is_file() and (ROOT / "templates" / "tl" / "copy.cuh").is_file()
    assert (ROOT / "stdlib" / "gemm.tl").is_file()
    assert not any((ROOT / "tlc" / name).exists() for name in package_data.FOLDERS)


def test_pyproject_lists_every_package_and_maps_the_data_folders():
    setup = pyproject()
    code = {".".join(p.parent.relative_to(ROOT).parts) for p in (ROOT / "tlc").rglob("__init__.py")}
    data = {"tlc.grammar", "tlc.templates", "tlc.templates.tl", "tlc.templates.cpp", "tlc.stdlib"}
    assert sorted(setup["packages"]) == sorted(code | data)
    assert setup["package-dir"] == {f"tlc.{name}": name for name in package_data.FOLDERS}


@pytest.mark.parametrize("name, member", [("grammar", "tile.lark"), ("templates", "tl/layout.cuh"),
                                          ("stdlib", "nn.tl"), ("stdlib", "config.json")])
def test_the_folders_hold_the_same_files_as_the_checkout(name, member):
    assert (package_data.folder(name) / member).read_bytes() == (ROOT / name / member).read_bytes()


def test_a_bare_checkout_on_sys_path_finds_its_own_folders():
    """The GPU machine and the scripts import tlc from the checkout with nothing installed."""
    code = ("import sys; sys.path.insert(0, sys.argv[1]); import tlc, tlc.package_data as p; "
            "print(tlc.__file__); print(*(p.folder(n) for n in p.FOLDERS), sep='\\n')")
    out = subprocess.run([sys.executable, "-c", code, str(ROOT)], capture_output=True, text=True, timeout=120,
                         check=True).stdout.split()
    assert out == [str(ROOT / "tlc" / "__init__.py")] + [str(ROOT / n) for n in package_data.FOLDERS]


def test_an_unknown_folder_is_refused():
    with pytest.raises(ValueError, match="tlc has no data folder 'examples'; it has grammar, templates, stdlib"):
        package_data.folder("examples")


def test_an_installed_package_finds_the_folders_inside_it_without_a_search(tmp_path):
    """A wheel puts grammar/, templates/ and stdlib/ inside tlc/ (no pyproject.toml beside it):
    package_data finds them there without importlib's search of the finders, which cost a cached
    first call ~0.27 ms (issue #15); importlib.util.find_spec is broken here to show it is not asked."""
    import shutil

    shutil.copytree(ROOT / "tlc", tmp_path / "tlc", ignore=shutil.ignore_patterns("__pycache__"))
    for name in package_data.FOLDERS:
        (tmp_path / "tlc" / name).mkdir()
    code = ("import sys; sys.path.insert(0, sys.argv[1]); import importlib.util; import tlc.package_data as p; "
            "importlib.util.find_spec = None; print(*(p.folder(n) for n in p.FOLDERS), sep='\\n')")
    out = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True, timeout=120,
                         check=True).stdout.split()
    assert out == [str(tmp_path / "tlc" / n) for n in package_data.FOLDERS]
