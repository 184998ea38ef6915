"""The tuner's tests share `scale`: a copy of scale.tl in a folder of its own (its config.json
is the test's), with a kernel cache of the test's own (the --resume journal lives there)."""
import shutil
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent


@pytest.fixture
def scale(tmp_path, monkeypatch):
    monkeypatch.setenv("TLC_CACHE_DIR", str(tmp_path / "cache"))
    folder = tmp_path / "prog"
    folder.mkdir()
    shutil.copy(HERE / "scale.tl", folder / "scale.tl")
    return folder / "scale.tl"
