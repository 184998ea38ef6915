"""Where tlc's data lives.  The grammar, the C templates and the standard library are folders
at the repository's top level (`grammar/`, `templates/`, `stdlib/`) and install inside the
package as `tlc.grammar`, `tlc.templates` and `tlc.stdlib` (pyproject.toml's `package-dir`),
so a wheel carries them.  A source checkout used through PYTHONPATH, with nothing installed
(the GPU machine, the scripts), has no such packages: there the folder beside `tlc/` is the
one meant.  A checkout (pyproject.toml beside `tlc/`) always uses its own folders, even when an
editable install of another checkout maps the packages elsewhere (a `git worktree` on
PYTHONPATH)."""
from __future__ import annotations

import functools
import importlib.util
import os
from pathlib import Path

FOLDERS = ("grammar", "templates", "stdlib")


@functools.lru_cache(maxsize=1)
def package_folder() -> str:
    """The real path of the folder of `tlc/__init__.py`, resolved once: a launch from the caches
    asks for it five times (three data folders, the cache key's identity of tlc), and each
    `os.path.realpath` is an lstat() per part of the path and ~25 us of Python (issue #15)."""
    return os.path.dirname(os.path.realpath(__file__))


@functools.lru_cache(maxsize=1)
def is_checkout() -> bool:
    """Whether tlc runs from a checkout (pyproject.toml beside the package), asked once: each
    data folder and the cache key's identity ask (issue #15: four stat()s of a cached first call)."""
    return os.path.isfile(os.path.join(os.path.dirname(package_folder()), "pyproject.toml"))


@functools.lru_cache(maxsize=None)
def folder(name: str) -> Path:
    """The folder of `name` (one of FOLDERS): the installed package's, else the checkout's."""
    return Path(folder_path(name))


@functools.lru_cache(maxsize=None)
def folder_path(name: str) -> str:
    """`folder(name)` as a string, found by os.path alone: a launch from the caches asks for
    three folders, and pathlib's resolve() and tests cost it ~0.1 ms, each Path made ~10 us
    more (issue #15)."""
    if name not in FOLDERS:
        raise ValueError(f"tlc has no data folder {name!r}; it has {', '.join(FOLDERS)}")
    package = package_folder()
    root = os.path.dirname(package)
    if is_checkout() and os.path.isdir(os.path.join(root, name)):
        return os.path.join(root, name)
    inside = os.path.join(package, name)
    if os.path.isdir(inside):  # where a wheel installs it: found without importlib's search of
        return inside  # sys.path's finders (~0.27 ms of a cached first call, issue #15)
    try:
        spec = importlib.util.find_spec(f"tlc.{name}")
    except ImportError:
        spec = None
    if spec is not None and spec.submodule_search_locations:
        return os.fspath(list(spec.submodule_search_locations)[0])
    return os.path.join(root, name)


def stdlib() -> Path:
    return folder("stdlib")


def templates() -> Path:
    return folder("templates")


def grammar_text() -> str:
    return (folder("grammar") / "tile.lark").read_text(encoding="utf-8")
