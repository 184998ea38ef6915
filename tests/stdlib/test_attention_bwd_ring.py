"""std.attention's flash_bwd on the sm_90a schedule: its dQ grid's loop over the key blocks and
its dK/dV grid's loop over the query blocks of every head of a group are TMA rings filled by a
producer warpgroup (schedule/warpspec.py), the log-sum-exp and dO . O rows copied into
registers by the consumers alone (before the dQ loop; in the dK/dV loop, a stage's columns);
the interpreter runs the rings as recorded, and the gradients match NumPy's."""
from __future__ import annotations

import numpy as np
import pytest

import tlc
from attention_kit import ATTENTION_PATH, attention_grads, attention_inputs
from tlc.driver import check_file
from tlc.interp import run_kernel
from tlc.schedule import schedule_grids

BWD_TOL = 4e-3


@pytest.fixture(scope="module")
def program():
    return check_file(ATTENTION_PATH).program


@pytest.mark.parametrize("B, H, HK, S, SK, causal, consts", [
    (1, 2, 1, 70, 100, False, {}), (2, 2, 2, 64, 64, True, {}), (1, 4, 2, 100, 70, True, {}),
    (1, 3, 3, 33, 150, True, {"BKV": 64, "BQ": 16, "KV_THREADS": 128}), (1, 2, 2, 200, 130, False, {"BM": 128, "THREADS": 256})])
def test_both_grids_run_on_the_ring(program, B, H, HK, S, SK, causal, consts):
    D = 64  # 128-byte rows, as the TMA copies them
    grids = schedule_grids(program, "flash_bwd", {"D": D, "CAUSAL": causal, "T": "f16", **consts}, target="sm_90a")
    ws = grids[1].warp_spec
    assert ws is not None and [type(grids[1].body[i]).__name__ for i in ws.consumer_only] == \
        ["Copy", "Copy", "Copy", "Copy", "Parallel"]  # Q, dO into shared; LSE, delta into registers
    assert grids[2].warp_spec is not None and [x.buffer for x in grids[2].warp_spec.loads] == ["q_tile", "do_tile"]
    rng = np.random.default_rng(S + SK)
    q, k, v, scale = attention_inputs(rng, np.float16, B, H, HK, S, SK, D)
    do = rng.standard_normal(q.shape).astype(np.float16)
    mod = tlc.load(ATTENTION_PATH, target="cpu")
    o, lse = np.zeros_like(q), np.zeros((B, H, S), np.float32)
    mod.flash_fwd(q, k, v, o, lse, scale, CAUSAL=causal)  # O and LSE from the interpreter
    grads = [np.full(x.shape, np.nan, x.dtype) for x in (q, k, v)]
    args = {"Q": q, "K": k, "V": v, "O": o, "dO": do, "LSE": lse, "dQ": grads[0], "dK": grads[1], "dV": grads[2],
            "scale": np.float32(scale), "delta": np.zeros((B, H, S), np.float32)}
    for kernel in grids:
        run_kernel(kernel, args)
    for name, got, want in zip(("dQ", "dK", "dV"), grads, attention_grads(q, k, v, do, scale, causal)):
        err = np.abs(got.astype(np.float64) - want).max() / np.abs(want).max()
        assert err < BWD_TOL, (name, err)
