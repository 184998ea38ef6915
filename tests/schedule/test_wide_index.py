"""64-bit indices (tests/programs/wide_index.tl): the IR indexes in i32, and an i64 index or
region offset is clamped into [-1, 2^31 - 1] before it is converted (schedule/lower.py
`index_i32`), so one past every dimension stays past it: reads give 0 and writes do nothing,
on the interpreter, in the generated C (built here with nvcc) and on the GPU.  Before, the
conversion wrapped: 2^32 + 3 read element 3 on both targets."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import tlc

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "codegen"))
from nvcc import compile_device  # noqa: E402

PROGRAM = str(Path(__file__).resolve().parents[1] / "programs" / "wide_index.tl")
OFFSETS = [5, (1 << 32) + 3, -(1 << 32) + 2, (1 << 31), (1 << 62), -1]


def expected(kernel: str, x: np.ndarray, off: int) -> np.ndarray:
    n = x.size
    y = np.full(n, -1, np.float32)
    for i in range(32):
        if kernel == "put":
            if 0 <= off + i < n:
                y[off + i] = x[i]
        else:
            y[i] = x[off + i] if 0 <= off + i < n else 0.0
    return y


def run(target: str, kernel: str, off: int) -> tuple[np.ndarray, np.ndarray]:
    x = np.arange(1, 65, dtype=np.float32)
    y = np.full(64, -1, np.float32)
    if target == "cuda":
        import cupy
        xd, yd = cupy.asarray(x), cupy.asarray(y)
        getattr(tlc.load(PROGRAM, target="cuda"), kernel)(xd, yd, off)
        return yd.get(), expected(kernel, x, off)
    getattr(tlc.load(PROGRAM, target="cpu"), kernel)(x, y, off)
    return y, expected(kernel, x, off)


@pytest.mark.parametrize("off", OFFSETS)
@pytest.mark.parametrize("kernel", ["pick", "pick_tile", "put"])
def test_the_interpreter_keeps_a_wide_index_outside(kernel, off):
    got, want = run("cpu", kernel, off)
    np.testing.assert_array_equal(got, want)


def test_the_ir_clamps_before_converting():
    from tlc.ir import print_kernel
    mod = tlc.load(PROGRAM, target="cpu")
    pick = print_kernel(mod.pick.scheduled({}, "sm_80"))
    assert "x[i32(max(min(off + i64(i), 2147483647:i64), -1:i64))]" in pick, pick
    tile = print_kernel(mod.pick_tile.scheduled({}, "sm_80"))  # a region of 32: its end fits an i32
    assert "i32(max(min(off, 2147483615:i64), -32:i64))" in tile, tile


@pytest.mark.nvcc
def test_it_builds(tmp_path):
    from tlc import runner
    for arch in ("sm_80", "sm_90a"):
        source = runner.build(PROGRAM, arch=arch)[0]
        assert "tl::imin<long long>" in source and "2147483647LL" in source
        compile_device(source, arch, tmp_path, name=f"wide_{arch}")


@pytest.mark.gpu
@pytest.mark.parametrize("off", OFFSETS)
@pytest.mark.parametrize("kernel", ["pick", "pick_tile", "put"])
def test_the_gpu_keeps_a_wide_index_outside(kernel, off):
    got, want = run("cuda", kernel, off)
    np.testing.assert_array_equal(got, want)
