"""An element-wise tile op that reads a tensor transposed (x.T) stages it through a shared tile in
square block tiles, as the plain transpose does (bench/plain/transpose.tl: 0.94 of copy on the
H200, where x.T read element by element down x's columns ran at 0.37)."""
from __future__ import annotations

import re
import sys
from pathlib import Path

import numpy as np
import pytest

from tileops_kit import module
from tlc.codegen import generate
from tlc.ir import print_kernel

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "codegen"))  # nvcc.py, the shared compile helper
from nvcc import compile_device, cuobjdump  # noqa: E402

SRC = """
@tile_op
def flip(x: f32[M, N]) -> f32[N, M]:
    return x.T

@tile_op
def mixed(x: f16[M, N], y: f16[N, M], b: f16[M]) -> f16[N, M]:
    return x.T * 2.0 + y + b
"""


def _kernel(name: str, sizes=None):
    prog = getattr(module(SRC), name).program({}, "sm_90a", sizes or {"M": 8192, "N": 8192})
    (launch,) = prog.launches
    return prog, launch.kernel


def test_the_transposed_tensor_goes_through_a_shared_tile():
    prog, k = _kernel("flip")
    assert "tiles: block tile [64, 64], threads=256" in prog.describe()
    assert "x.T through the shared tile x_t (read along its rows, square block tiles)" in k.notes
    text = print_kernel(k)
    assert "copy x[bx * 64, by * 64]<64, 64> -> x_t\n  sync\n" in text, text
    assert "out_tile[i, j] = x_t[j, i]\n" in text, text
    assert re.search(r"shared x_t: f32\[64, 64\] @0 layout=\d+ B, pad=\d+", text), text  # padded rows


def test_only_the_transposed_read_is_staged():
    _, k = _kernel("mixed")
    text = print_kernel(k)
    assert "copy x[bx * 64, by * 64]<64, 64> -> x_t\n" in text, text
    assert "copy y[by * 64, bx * 64]<64, 64> -> y_tile" in text, text  # read as the result is
    assert "b[bx * 64 + j]" in text, text  # a broadcast operand is loaded element by element


@pytest.mark.parametrize("shape", [(37, 45), (64, 64), (130, 3), (1, 200)])
def test_the_staged_transposes_compute_as_numpy(shape):
    rng = np.random.default_rng(0)
    x = rng.standard_normal(shape).astype(np.float32)
    mod = module(SRC)
    np.testing.assert_array_equal(mod.flip(x), x.T)
    xh, y = x.astype(np.float16), rng.standard_normal(shape[::-1]).astype(np.float16)
    b = rng.standard_normal(shape[0]).astype(np.float16)
    want = (xh.T.astype(np.float32) * 2 + y.astype(np.float32) + b.astype(np.float32)).astype(np.float16)
    np.testing.assert_allclose(mod.mixed(xh, y, b).astype(np.float32), want.astype(np.float32), rtol=2e-3, atol=2e-3)


@pytest.mark.nvcc
def test_the_staged_transpose_moves_16_byte_vectors(tmp_path):
    """SASS (sm_90a, f32): the tile of x is read and the result written in 16-byte vectors,
    shared memory written in 16-byte vectors too; no spills."""
    import subprocess

    log = compile_device(generate(_kernel("flip")[1], "sm_90a").source, "sm_90a", tmp_path)
    assert re.findall(r"(\d+) bytes spill stores, (\d+) bytes spill loads", log) == [("0", "0")], log
    sass = subprocess.run([cuobjdump(), "-sass", str(tmp_path / "k.cubin")], capture_output=True, text=True,
                          check=True).stdout
    for op in ("LDG.E.128", "STS.128", "STG.E.128"):
        assert len(re.findall(rf"\b{re.escape(op)}\b", sass)) >= 4, op
