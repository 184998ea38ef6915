"""fast_math.py: exp as fast_exp2 and a loop-invariant division as a product with its
reciprocal where the values stored end at 16-bit precision (issue #17's plain softmax), and
the precise forms everywhere else."""
from __future__ import annotations

import re
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

import tlc
from tlc.ir import print_kernel
from tlc.schedule.fast_math import precise_names

from kit import scheduled
from test_layout_infer import SOFTMAX_ROW

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "codegen"))  # nvcc.py, the shared compile helper
from nvcc import BUILD_ARCHS, compile_object  # noqa: E402

PLAIN = Path(__file__).resolve().parents[2] / "bench" / "plain"

# test_layout_infer's plain softmax (rows of 8192 at 256 threads), its output's type a parameter
ROWS = SOFTMAX_ROW.replace("y: f16[M, N], BN", "y: U[M, N], U: dtype = f16, BN") + """
@kernel
def steps(x: f16[M, N], y: f16[M, N], BN: const = 512):
    with grid(M, threads=128) as r:
        row = fragment(f32[1, BN])
        copy(x[r, 0], row)
        for j in parallel(BN):
            row[0, j] = where(exp(row[0, j]) > 2.0, 1.0, 0.0) + row[0, j] / (row[0, j] + 4.0)
        copy(row, y[r, 0])
"""


def test_the_plain_softmax_takes_the_fast_forms():
    k = scheduled((PLAIN / "softmax.tl").read_text(), "softmax", target="sm_90a")
    assert k.notes[0] == ("fast math: 1 exp as fast_exp2 and 1 division by a loop-invariant as a product with its "
                          "reciprocal, where the values stored (row) end at 16-bit precision")
    text = print_kernel(k)
    assert "    row[u1, j] = fast_exp2((row[u1, j] - row_max[u1]) * 1.4426950408889634)\n" in text
    assert "  let rcp0: f32 = 1.0 / row_sum[0]\n  for u2, j in parallel(1, 8192):\n    row[u2, j] = row[u2, j] * rcp0\n" in text


def test_an_f32_output_keeps_the_precise_forms():
    k = scheduled(ROWS, "softmax", {"U": "f32"})
    assert not any(n.startswith("fast math") for n in k.notes)
    text = print_kernel(k)
    assert "row[u0, j] = exp(row[u0, j] - mx[u0])" in text and "row[u1, j] = row[u1, j] / sm[u1]" in text
    assert {"row", "sm", "mx", "y"} <= precise_names(k)


def test_a_condition_and_a_varying_divisor_keep_the_precise_forms():
    """exp's value decides a comparison (which needs every bit); the divisor varies per element"""
    k = scheduled(ROWS, "steps")
    assert not any(n.startswith("fast math") for n in k.notes)
    assert "where(exp(row[u0, j]) > 2.0, 1.0, 0.0) + row[u0, j] / (row[u0, j] + 4.0)" in print_kernel(k)


def test_divisions_in_a_loop_run_once_a_thread_are_not_made_reciprocals():
    """std.nn's layer_norm divides in parallel(1) loops: one division a thread either way, and
    each reciprocal a scalar more against its blocks per SM"""
    k = tlc.load("std.nn", target="cpu").layer_norm.scheduled({}, "sm_90a")
    assert "rcp" not in print_kernel(k) and k.min_blocks == 2


def test_the_interpreter_matches_numpy():
    rng = np.random.default_rng(2)
    x = (rng.standard_normal((3, 512)) * 4).astype(np.float16)  # (no mask: N = BN)
    y = np.full_like(x, np.nan)
    mod = tlc.compile_source(ROWS, target="cpu")
    mod.softmax(x, y, BN=512)
    e = np.exp(x.astype(np.float64) - x.max(axis=1, keepdims=True))
    assert np.abs(y - e / e.sum(axis=1, keepdims=True)).max() < 1e-3


@pytest.mark.nvcc
@pytest.mark.parametrize("arch", BUILD_ARCHS)
def test_the_fast_forms_and_narrow_fragments_build(arch, tmp_path):
    """One module: fast_exp2 and a hoisted reciprocal (softmax), an exponential kept precise by a
    comparison (steps), rows held in f16 and kept f32 for bf16 (rms), a recomputed update (the plain
    layer_norm, rows of 4096); no spills."""
    from tlc.codegen import generate_file

    from test_narrow_fragments import RMS, plain

    kernels = [scheduled(ROWS, "softmax", target=arch), scheduled(ROWS, "steps", target=arch),
               scheduled(RMS, "rms", {"T": "bf16", "U": "bf16"}, target=arch), scheduled(RMS, "clipped", target=arch),
               replace(plain("layer_norm", BN=4096), name="layer_norm_4096")]
    assert "fast_exp2" in print_kernel(kernels[0]) and kernels[4].buffer("row").dtype.name == "f16"
    log = compile_object(generate_file(kernels, arch), arch, tmp_path)
    spills = re.findall(r"(\d+) bytes spill stores, (\d+) bytes spill loads", log)
    assert len(spills) == len(kernels) and set(spills) == {("0", "0")}, log
