"""flash_bwd on the H200 where the dK/dV ring carries dK's product into the next step
(codegen/sm90.py's carried gemms: bench/E_bwd_staged.tl, dS written to shared memory, each
warpgroup meeting at a barrier of its own), beside std.attention's (dS in registers): a query
length of zero runs the ring no iteration, and dK's clear, folded into its first iteration's
product, comes after the loop instead (zeros, not NaN); a long GQA ring (many steps a block,
four query heads a KV head) against the f64 gradients."""
import pathlib
import sys

import numpy as np
import pytest

import tlc

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "stdlib"))
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from test_attention import check_bwd  # noqa: E402

pytestmark = pytest.mark.gpu
MODULES = ["std.attention", str(ROOT / "bench" / "E_bwd_staged.tl")]


@pytest.mark.parametrize("path", MODULES)
def test_a_ring_of_no_iteration_writes_zero_gradients(path):
    import cupy as cp

    mod = tlc.load(path, target="cuda")
    B, H, HK, SK, D = 1, 4, 2, 300, 128
    q = cp.zeros((B, H, 0, D), cp.float16)
    k, v = (cp.asarray(np.random.default_rng(0).standard_normal((B, HK, SK, D)), cp.float16) for _ in range(2))
    o, do, lse = cp.zeros_like(q), cp.zeros_like(q), cp.zeros((B, H, 0), cp.float32)
    dq = cp.zeros_like(q)
    dk, dv = cp.full(k.shape, cp.nan, cp.float16), cp.full(v.shape, cp.nan, cp.float16)
    mod.flash_bwd(q, k, v, o, do, lse, dq, dk, dv, 0.1)
    assert bool((dk == 0).all()) and bool((dv == 0).all())


@pytest.mark.parametrize("dtype", ["f16", "bf16"])
def test_a_long_gqa_ring(dtype):
    from test_attention_gpu import on_device  # (this folder)

    std = tlc.load("std.attention", target="cuda")
    staged = tlc.load(MODULES[1], target="cuda")
    check_bwd(on_device(std.flash_fwd), on_device(staged.flash_bwd), dtype, 1, 8, 2, 1500, 700, 128, True, {}, seed=7)
