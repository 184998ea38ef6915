"""The plugin search without importlib.metadata where no plugin is installed (issue #15, time to
first result): `targets._may_register` lists sys.path's folders for distributions as
importlib.metadata's path finder does and answers whether its full search could find a target
that is not tlc's own; where it cannot, the search (and importlib.metadata's import, ~14 ms of
an empty cache's first call) is skipped.  Each case here is compared with the full search over
the same folder."""
import os
import subprocess
import sys
import zipfile
from importlib.metadata import MetadataPathFinder, DistributionFinder
from pathlib import Path

import pytest

from tlc import targets

OWN_LINES = "".join(f"{name} = {value}\n" for name, (value, *_) in targets.OWN_TARGETS.items())


def _searched(folder: Path) -> list:
    """What importlib.metadata's full search finds in `folder` alone: the `tlc.targets` entry
    points that are not tlc's own."""
    dists = MetadataPathFinder.find_distributions(DistributionFinder.Context(path=[str(folder)]))
    return [ep.value for d in dists for ep in d.entry_points.select(group=targets.GROUP) if ep.value not in targets.OWN]


def _dist(folder: Path, name: str, text: str) -> None:
    (folder / name).mkdir(parents=True)
    (folder / name / "entry_points.txt").write_text(text)


CASES = {  # folder layout -> whether the full search finds a plugin there
    "no entry points": ({"a-1.0.dist-info": None}, False),
    "other groups only": ({"a-1.0.dist-info": "[console_scripts]\ntlc-x = a:main\n"}, False),
    "tlc's own targets": ({"tlc-0.1.0.dist-info": f"[tlc.targets]\n{OWN_LINES}"}, False),
    "tlc's own, spaced, with comments": ({"tlc-0.1.0.dist-info": "# c\n [tlc.targets] \n\n" + OWN_LINES.replace(" = ", "=")}, False),
    "a plugin": ({"p-1.0.dist-info": "[tlc.targets]\nsm_x = p:TARGET\n"}, True),
    "a plugin beside tlc's own": ({"p-1.0.dist-info": f"[tlc.targets]\n{OWN_LINES}sm_x = p:TARGET\n"}, True),
    "a plugin in upper case": ({"P-1.0.DIST-INFO": "[tlc.targets]\nsm_x = p:TARGET\n"}, True),
    "a plugin's egg-info": ({"p-1.0.egg-info": "[tlc.targets]\nsm_x = p:TARGET\n"}, True),
    "an egg folder's EGG-INFO": ({"p-1.0.egg/EGG-INFO": "[tlc.targets]\nsm_x = p:TARGET\n"}, True),
}


@pytest.mark.parametrize("case", list(CASES))
def test_the_listing_answers_as_the_full_search(case, tmp_path):
    layout, plugin = CASES[case]
    for name, text in layout.items():
        if text is None:
            (tmp_path / name).mkdir(parents=True)
        else:
            _dist(tmp_path, name, text)
    folder = tmp_path / "p-1.0.egg" if "egg/" in next(iter(layout)) else tmp_path
    assert bool(_searched(folder)) == plugin
    assert targets._may_register([str(folder)]) == plugin


def test_a_line_the_search_rejects_is_left_to_the_search(tmp_path):
    """A line without `=` in any group makes importlib.metadata raise: the listing does not
    answer for it (the search runs, and raises as before)."""
    _dist(tmp_path, "a-1.0.dist-info", "[console_scripts]\nbroken\n")
    with pytest.raises((TypeError, ValueError)):  # Python 3.11's Pair.parse: TypeError
        _searched(tmp_path)
    assert targets._may_register([str(tmp_path)])


def test_a_zip_archive_on_sys_path_is_left_to_the_search(tmp_path):
    archive = tmp_path / "site.zip"
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr("p-1.0.dist-info/entry_points.txt", "[tlc.targets]\nsm_x = p:TARGET\n")
    assert _searched(archive) == ["p:TARGET"]
    assert targets._may_register([str(archive)])
    assert not targets._may_register([str(tmp_path / "missing"), str(tmp_path / "missing.zip")])


def test_another_finder_of_distributions_is_left_to_the_search(monkeypatch, tmp_path):
    class Finder:
        @staticmethod
        def find_spec(*args):
            return None

        @staticmethod
        def find_distributions(context=None):
            return iter(())

    assert not targets._may_register([str(tmp_path)])
    monkeypatch.setattr(sys, "meta_path", [*sys.meta_path, Finder()])
    assert targets._may_register([str(tmp_path)])


def test_no_plugin_is_answered_without_importlib_metadata(tmp_path):
    """A new process with an empty cache: where the installed packages register no target but
    tlc's own, the answer is the full search's (empty) without importing importlib.metadata."""
    code = ("import sys; from tlc import targets; found = targets._plugin_entry_points(); "
            "imported = 'importlib.metadata' in sys.modules; "
            "from importlib.metadata import entry_points; "
            "full = [ep for ep in entry_points(group=targets.GROUP) if ep.value not in targets.OWN]; "
            "print(imported, [e.value for e in found] == [e.value for e in full], bool(full))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True,
                          env={**os.environ, "TLC_CACHE_DIR": str(tmp_path)}, cwd=tmp_path)
    imported, same, plugins = done.stdout.split()
    assert same == "True"
    assert imported == plugins  # imported only where a plugin is installed
