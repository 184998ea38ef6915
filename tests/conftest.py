"""Test-wide settings: `gpu` tests run only where CuPy can use a CUDA GPU; Hypothesis tests
draw the same examples on every run; and a fixture that checks a source string and returns its
rendered diagnostics (for exact-text asserts).

The `gpu` and `slow` markers are registered in pyproject.toml.
"""
from __future__ import annotations

import functools
import os

import pytest
from hypothesis import settings

# tlc itself, first: the bench scripts that tests/bench imports put the checkout on sys.path
# before they import tlc, which would make every later `import tlc` of that process the source
# tree's, not the installed package CI tests (.ci/run), and paths and cache identities differ
import tlc  # noqa: F401,E402

# Derandomized, and no example database: a run tests what the previous one did, whatever
# machine, so a pass or a failure (or a slow input) cannot come and go between runs.
# HYPOTHESIS_PROFILE=explore draws new examples (to look for bugs, not in CI).
settings.register_profile("tlc", derandomize=True, database=None)
settings.register_profile("explore", derandomize=False)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "tlc"))


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config):
    """One worker per core (pytest-xdist, a test extra) unless -n is given; asked for here and
    not in addopts so that a machine without xdist still runs the suite, in one process."""
    # A worker (PYTEST_XDIST_WORKER set) runs its share itself: asking it for workers too
    # would start workers of workers without end.
    if (getattr(config.option, "numprocesses", 0) is None and not config.option.collectonly
            and "PYTEST_XDIST_WORKER" not in os.environ):
        config.option.numprocesses = "auto"
        if config.option.dist == "no":
            config.option.dist = "worksteal"  # test times differ by 1000x: idle workers take from busy ones


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
    # tests that run tlc's own nvcc calls; those compiling through tests/codegen/nvcc.py skip there
    nvcc_items = [item for item in items if item.get_closest_marker("nvcc")]
    if nvcc_items:
        from tlc.diagnostics import TlcError
        from tlc.runtime.compile import find_nvcc

        try:
            find_nvcc()
        except TlcError as e:
            no_nvcc = pytest.mark.skip(reason=f"nvcc test: no CUDA toolkit: {str(e).split(';')[0]}")
            for item in nvcc_items:
                item.add_marker(no_nvcc)


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
