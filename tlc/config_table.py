"""Recorded kernel configurations (LANGUAGE.md section 6): the `config.json` beside a `.tl`
file, read when a kernel is called without explicit constants.

Owns the file's format, its validation (a broken file is a `ConfigError` naming the file,
kernel and rule, never a traceback), choosing the constants for one call from the
kernel's GPU architecture and the call's shape bucket, and recording a measured rule
(`record`: merged under a lock, written atomically).  Does not own measuring (tlc/tune) or
when a call consults it (tlc/kernel.py).

Where a folder cannot be written (the std library of an installed package), a call with
`autotune=True` records into a per-user file of the same format instead,
`$TLC_CACHE_DIR/config/<hash of the folder>/config.json`, whose rules come first.

Format, one file per folder of `.tl` files:

    {"format": 1,
     "kernels": {
       "gemm.tl": {                                   # the module's file name
         "matmul_skinny": [                           # rules, the first that matches wins
           {"arch": ["sm_90a"],                       # the code generator's arch names
            "when": {"M": [1, 16], "T": "f16"},       # optional: a shape symbol's inclusive
                                                      # range (null = unbounded), a dtype's name
            "constants": {"BM": 16, "BN": 64},        # what the rule sets
            "note": "why, or what measured it"}]}}}

A rule without "when" covers every shape; a kernel with no matching rule keeps the defaults
written in its `.tl` file; a constant the caller gives always wins over the table.
"""
from __future__ import annotations

import fcntl
import hashlib
import json
import os
import stat
from pathlib import Path

from .cachedir import cache_dir
from .diagnostics import TlcError
from .frozen import frozen

FILE_NAME = "config.json"
FORMAT = 1


class ConfigError(TlcError):
    """A config.json that cannot be used: the message names the file and the place."""


@frozen
class Rule:
    archs: tuple[str, ...]
    ranges: tuple[tuple[str, int | None, int | None], ...]  # (shape symbol, low, high)
    dtypes: tuple[tuple[str, str], ...]                      # (dtype parameter, dtype name)
    constants: tuple[tuple[str, object], ...]

    def matches(self, arch: str, shapes: dict, dtypes: dict) -> bool:
        if arch not in self.archs:
            return False
        for name, lo, hi in self.ranges:
            v = shapes.get(name)
            if v is None or (lo is not None and v < lo) or (hi is not None and v > hi):
                return False
        return all(str(dtypes.get(name)) == want for name, want in self.dtypes)


def rules_for(tl_path: str, kernel: str) -> tuple[Rule, ...]:
    """The rules recorded for `kernel` of the module at `tl_path` (empty when there are none)."""
    module = os.path.basename(tl_path)
    return tuple(rule for path in rule_files(tl_path) for rule in _table(path).rules(module, kernel))


def rule_files(tl_path: str) -> list:
    """The config.json files whose rules `rules_for` reads for the module at `tl_path`, first first
    (the per-user one, then the one beside the module), whether they exist or not."""
    folder = os.path.dirname(os.path.realpath(tl_path))
    return [str(_user_path(folder)), os.path.join(folder, FILE_NAME)]


def user_path(tl_path: str) -> Path:
    """The per-user config.json for the folder of `tl_path` (used where that folder is read-only)."""
    return _user_path(str(Path(tl_path).resolve().parent))


def _user_path(folder: str) -> Path:
    return cache_dir() / "config" / hashlib.sha256(folder.encode()).hexdigest()[:16] / FILE_NAME


def beside(tl_path: str) -> Path:
    return Path(tl_path).resolve().parent / FILE_NAME


def writable_folder(path: Path) -> bool:
    """Whether a file can be created in `path`'s folder: by the mode bits too, since root may
    write anywhere but a folder marked read-only was marked so on purpose."""
    try:
        mode = os.stat(path.parent).st_mode
    except OSError:
        return False
    return bool(mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH)) and os.access(path.parent, os.W_OK)


def record(config: Path, module: str, kernel: str, rule: dict) -> None:
    """Put `rule` first among the rules of `kernel` of `module` (a file name) in the config.json
    at `config`, in place of a rule for the same arch and "when"; every other rule kept.  The
    read, merge and write happen under an exclusive lock (fcntl.flock of `.config.json.lock`
    beside it, a file kept there: removing it would let a third writer lock another one), so
    two tuners writing at once both land, and the file is replaced atomically.  A file that is
    not a valid config.json is a `ConfigError` and is left as it is."""
    from .files import FileError, write_all

    _rule(rule, f"{config}: the new rule of '{kernel}'")
    if not config.parent.is_dir():
        try:
            config.parent.mkdir(parents=True)
        except OSError as e:
            raise ConfigError(f"cannot create {config.parent}: {e.strerror}") from None
    if not writable_folder(config):
        raise ConfigError(f"cannot write {config}: the folder {config.parent} is read-only")
    try:
        lock = open(config.parent / f".{config.name}.lock", "a")
    except OSError as e:
        raise ConfigError(f"cannot write {config}: {e.strerror}") from None
    with lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        data = _read_for_update(config)
        rules = data["kernels"].setdefault(module, {}).setdefault(kernel, [])
        same = [r for r in rules if _archs(r) == _archs(rule) and r.get("when", {}) == rule.get("when", {})]
        rules[:] = [rule] + [r for r in rules if not any(r is x for x in same)]
        parse(data, str(config))
        try:
            write_all([(str(config), dumps(data))])
        except FileError as e:
            raise ConfigError(str(e)) from None


def dumps(data: dict) -> str:
    """config.json's text as the shipped files are written: one line per rule."""
    head = {k: v for k, v in data.items() if k != "kernels"}
    lines = ["{"] + [f" {json.dumps(k)}: {json.dumps(v)}," for k, v in head.items()] + [' "kernels": {']
    modules = list(data["kernels"].items())
    for i, (module, kernels) in enumerate(modules):
        lines.append(f"  {json.dumps(module)}: {{")
        for j, (kernel, rules) in enumerate(kernels.items()):
            lines.append(f"   {json.dumps(kernel)}: [")
            lines.extend(f"    {json.dumps(r)}" + ("," if r_i < len(rules) - 1 else "") for r_i, r in enumerate(rules))
            lines.append("   ]" + ("," if j < len(kernels) - 1 else ""))
        lines.append("  }" + ("," if i < len(modules) - 1 else ""))
    return "\n".join(lines + [" }", "}"]) + "\n"


def _archs(rule: dict) -> tuple:
    a = rule.get("arch")
    return tuple(sorted([a] if isinstance(a, str) else a or []))


def check_writable(config: Path) -> None:
    """`ConfigError` now, before anything is measured, for an existing config.json that
    `record` would refuse: one that does not parse, or in a folder that cannot be written."""
    if not writable_folder(config):
        raise ConfigError(f"cannot write {config}: the folder {config.parent} is read-only")
    _read_for_update(config)


def _read_for_update(config: Path) -> dict:
    """The file's JSON (a new table when there is none), checked before anything is merged."""
    try:
        text = config.read_text()
    except FileNotFoundError:
        return {"format": FORMAT, "kernels": {}}
    except OSError as e:
        raise ConfigError(f"cannot read {config}: {e.strerror}") from None
    try:
        data = json.loads(text)
    except ValueError as e:
        raise ConfigError(f"{config}: not readable as JSON ({e}); it was left as it is: fix it or remove it, "
                          "then tune again") from None
    parse(data, str(config))
    data.setdefault("kernels", {})
    return data


def choose(rules, arch: str, shapes: dict, dtypes: dict) -> dict:
    """The constants of the first rule that matches a call on `arch` with these shape
    symbols and dtype parameters ({} when none does)."""
    for rule in rules:
        if rule.matches(arch, shapes, dtypes):
            return dict(rule.constants)
    return {}


def check_rules(rules, kernel: str, known: dict, path: str) -> None:
    """Every constant a rule sets must be a const parameter of the kernel (`known`: name ->
    role), and every name in "when" one of its shape symbols or dtype parameters."""
    for i, rule in enumerate(rules):
        for name, _ in rule.constants:
            if known.get(name) != "const":
                raise ConfigError(f"{path}: rule {i + 1} of '{kernel}' sets '{name}', which is not a constant of "
                                  f"{kernel}")
        for name, _, _ in rule.ranges:
            if known.get(name) != "shape":
                raise ConfigError(f"{path}: rule {i + 1} of '{kernel}' has a range for '{name}', which is not a "
                                  f"shape symbol of {kernel}")
        for name, _ in rule.dtypes:
            if known.get(name) != "dtype":
                raise ConfigError(f"{path}: rule {i + 1} of '{kernel}' asks for the dtype of '{name}', which is "
                                  f"not a dtype parameter of {kernel}")


_cache: dict = {}  # path -> (mtime, its _Table)


class _Table:
    """A config.json read: its shape checked, each kernel's rules parsed when first asked for (the
    std library's file holds every std module's rules; a call reads one kernel's)."""

    def __init__(self, data, path: str):
        self.kernels, self.path, self._parsed = _kernels(data, path), path, {}

    def rules(self, module: str, kernel: str) -> tuple:
        found = self._parsed.get((module, kernel))
        if found is None:
            found = self._parsed[(module, kernel)] = _rules(self.kernels.get(module, {}).get(kernel, []), self.path, kernel)
        return found


def _table(path: str) -> _Table:
    try:
        mtime = os.stat(path).st_mtime_ns
    except OSError:
        return _EMPTY
    hit = _cache.get(path)
    if hit is not None and hit[0] == mtime:
        return hit[1]
    try:
        data = json.loads(Path(path).read_text())
    except (OSError, ValueError) as e:
        raise ConfigError(f"{path}: not readable as JSON: {e}") from None
    table = _Table(data, path)
    _cache[path] = (mtime, table)
    return table


def parse(data, path: str) -> dict:
    """{module file: {kernel: (Rule, ...)}} from the file's JSON."""
    return {module: {k: _rules(rules, path, k) for k, rules in by_kernel.items()}
            for module, by_kernel in _kernels(data, path).items()}


def _kernels(data, path: str) -> dict:
    """The file's "kernels" ({module file: {kernel: its rules as JSON}}), its shape checked."""
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise ConfigError(f"{path}: expected an object with \"format\": {FORMAT}")
    kernels = data.get("kernels", {})
    if not isinstance(kernels, dict):
        raise ConfigError(f"{path}: \"kernels\" must map module file names to kernels")
    for module, by_kernel in kernels.items():
        if not isinstance(by_kernel, dict):
            raise ConfigError(f"{path}: \"{module}\" must map kernel names to lists of rules")
    return kernels


def _rules(rules, path: str, kernel: str) -> tuple:
    return tuple(_rule(r, f"{path}: rule {i + 1} of '{kernel}'") for i, r in enumerate(_list(rules, path, kernel)))


_EMPTY = _Table({"format": FORMAT}, "")  # no file


def _list(rules, path: str, kernel: str) -> list:
    if not isinstance(rules, list):
        raise ConfigError(f"{path}: the rules of '{kernel}' must be a list")
    return rules


def _rule(r, where: str) -> Rule:
    if not isinstance(r, dict) or not isinstance(r.get("constants"), dict):
        raise ConfigError(f"{where}: expected an object with \"constants\"")
    unknown = set(r) - {"arch", "when", "constants", "note"}
    if unknown:
        raise ConfigError(f"{where}: unknown field(s) {', '.join(sorted(unknown))}")
    archs = r.get("arch")
    archs = (archs,) if isinstance(archs, str) else archs
    if not archs or not all(isinstance(a, str) for a in archs):
        raise ConfigError(f"{where}: \"arch\" must name one or more architectures (e.g. \"sm_90a\")")
    ranges, dtypes = [], []
    for name, cond in (r.get("when") or {}).items():
        if isinstance(cond, str):
            dtypes.append((name, cond))
        elif (isinstance(cond, list) and len(cond) == 2
              and all(b is None or (isinstance(b, int) and not isinstance(b, bool)) for b in cond)):
            ranges.append((name, cond[0], cond[1]))
        else:
            raise ConfigError(f"{where}: \"when\" of '{name}' must be [low, high] (integers or null) or a dtype name")
    for name, v in r["constants"].items():
        if not isinstance(v, (int, float, bool)):
            raise ConfigError(f"{where}: the constant '{name}' must be a number or a boolean, not {v!r}")
    return Rule(tuple(archs), tuple(ranges), tuple(dtypes), tuple(r["constants"].items()))
