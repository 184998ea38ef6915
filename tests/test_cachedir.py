"""tlc.cachedir: the cache folder, made once per value of the variables it comes from."""
from pathlib import Path

from tlc import cachedir


def test_the_cache_folder_follows_its_variables(tmp_path, monkeypatch):
    monkeypatch.setenv("TLC_CACHE_DIR", str(tmp_path / "a"))
    first = cachedir.cache_dir()
    assert first == tmp_path / "a" and cachedir.cache_dir() is first  # made once, not at every call
    monkeypatch.setenv("TLC_CACHE_DIR", str(tmp_path / "b"))
    assert cachedir.cache_dir() == tmp_path / "b"
    monkeypatch.setenv("TLC_CACHE_DIR", "~/c")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert cachedir.cache_dir() == tmp_path / "home" / "c"
    monkeypatch.delenv("TLC_CACHE_DIR")
    assert cachedir.cache_dir() == tmp_path / "home" / ".cache" / "tlc"
    monkeypatch.setenv("HOME", str(tmp_path / "other"))
    assert cachedir.cache_dir() == Path(tmp_path / "other" / ".cache" / "tlc")
