"""Targets are plugins: one `Target` object per architecture, found through the
`tlc.targets` entry point group; tlc's own (cpu, sm_80, sm_86, sm_89, sm_90a) are registered there by
pyproject.toml like any other package's, and are known without it too (a source checkout).  Entry points: `get(name)` (the scheduler, the code
generator, the runtime), `for_capability(cc)` (the runtime: which target a GPU runs), `names()`,
and `arch(name)` / `chosen(cc)` (what a launch from the caches needs: a target's name,
capabilities and NVRTC's `-arch`, without importing one of tlc's own target modules).

Owns finding and choosing targets; each target module owns its facts (base.py says which).
Nothing else tests an architecture's name: a decision that differs between targets reads a
limit or a feature of the target object.
"""
from __future__ import annotations

import functools
import hashlib
import importlib
import json
import os
import sys
import warnings
from collections.abc import Mapping

from ..diagnostics import Diagnostic, DiagnosticError
from .base import Arch, Target

GROUP = "tlc.targets"

__all__ = ["Target", "GROUP", "get", "for_capability", "chosen", "arch", "names", "registered", "Registry"]


@functools.lru_cache(maxsize=1)
def registered() -> "Registry":
    """Every target the installed packages register, by name; read once (`registered.cache_clear()`
    reads again).  An entry point that fails to load, or that is not a `Target`, is left out
    with a warning: a broken plugin must not break the others.  tlc's own targets are imported
    when first read (`Registry`)."""
    found: dict[str, Target] = {}
    for ep in sorted(_plugin_entry_points(), key=lambda e: e.name):
        try:
            target = ep.load()
        except Exception as e:  # noqa: BLE001 - whatever a plugin's import raises
            warnings.warn(f"tlc target '{ep.name}' ({ep.value}) could not be loaded: {e}", stacklevel=2)
            continue
        if not isinstance(target, Target):
            warnings.warn(f"tlc target '{ep.name}' ({ep.value}) is a {type(target).__name__}, not a "
                          f"tlc.targets.Target (stale package metadata? reinstall the package)", stacklevel=2)
            continue
        if target.name not in OWN_TARGETS:  # tlc's own name wins, as ever
            found.setdefault(target.name, target)
    return Registry(found)


class Registry(Mapping):
    """The registered targets by name, in name order: tlc's own (`OWN_TARGETS`), each imported at its
    first read, and the plugins' (loaded by `registered`).  A GPU's target is chosen from the
    facts `OWN_TARGETS` gives of the own ones (`serving`), so that a launch from the caches
    imports one target module rather than all five (each import costs a new process a tenth
    of a millisecond or more)."""

    def __init__(self, plugins: dict):
        self._plugins, self._own = plugins, {}
        self._names = sorted([*OWN_TARGETS, *plugins])

    def __getitem__(self, name: str) -> Target:
        target = self._plugins.get(name) or self._own.get(name)
        if target is None:
            value = OWN_TARGETS.get(name, (None,))[0]
            if value is None:
                raise KeyError(name)
            module, _, attr = value.partition(":")
            target = self._own[name] = getattr(importlib.import_module(module), attr)
        return target

    def arch(self, name: str) -> Arch:
        """The target `name` as far as its capabilities go (`base.Arch`): the Target where it is
        a plugin's or imported already, else, for one of tlc's own, its `OWN_TARGETS` facts
        (`OwnArch`) without importing its module; KeyError for a name not registered."""
        found = self._plugins.get(name) or self._own.get(name)
        if found is not None:
            return found
        _, capability, exact, host = OWN_TARGETS[name]
        return OwnArch(name, capability, exact, host)

    def __contains__(self, name) -> bool:  # Mapping's would import an own target's module
        return name in self._plugins or name in OWN_TARGETS

    def __iter__(self):
        return iter(self._names)

    def __len__(self) -> int:
        return len(self._names)

    def serving(self, capability: tuple[int, int]) -> list:
        """(capability, exact, name) of each target that serves a GPU of `capability`: the own
        ones' by `OWN_TARGETS`, without importing them."""
        found = []
        for name in self._names:
            plugin = self._plugins.get(name)
            if plugin is not None:
                if plugin.serves(tuple(capability)):
                    found.append((plugin.capability, plugin.exact, name))
                continue
            _, cc, exact, host = OWN_TARGETS[name]
            if not host and (capability == cc if exact else capability >= cc):
                found.append((cc, exact, name))
        return found


def entry_points(group: str) -> list:
    """importlib.metadata's search of every installed distribution for the entry points of
    `group`, importing it here: `import tlc` reaches this module, and the full search runs
    only where the memo of `_plugin_entry_points` does not hold (importlib.metadata's import
    cost `import tlc` ~18 ms on this 2-core machine)."""
    from importlib.metadata import entry_points as search

    return search(group=group)


def _plugin_entry_points() -> list:
    """The `tlc.targets` entry points of the installed packages, but those that name tlc's own
    targets (`OWN`: an installed tlc's, which `registered` has anyway).  Asking importlib.metadata reads
    every distribution's metadata (22 ms in the H200's environment of 199 packages, most of a
    launch from the caches in a new process), so the cache folder keeps which distributions
    register targets, with each folder on sys.path's change time and a digest of the metadata
    folders in it (`_distributions`: installing, upgrading or removing a package adds, removes or
    remakes a `*.dist-info` there), and the change time of those distributions' folders; where
    they all match, only their entry_points.txt are read.  A folder whose change time moved but
    whose distributions are the same (a script's folder where it writes files, the working
    folder of `python -c`) still matches, and the memo takes its new time.  The memo names only
    metadata files of distributions in sys.path's folders, so a planted one can name no module
    that the full search would not load; one that does not match, cannot be read or written,
    costs the full search."""
    from ..cachedir import cache_dir, replace_atomically
    from ..files import read_regular

    folders = [os.path.abspath(p) for p in sys.path if isinstance(p, str)]  # '' is the working folder
    try:
        memo = cache_dir() / f"tlc-entry-points-{hashlib.sha256(repr(folders).encode()).hexdigest()[:24]}.json"
    except RuntimeError:  # no home directory: no cache
        memo = None
    if memo is not None:
        try:
            doc = json.loads(read_regular(memo, follow_symlinks=False, limit=1 << 20))
            now = _stamps(folders)
            if doc["leaves_out"] == list(OWN) and len(doc["folders"]) == len(folders) and \
                    doc["stamps"] == _stamps(doc["dists"]) and all(
                    t == old or (listing is not None and _distributions(f) == listing)
                    for f, t, (old, listing) in zip(folders, now, doc["folders"])):
                found = [ep for dist in doc["dists"] for ep in _listed_entry_points(dist, folders) if ep.value not in OWN]
                if now != [old for old, _ in doc["folders"]]:  # the same distributions: the new times kept
                    doc["folders"] = [[t, listing] for t, (_, listing) in zip(now, doc["folders"])]
                    _write_memo(memo, doc, replace_atomically)
                return found
        except (OSError, ValueError, TypeError, KeyError):  # none, damaged, or not a regular file
            pass
    # the folders' stamps before the search: a package installed during it shows next time
    stamps = [[t, _distributions(f)] for f, t in zip(folders, _stamps(folders))]
    found = [ep for ep in entry_points(group=GROUP) if ep.value not in OWN] if _may_register(folders) else []
    dists = sorted({os.path.abspath(ep.dist._path) for ep in found
                    if getattr(getattr(ep, "dist", None), "_path", None) is not None})
    if memo is not None and all(os.path.dirname(d) in folders for d in dists):
        _write_memo(memo, {"folders": stamps, "stamps": _stamps(dists), "dists": dists, "leaves_out": list(OWN)},
                    replace_atomically)
    return found


def _may_register(folders: list) -> bool:
    """Whether the full search could find a plugin: a distribution in `folders` whose
    entry_points.txt names, in the `tlc.targets` group, an object that is not one of tlc's own
    (`OWN`), or that the search would read but this cannot (a zip archive on sys.path, a
    metadata file it cannot read, a line it cannot parse, another finder of distributions on
    sys.meta_path).  Where none does, the full search's answer is empty, and this listing of
    the folders answers it without importing importlib.metadata (with the email, zipfile, csv and
    socket modules it imports: ~14 ms of an empty cache's first call on this 2-core machine,
    where it found nothing but tlc's own targets).  It looks where importlib.metadata's path
    finder looks (each folder's `*.dist-info` and `*.egg-info`, any case, and an `.egg`
    folder's `EGG-INFO`) and parses as it does, so it answers False only where that search
    finds no plugin."""
    from importlib.machinery import PathFinder

    if any(f is not PathFinder for f in sys.meta_path if getattr(f, "find_distributions", None) is not None):
        return True  # another finder of distributions: only importlib.metadata asks it
    for folder in folders:
        try:
            with os.scandir(folder) as entries:
                names = [e.name for e in entries]
        except (FileNotFoundError, NotADirectoryError):
            if os.path.exists(folder):
                return True  # a zip archive, which the search reads
            continue
        except OSError:
            return True
        egg = os.path.basename(folder).lower().endswith(".egg")
        for name in names:
            low = name.lower()
            if not (low.endswith((".dist-info", ".egg-info")) or (egg and low == "egg-info")):
                continue
            try:
                with open(os.path.join(folder, name, "entry_points.txt"), encoding="utf-8") as f:
                    text = f.read()
            except (FileNotFoundError, NotADirectoryError):
                continue
            except (OSError, ValueError):
                return True
            if _names_plugins(text):
                return True
    return False


def _names_plugins(text: str) -> bool:
    """Whether an entry_points.txt read as importlib.metadata reads it (`Sectioned`) names a
    `tlc.targets` object other than tlc's own, or holds a line that reading would reject."""
    group = None
    for line in map(str.strip, text.splitlines()):
        if not line or line.startswith("#"):
            continue
        if line.startswith("[") and line.endswith("]"):
            group = line.strip("[]")
            continue
        if group is None:
            continue
        if "=" not in line:
            return True  # the search raises on it: let it
        if group == GROUP and line.split("=", 1)[1].strip() not in OWN:
            return True
    return False


def _write_memo(memo, doc: dict, replace_atomically) -> None:
    try:
        replace_atomically(memo, json.dumps(doc).encode())
    except OSError:  # a read-only cache folder
        pass


def _distributions(folder: str) -> str | None:
    """A digest of the distributions' metadata in `folder` (each `*.dist-info` or `*.egg-info`
    with its change time), None where it cannot be listed."""
    try:
        with os.scandir(folder) as entries:
            found = sorted((e.name, e.stat(follow_symlinks=False).st_mtime_ns) for e in entries
                           if e.name.endswith((".dist-info", ".egg-info")))
    except OSError:
        return None
    return hashlib.sha256(repr(found).encode()).hexdigest()[:32]


def _listed_entry_points(dist: str, folders: list) -> list:
    """The `tlc.targets` entry points of the distribution whose metadata folder is `dist`, one
    of those in `folders`; ValueError for any other path."""
    from importlib.metadata import PathDistribution
    from pathlib import Path

    if not (isinstance(dist, str) and os.path.dirname(dist) in folders and dist.endswith((".dist-info", ".egg-info"))):
        raise ValueError(f"not a distribution's metadata: {dist!r}")
    return list(PathDistribution(Path(dist)).entry_points.select(group=GROUP))


def _stamps(paths) -> list:
    """Each path's change time in nanoseconds, None where it does not exist."""
    out = []
    for path in paths:
        try:
            out.append(os.stat(path).st_mtime_ns)
        except (OSError, TypeError, ValueError):
            out.append(None)
    return out


# tlc's own targets by name: (entry point, capability, exact, host), the last three as its Target
# says them (tests/targets/test_target_registry.py compares), so that `Registry.serving` chooses
# without importing them.  Known without package metadata too: a source checkout run through
# PYTHONPATH has no entry points (every launch on the H200 ended in E071 that way); installed,
# pyproject.toml's entry points name these same objects (`OWN`)
OWN_TARGETS = {"cpu": ("tlc.targets.cpu:CPU", (0, 0), False, True),
               "sm_80": ("tlc.targets.sm80:SM80", (8, 0), False, False),
               "sm_86": ("tlc.targets.sm86:SM86", (8, 6), False, False),
               "sm_89": ("tlc.targets.sm89:SM89", (8, 9), False, False),
               "sm_90a": ("tlc.targets.sm90a:SM90A", (9, 0), True, False)}
OWN = tuple(value for value, *_ in OWN_TARGETS.values())


def names() -> tuple[str, ...]:
    return tuple(registered())


def get(name: str) -> Target:
    """The target called `name`; E071 when no package registers one."""
    known = registered()
    if name not in known:
        raise DiagnosticError([Diagnostic("E071", f"unknown target architecture '{name}'", None,
                                          f"tlc generates code for {', '.join(known)}")])
    return known[name]


def for_capability(capability: tuple[int, int]) -> Target | None:
    """The target for a GPU of `capability`: of those that serve it, the one made for the
    newest capability (sm_86 on 8.6 and 8.7, sm_89 on 8.9 and later, sm_90a on 9.0 exactly); an
    arch-specific one before a portable one of the same capability, then by name.  None when
    none serves it.  Only the chosen target's module is imported."""
    name = chosen(capability)
    return None if name is None else registered()[name]


def chosen(capability: tuple[int, int]) -> str | None:
    """The name of `for_capability`'s target, without importing any target module."""
    serving = registered().serving(tuple(capability))
    if not serving:
        return None
    return min(serving, key=lambda s: (tuple(-c for c in s[0]), not s[1], s[2]))[2]


def arch(name: str) -> Arch:
    """`get(name)` as far as a launch needs it (`Registry.arch`: its capabilities, NVRTC's
    `-arch`), without importing one of tlc's own target modules; E071 as `get` says it."""
    known = registered()
    if name not in known:
        get(name)
    return known.arch(name)


class OwnArch(Arch):
    """One of tlc's own targets as `OWN_TARGETS` gives it: its name, capability, exactness and
    host flag (tests/targets/test_target_registry.py compares them with its Target's), which are
    all that `Arch`'s questions read."""

    __slots__ = ("name", "capability", "exact", "host")

    def __init__(self, name: str, capability: tuple[int, int], exact: bool, host: bool):
        self.name, self.capability, self.exact, self.host = name, capability, exact, host
