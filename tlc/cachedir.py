"""Where tlc keeps what it caches (parse tables, compiled kernels): `$TLC_CACHE_DIR`, default
`~/.cache/tlc`.  A leaf module, so that the parser and the runtime share it without either
reaching into the other."""
from __future__ import annotations

import os
from pathlib import Path


def cache_dir() -> Path:
    env = os.environ.get("TLC_CACHE_DIR")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "tlc"
