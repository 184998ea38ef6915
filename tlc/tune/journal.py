"""`tlc tune --resume`: a journal of the candidates measured so far, one JSON line each,
in `$TLC_CACHE_DIR/tune/`, keyed by what the measurements depend on (the program's text,
the kernel, the bucket, the arch, the executor and the space), so that a resumed run skips
what an interrupted one measured and never mixes in another program's numbers."""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

from ..cachedir import cache_dir


def journal_path(sources: dict, kernel: str, when: dict, arch: str, target: str, space: dict) -> Path:
    key = json.dumps([sorted(sources.items()), kernel, when, arch, target, {k: [str(v) for v in vs] for k, vs in space.items()}])
    return cache_dir() / "tune" / (hashlib.sha256(key.encode()).hexdigest()[:32] + ".jsonl")


class Journal:
    def __init__(self, path: Path, resume: bool):
        self.path = path
        self.entries: dict = {}  # label -> the recorded entry
        if resume:
            try:
                lines = path.read_text().splitlines()
            except OSError:
                lines = []
            for line in lines:
                try:  # a line cut short by the interruption is measured again
                    entry = json.loads(line)
                    self.entries[entry["label"]] = entry
                except (ValueError, KeyError, TypeError):
                    continue
        else:
            try:
                path.unlink()
            except OSError:
                pass

    def add(self, entry: dict) -> None:
        self.entries[entry["label"]] = entry
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with open(self.path, "a") as f:
                f.write(json.dumps(entry) + "\n")
                f.flush()
        except OSError:  # no journal: a later --resume measures again
            pass
