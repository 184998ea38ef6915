"""The launch memo: what a kernel's first call in a new process needs of the signature it was
last called with, kept beside the checked-module cache's entry, so that a call like one made
before (the same arrays' kinds, dtypes and shapes, the same GPU) launches without decoding the
kernel's checked signature, binding the arguments or parsing config.json (issue #15: ~0.7 ms of
a cached first call's ~5 on the 2-core machine).

A memo file is `<checked entry's name>.launch` in the cache folder: it belongs to one text of
one module checked by one tlc (the checked entry's key, `checked_cache.key`, says all of that;
the module's imports were compared with their digests when the entry was loaded).  It holds,
per kernel, its runtime parameters' names and, per call signature (`args.signature`, by the
SHA-256 of its repr), the constants the call was compiled with (as `kernel._constants_key`
writes them: their names and `str` values, which is all a program cache key reads of them),
the code generator's arch they were chosen for, and the SHA-256 of each config.json whose rules
could have chosen them (or that there was none).  A hit is only that: the program cache entry
is still looked up by a key computed as ever (`runtime.cached_program_kernel`: the module's
texts, the kernel, those constants, the arch and NVRTC of now), and the launch checks every
argument as a first call always does.  Anything that differs (a config.json rewritten by `tlc
tune`, another arch, a missing or damaged memo or program entry) is a miss: the call takes the
general path, which records its signature again.  JSON data only, under the format's name.
"""
from __future__ import annotations

import hashlib
import json
import os

FORMAT = "tlc-launch-memo-1"
_SUFFIX = ".launch"
_LIMIT = 1 << 20  # bytes: a memo of a few kernels and signatures is a few KB
MAX_RECORDS = 16  # signatures kept per kernel (the newest)


def memo_path(checked_key: str) -> str:
    from ..cachedir import cache_dir

    return os.path.join(cache_dir(), checked_key + _SUFFIX)


def signature_key(sig: tuple) -> str | None:
    """A call signature's name in the memo: SHA-256 of its repr (kinds, dtypes, shapes, the
    device; a scalar's type: PyTorch's, NumPy's and CuPy's write the same in every process);
    None where a part is written by its address (an object without a repr of its own), which
    no other process would find."""
    text = repr(sig)
    return None if " at 0x" in text else hashlib.sha256(text.encode()).hexdigest()


def _file_digest(path: str) -> str | None:
    try:
        with open(path, "rb") as f:
            return hashlib.sha256(f.read()).hexdigest()
    except FileNotFoundError:
        return None


def config_digests(files: list) -> list:
    """[[path, SHA-256 of its bytes or None where there is no file], ...] of config.json files."""
    return [[path, _file_digest(path)] for path in files]


class LaunchMemo:
    """The memo of one checked module's entry, read at its first use."""

    def __init__(self, checked_key: str):
        self.path = memo_path(checked_key)
        self._doc = None

    def _read(self) -> dict:
        if self._doc is None:
            from ..files import NotRegularFile, read_regular

            doc = {}
            try:
                found = json.loads(read_regular(self.path, follow_symlinks=False, limit=_LIMIT))
                if type(found) is dict and found.get("format") == FORMAT and type(found.get("kernels")) is dict:
                    doc = found
            except (NotRegularFile, OSError, ValueError):
                pass
            self._doc = doc or {"format": FORMAT, "kernels": {}}
        return self._doc

    def lookup(self, kernel: str, args: tuple, device: int) -> tuple | None:
        """(runtime parameters' names, constants key, arch, fast) recorded for a call of `kernel`
        with `args` on GPU `device`, where its config.json files are as they were; else None.
        `fast`: the call had no constants at all, so the kernel's one launcher serves every
        positional call (`Kernel._fast`), not only those of this signature."""
        from .args import signature

        entry = self._read()["kernels"].get(kernel)
        try:
            names = entry["runtime"]
            if len(names) != len(args):
                return None
            record = entry["calls"].get(signature_key(signature(args, device)) or "")
            if record is None:
                return None
            configs, constants, arch, fast = record["configs"], record["constants"], record["arch"], record["fast"]
            if not (all(type(n) is str for n in names) and type(arch) is str and type(fast) is bool and
                    all(type(p) is list and len(p) == 2 and all(type(s) is str for s in p) for p in constants) and
                    all(type(c) is list and len(c) == 2 and type(c[0]) is str for c in configs)):
                return None
            if config_digests([path for path, _ in configs]) != configs:
                return None
            return tuple(names), tuple((k, v) for k, v in constants), arch, fast
        except (TypeError, KeyError, AttributeError):
            return None

    def record(self, kernel: str, names: tuple, args: tuple, device: int, constants_key: tuple, arch: str,
               config_files: list, fast: bool = False) -> None:
        """Keep what `lookup` gives for this call; the file is rewritten atomically (a folder that
        cannot be written costs the next process the general path)."""
        from pathlib import Path

        from ..cachedir import replace_atomically
        from .args import signature

        name = signature_key(signature(args, device))
        if name is None:
            return
        doc = self._read()
        entry = doc["kernels"].get(kernel)
        if type(entry) is not dict or entry.get("runtime") != list(names) or type(entry.get("calls")) is not dict:
            entry = doc["kernels"][kernel] = {"runtime": list(names), "calls": {}}
        calls = entry["calls"]
        calls.pop(name, None)  # the newest last: the oldest are dropped first
        calls[name] = {
            "constants": [list(p) for p in constants_key], "arch": arch, "fast": bool(fast),
            "configs": config_digests(config_files)}
        while len(calls) > MAX_RECORDS:
            del calls[next(iter(calls))]
        try:
            replace_atomically(Path(self.path), json.dumps(doc, separators=(",", ":")).encode())
        except (OSError, TypeError, ValueError):
            pass
