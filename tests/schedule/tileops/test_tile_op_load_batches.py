"""A tile op's kernels take the load batches (schedule/batch_loads.py) as a kernel's do: the copies
of its operands into fragments issue every load before the first conversion (std.elementwise's
where and the other ternaries: three copies, each one waiting for its loads before the next
issued, ran at 0.78-0.87x PyTorch on the H200 where the binaries ran at 0.99x).  At two runs a
thread (`ew_runs=2`): at the default one a thread a copy is no batch (batch_loads.MIN_RUNS), and
its whole-runs build issues the three loads together anyway (tests/codegen/test_copies_flat.py)."""
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
def pick(cond: bool[M, N], a: f16[M, N], b: f16[M, N]) -> f16[M, N]:
    return where(cond, a, b)

@tile_op
def scale(x: f16[M, N]) -> f16[M, N]:
    return x * 2.0
"""


def _kernel(name: str):
    prog = getattr(module(SRC), name).with_rules(ew_runs=2).program({}, "sm_90a", {"M": 4096, "N": 4096})
    (launch,) = prog.launches
    return launch.kernel


def test_a_tile_ops_operand_copies_are_one_load_batch():
    k = _kernel("pick")
    assert "load batches (every load issued before the first conversion): 1: cond_tile, a_tile, b_tile" in k.notes
    text = print_kernel(k)
    assert len(re.findall(r"copy \w+\[.*\]<2048> -> \w+_tile \(load batch 1\)\n", text)) == 3, text


def test_a_single_copy_is_no_batch():
    assert "load batch" not in print_kernel(_kernel("scale"))


def test_the_batched_tile_op_computes_as_numpy():
    rng = np.random.default_rng(0)
    cond = rng.random((37, 45)) < 0.5
    a, b = (rng.standard_normal((37, 45)).astype(np.float16) for _ in range(2))
    np.testing.assert_array_equal(module(SRC).pick(cond, a, b), np.where(cond, a, b))


@pytest.mark.nvcc
def test_the_batched_tile_op_issues_its_loads_together(tmp_path):
    """ptxas keeps the batch (sm_90a): cond's two 8-byte and a's and b's four 16-byte loads (16
    elements a thread) in one stretch without a branch, where the copies one by one had two
    each; no spills."""
    import subprocess

    log = compile_device(generate(_kernel("pick"), "sm_90a").source, "sm_90a", tmp_path)
    assert re.findall(r"(\d+) bytes spill stores, (\d+) bytes spill loads", log) == [("0", "0")], log
    sass = subprocess.run([cuobjdump(), "-sass", str(tmp_path / "k.cubin")], capture_output=True, text=True,
                          check=True).stdout
    stretches = re.split(r"\b(?:BRA|BSYNC|BSSY|EXIT)\b", sass)  # straight-line code between branches and joins
    assert max(len(re.findall(r"\bLDG\.E(?:\.\w+)*\.(?:64|128)\b", t)) for t in stretches) == 6
