"""batch_loads.py: consecutive copies from tensors into fragments issue their loads together
(issue #17's plain layer_norm: its row's, weights' and biases' loads one after another)."""
from __future__ import annotations

import re
import sys
from pathlib import Path

import numpy as np
import pytest

import tlc
from tlc.codegen import generate
from tlc.ir import print_kernel

from kit import scheduled

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "codegen"))  # nvcc.py, the shared compile helper
from nvcc import compile_device, cuobjdump  # noqa: E402

PLAIN = Path(__file__).resolve().parents[2] / "bench" / "plain"

KERNELS = """
@kernel
def apart(x: f16[M, N], w: f16[N], y: f16[M, N], BN: const = 1024):
    with grid(M, threads=128) as r:
        row = fragment(f32[1, BN])
        weight = fragment(f32[BN])
        total = fragment(f32[1])
        copy(x[r, 0], row)
        reduce_sum(row, total, dim=1)
        copy(w[0], weight)
        for j in parallel(BN):
            row[0, j] = row[0, j] * weight[j] + total[0]
        copy(row, y[r, 0])

@kernel
def twice(x: f16[M, N], y: f16[M, N], BN: const = 4096):
    with grid(M, threads=128) as r:
        a = fragment(f32[1, BN])
        b = fragment(f32[1, BN])
        copy(x[r, 0], a)
        copy(x[r, 0], a)
        copy(y[r, 0], b)
        for j in parallel(BN):
            a[0, j] = a[0, j] + b[0, j]
        copy(a, y[r, 0])

@kernel
def rows8(x: f16[M, N], y: f16[M, N], BN: const = 1024, K: const = 8):
    with grid(cdiv(M, 8), threads=128) as r:
        a = fragment(f32[1, BN])
        b = fragment(f32[1, BN])
        c = fragment(f32[1, BN])
        d = fragment(f32[1, BN])
        e = fragment(f32[1, BN])
        f = fragment(f32[1, BN])
        g = fragment(f32[1, BN])
        h = fragment(f32[1, BN])
        copy(x[r * 8, 0], a)
        copy(x[r * 8 + 1, 0], b)
        copy(x[r * 8 + 2, 0], c)
        copy(x[r * 8 + 3, 0], d)
        if K == 8:
            copy(x[r * 8 + 4, 0], e)
            copy(x[r * 8 + 5, 0], f)
            copy(x[r * 8 + 6, 0], g)
            copy(x[r * 8 + 7, 0], h)
        for j in parallel(BN):
            a[0, j] = a[0, j] + b[0, j] + c[0, j] + d[0, j] + e[0, j] + f[0, j] + g[0, j] + h[0, j]
        copy(a, y[r, 0])
"""


def test_the_plain_layer_norm_batches_its_three_copies(monkeypatch):
    """as scheduled before its rows are pipelined (the version pipeline_rows.py compares)"""
    import tlc.schedule

    monkeypatch.setattr(tlc.schedule, "pipelined_rows", lambda *args: None)
    k = scheduled((PLAIN / "layer_norm.tl").read_text(), "layer_norm", target="sm_90a")
    assert "load batches (every load issued before the first conversion): 1: row, weight, bias (lines 15, 16, 17)" \
        in k.notes
    text = print_kernel(k)
    assert "copy x[r, 0]<1, 8192> -> row (load batch 1)\n" in text
    assert "copy b[0]<8192> -> bias (load batch 1)\n" in text


def test_copies_apart_or_into_one_fragment_are_not_batched():
    """a statement between two copies ends the run; a second copy into the same fragment starts
    a new one (its loads would overwrite the first's registers)"""
    apart = scheduled(KERNELS, "apart")
    assert not any(n.startswith("load batches") for n in apart.notes)
    assert "(load batch" not in print_kernel(apart)
    twice = print_kernel(scheduled(KERNELS, "twice"))
    assert "copy x[r, 0]<1, 4096> -> a\n" in twice
    assert "copy x[r, 0]<1, 4096> -> a (load batch 1)\n  copy y[r, 0]<1, 4096> -> b (load batch 1)\n" in twice


def test_copies_of_one_run_a_thread_are_not_batched():
    """rows of 1024 at 128 threads: one run of 8 a thread (MIN_RUNS)"""
    small = scheduled(KERNELS, "twice", {"BN": 1024})
    assert str(small.buffer("b").layout) == "blocked(vec=8, threads=128)"
    assert "(load batch" not in print_kernel(small)


def test_copies_of_one_run_a_thread_are_batched_eight_together():
    """eight copies of one run of 8 a thread hold a batch's runs (BATCH_RUNS): the bytes in flight
    of four copies of two runs; four of one run are not batched"""
    eight = scheduled(KERNELS, "rows8")
    assert str(eight.buffer("h").layout) == "blocked(vec=8, threads=128)"
    assert "load batches (every load issued before the first conversion): 1: a, b, c, d, e, f, g, h " \
        "(lines 38, 39, 40, 41, 43, 44, 45, 46)" in eight.notes
    four = scheduled(KERNELS, "rows8", {"K": 4})
    assert "(load batch" not in print_kernel(four)


def test_two_run_copies_beside_a_one_run_copy_are_batched_as_before():
    """a run of copies short of BATCH_RUNS batches its copies of MIN_RUNS runs or more, two or
    more together: at BN = 2048 a and b hold two runs each, c (f32[1, 1024]) one"""
    src = KERNELS.replace("c = fragment(f32[1, BN])", "c = fragment(f32[1, 1024])").replace(
        "c[0, j]", "c[0, j % 1024]")
    k = print_kernel(scheduled(src, "rows8", {"BN": 2048, "K": 4}))
    assert "-> a (load batch 1)\n" in k and "-> b (load batch 1)\n" in k
    assert "-> c\n" in k and "-> d\n" in k


def test_a_batch_renders_its_loads_before_its_conversions(monkeypatch):
    import tlc.schedule

    monkeypatch.setattr(tlc.schedule, "pipelined_rows", lambda *args: None)  # as in the test above
    k = scheduled((PLAIN / "layer_norm.tl").read_text(), "layer_norm", target="sm_90a")
    src = generate(k, "sm_90a").source
    body = src[src.index("__global__"):]
    fast = body[body.index("if ((static_cast<long long>(r) >= 0"):body.index("} else {")]  # (rows) & (columns): batch_test
    loads = [m.start() for m in re.finditer(r"tl::g2f_load<", fast)]
    converts = [m.start() for m in re.finditer(r"tl::g2f_convert\(", fast)]
    assert len(loads) == len(converts) == 3 and max(loads) < min(converts)
    rest = body[body.index("} else {"):]
    assert rest.index("tl::copy_g2f<") < rest.index("reduce_sum")  # the copies one by one elsewhere


def test_batched_copies_run_on_the_interpreter():
    """the batch is the code generator's: the interpreter runs the copies as written (rows of
    N < BN, so that the CUDA path's edge test would fail)"""
    mod = tlc.load(str(PLAIN / "layer_norm.tl"), target="cpu")
    rng = np.random.default_rng(0)
    x = rng.standard_normal((3, 100)).astype(np.float16)
    w, b = rng.standard_normal(100).astype(np.float16), rng.standard_normal(100).astype(np.float16)
    y = np.zeros_like(x)
    mod.layer_norm(x, w, b, y, BN=128)
    xf = x.astype(np.float64)
    c = xf - xf.mean(axis=1, keepdims=True)
    ref = c / np.sqrt((c * c).mean(axis=1, keepdims=True) + 1e-5) * w + b
    assert np.abs(y - ref).max() < 2e-2


def _vector_loads_between_branches(sass: str) -> list[int]:
    """The 16-byte global loads of each stretch of SASS between two branches (or joins)."""
    runs, n = [], 0
    for line in sass.splitlines():
        if re.search(r"\b(BRA|BSYNC|BSSY|EXIT)\b", line):
            runs.append(n)
            n = 0
        elif re.search(r"\bLDG\.E(\.\w+)*\.128\b", line):
            n += 1
    return runs + [n]


@pytest.mark.nvcc
def test_the_batched_plain_layer_norm_issues_its_loads_together(tmp_path, monkeypatch):
    """ptxas keeps the batch: the row's, weights' and biases' 12 vector loads (4 each at 256
    threads) in one stretch without a branch, where the copies one by one had 4 each; no spills"""
    import subprocess

    import tlc.schedule

    monkeypatch.setattr(tlc.schedule, "pipelined_rows", lambda *args: None)  # as in the tests above
    k = scheduled((PLAIN / "layer_norm.tl").read_text(), "layer_norm", target="sm_90a")
    log = compile_device(generate(k, "sm_90a").source, "sm_90a", tmp_path)
    assert re.findall(r"(\d+) bytes spill stores, (\d+) bytes spill loads", log) == [("0", "0")], log
    sass = subprocess.run([cuobjdump(), "-sass", str(tmp_path / "k.cubin")], capture_output=True, text=True,
                          check=True).stdout
    assert max(_vector_loads_between_branches(sass)) == 12
