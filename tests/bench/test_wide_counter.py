"""bench/wide_counter.py (bench/queue/R_wide_counter.sh) without a GPU: its grid-stride kernel
gets the 64-bit counter only with sm80.WIDE_STEPPED_COUNTER on, and computes y = 2x (the
interpreter, at a size where blocks run several iterations)."""
import sys
from pathlib import Path

import numpy as np

import tlc
from tlc.codegen import sm80

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
import wide_counter  # noqa: E402


def test_the_switch_reaches_the_benchmarks_kernel(monkeypatch):
    for wide in (False, True):
        monkeypatch.setattr(sm80, "WIDE_STEPPED_COUNTER", wide)
        mod = tlc.compile_source(wide_counter.SOURCE, target="cpu", path=f"grid_stride_{wide}.tl")
        assert ("long long tl_k_k" in mod.grid_stride.generated({}, "sm_90a").source) == wide


def test_the_grid_stride_kernel_doubles_every_element():
    mod = tlc.compile_source(wide_counter.SOURCE, target="cpu", path="grid_stride.tl")
    x = np.random.default_rng(0).standard_normal(2 * 4 * 256 + 5).astype(np.float32)
    y = np.zeros_like(x)
    mod.grid_stride(x, y, BLOCKS=4)
    np.testing.assert_array_equal(y, 2 * x)
