"""Where tlc keeps what it caches (parse tables, compiled kernels): `$TLC_CACHE_DIR`, default
`~/.cache/tlc`, and how an entry is put there.  A leaf module, so that the parser and the
runtime share it without either reaching into the other."""
from __future__ import annotations

import os
import tempfile
from pathlib import Path


class CacheWarning(UserWarning):
    """The cache directory or an entry in it cannot be used; the work is done again instead."""


def cache_dir() -> Path:
    env, home = os.environ.get("TLC_CACHE_DIR"), os.environ.get("HOME")
    found = _found.get((env, home))
    if found is None:
        found = _found[env, home] = Path(env).expanduser() if env else Path.home() / ".cache" / "tlc"
    return found


# the folder by the variables it is made from: a cached first call asks five times, and each
# Path made and joined cost it ~15 us on the 2-core machine (issue #15)
_found: dict = {}


def replace_atomically(dest: Path, data: bytes) -> None:
    """Write `data` to a temporary file beside `dest` and rename it over `dest` (the directory
    created): readers see the old entry or the new one, never part of one.  Raises OSError."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=dest.parent, prefix="." + dest.name + ".", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, dest)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
