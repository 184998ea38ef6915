"""Test-wide settings: `gpu` tests run only where CuPy can use a CUDA GPU, and a fixture
that checks a source string and returns its rendered diagnostics (for exact-text asserts).

The `gpu` marker itself is registered in pyproject.toml.
"""
from __future__ import annotations

import functools

import pytest


@functools.lru_cache(maxsize=None)
def cuda_gpu_usable() -> bool:
    try:
        import cupy

        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:  # no CuPy, no driver, no device: all mean "no GPU here"
        return False


def pytest_collection_modifyitems(config, items):
    gpu_items = [item for item in items if item.get_closest_marker("gpu")]
    if gpu_items and not cuda_gpu_usable():
        no_gpu = pytest.mark.skip(reason="gpu test: no CUDA GPU usable through CuPy on this machine")
        for item in gpu_items:
            item.add_marker(no_gpu)


@pytest.fixture
def rendered():
    """`rendered(text, path="test.tl")`: check `text`; its diagnostics as the CLI prints them
    ("" for a clean program)."""
    from tlc.diagnostics import render_all
    from tlc.driver import check_source

    def run(text: str, path: str = "test.tl") -> str:
        result = check_source(text, path)
        return render_all(result.diagnostics, result.sources)

    return run
