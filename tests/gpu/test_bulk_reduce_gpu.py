"""The TMA's bulk reduction of a tile's atomic add on the GPU (codegen/bulk_reduce.py;
tests/codegen/test_bulk_reduce.py checks the code): attention's one-grid backward, whose step
adds its dQ partial into an f32 workspace so, against the f64 gradients at ragged shapes (GQA,
causal, S != SK, a last query block the TMA cuts short), ordered and not; in turns
(DETERMINISTIC) the gradients are the same bit for bit run after run."""
import pathlib
import sys

import numpy as np
import pytest

import tlc

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "stdlib"))
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from attention_kit import attention_inputs  # noqa: E402
from test_attention import check_bwd  # noqa: E402
from test_attention_gpu import on_device  # noqa: E402

pytestmark = pytest.mark.gpu
FUSED = str(ROOT / "bench" / "attention_bwd_fused.tl")


@pytest.mark.parametrize("det", [False, True])
@pytest.mark.parametrize("shape", [(1, 4, 2, 300, 500, False), (2, 4, 4, 700, 700, True), (1, 8, 2, 1000, 1100, True)])
def test_the_fused_backward_against_f64(det, shape):
    B, H, HK, S, SK, causal = shape
    std = tlc.load("std.attention", target="cuda")
    fused = tlc.load(FUSED, target="cuda")
    check_bwd(on_device(std.flash_fwd), on_device(fused.flash_bwd_fused), "f16", B, H, HK, S, SK, 128, causal,
              {"DETERMINISTIC": det}, seed=11)


def test_in_turns_the_gradients_are_the_same_bit_for_bit():
    import cupy as cp

    std = tlc.load("std.attention", target="cuda")
    fused = tlc.load(FUSED, target="cuda")
    rng = np.random.default_rng(3)
    q, k, v, scale = (cp.asarray(x) if isinstance(x, np.ndarray) else x
                      for x in attention_inputs(rng, np.float16, 2, 8, 4, 1500, 1500, 128))
    do = cp.asarray(rng.standard_normal(q.shape).astype(np.float16))
    o, lse = cp.zeros_like(q), cp.zeros((2, 8, 1500), cp.float32)
    std.flash_fwd(q, k, v, o, lse, scale)
    runs = []
    for _ in range(3):
        grads = [cp.full(x.shape, cp.nan, x.dtype) for x in (q, k, v)]
        fused.flash_bwd_fused(q, k, v, o, do, lse, *grads, scale, DETERMINISTIC=True)
        runs.append(cp.concatenate([g.ravel() for g in grads]).get())
    assert not np.isnan(runs[0].astype(np.float32)).any()
    assert all(np.array_equal(runs[0], r) for r in runs[1:])
