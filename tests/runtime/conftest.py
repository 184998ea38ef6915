"""Fixtures of the runtime's tests."""
import pytest

import tlc.runtime
from tlc.runtime import compile as rc, launch


@pytest.fixture
def h200(monkeypatch, tmp_path):
    """An H200 as far as compile_program_kernel asks, an NVRTC that returns a stand-in cubin
    (b"cubin of NAME"), and the cache in a fresh folder (returned)."""
    cache = tmp_path / "cache"
    monkeypatch.setenv("TLC_CACHE_DIR", str(cache))
    monkeypatch.setattr(tlc.runtime, "require_cuda", lambda: None)
    monkeypatch.setattr(tlc.runtime, "target_arch", lambda device=None: "sm_90a")
    monkeypatch.setattr(rc, "device_capability", lambda device: (9, 0))
    monkeypatch.setattr(rc, "current_device", lambda: 0)
    monkeypatch.setattr(rc, "nvrtc_supported_archs", lambda: (80, 90))
    monkeypatch.setattr(rc, "nvrtc_version", lambda: (13, 0))
    monkeypatch.setattr(rc, "nvrtc_compile", lambda source, arch, name: b"cubin of " + name.encode())
    monkeypatch.setattr(launch.CompiledKernel, "_persistent_blocks", lambda self, *kind: 132)
    return cache
