"""std.attention's mla_decode on the sm_90a schedule: the page loop is a TMA ring filled by a
producer warpgroup (schedule/warpspec.py), its two consumer warpgroups side by side meeting at
a named barrier of their own (WarpSpecialization.consumer_barrier).  A page's scores are one
warpgroup's (schedule/one_warpgroup.py): an m64n64 product on warpgroup 0, its row max and sum
in registers, P stored into shared memory and the rescale factors exchanged for P @ V, which
both warpgroups make on their halves of O.  Two barriers a page: the kept sync, moved down to
just before P's store (it orders the last page's reads of P and of the factors before this
page's writes; warpgroup 1, which writes neither, only arrives there), and the exchange's (after P and the factors are stored, before both read
them).  The interpreter runs the ring as recorded, and O and the LSE match NumPy's."""
from __future__ import annotations

import numpy as np
import pytest

from attention_kit import ATTENTION_PATH, mla_inputs, mla_reference
from tlc import ir
from tlc.driver import check_file
from tlc.dtypes import lookup
from tlc.interp import run_kernel
from tlc.schedule import schedule_grids
from tlc.schedule.one_warpgroup import owner_threads, single_accumulator
from tlc.schedule.reduce_slots import reduces_in_registers


@pytest.fixture(scope="module")
def program():
    return check_file(ATTENTION_PATH).program


# (B, SQ, H, DK, DV, lengths, PAGE, CAUSAL, SPLITS): 128-byte rows (the TMA's), pages of 64 (each
# warpgroup's 32 scores a page on wgmma, as at DeepSeek's sizes), lengths not a
# multiple of the page, a one-token sequence (SQ = 2: its first token sees nothing), an empty
# one, H not a multiple of the block's 64 heads, splits past a short sequence
CASES = [(2, 1, 64, 192, 128, [100, 37], 64, True, 1), (3, 2, 100, 192, 128, [150, 1, 0], 64, True, 2),
         (1, 2, 70, 192, 128, [200], 64, False, 3)]


@pytest.mark.parametrize("B, SQ, H, DK, DV, lengths, page, causal, splits", CASES)
def test_the_page_loop_runs_on_the_ring(program, B, SQ, H, DK, DV, lengths, page, causal, splits):
    consts = {"DK": DK, "DV": DV, "PAGE": page, "CAUSAL": causal, "SPLITS": splits, "T": "bf16"}
    grids = schedule_grids(program, "mla_decode", consts, target="sm_90a")
    ws = grids[0].warp_spec
    assert ws is not None and [x.buffer for x in ws.loads] == ["kv_tile", "kr_tile"]
    loop = grids[0].body[ws.loop]
    buffers = {b.name: b for b in grids[0].buffers}
    assert buffers["scores"].layout == single_accumulator((64, page))
    assert owner_threads(buffers["row_max"].layout, 256) == 128 and owner_threads(buffers["acc"].layout, 256) == 256
    syncs = [i for i in range(*ws.consumer) if isinstance(loop.body[i], ir.Sync)]
    store = next(i for i, s in enumerate(loop.body) if isinstance(s, ir.Copy) and s.dst.name == "probs")
    # the consumers meet at their own barrier: the sync kept just before P's store, the one
    # before P @ V left out (the exchange's barrier orders P's stores before it)
    assert ws.consumer_barrier and len(syncs) == 2 and ws.kept_syncs == (store - 1,) == (syncs[0],)
    # warpgroup 1 writes nothing before the exchange's barrier: it only arrives at the kept sync
    assert ws.arrivals == ((store - 1, 128),)
    assert isinstance(loop.body[syncs[1] + 1], ir.Gemm) and loop.body[syncs[1] + 1].a == "probs"
    rescale = next(i for i, s in enumerate(loop.body) if isinstance(s, ir.Parallel) and s.exchange)
    assert ws.exchanges == ((rescale, False),) and loop.body[rescale].exchange == (("rescale", False),)
    assert not any(isinstance(s, ir.Reduce) and not reduces_in_registers(s, buffers, 256) for s in loop.body)
    rng = np.random.default_rng(B * 10 + SQ)
    q, cache, table, lens, keys = mla_inputs(rng, lookup("bf16").numpy(), B, SQ, H, DK, lengths, page)
    scale = 1.0 / np.sqrt(DK)
    o = np.full((B, SQ, H, DV), np.nan, q.dtype)
    lse = np.full((B, H, SQ), np.nan, np.float32)
    args = {"Q": q, "KV": cache, "pages": table, "lengths": lens, "O": o, "LSE": lse, "scale": np.float32(scale),
            "part_o": np.full((B, splits, SQ, H, DV), np.nan, np.float32),
            "part_lse": np.full((B, splits, SQ, H), np.nan, np.float32)}
    for kernel in grids:
        run_kernel(kernel, args)
    want_o, want_lse = mla_reference(q, keys, lens, DV, scale, causal)
    seen = np.isfinite(want_lse)
    assert np.abs(o.astype(np.float64) - want_o).max() < 1.6e-2
    assert np.abs(lse[seen] - want_lse[seen]).max(initial=0) < 1e-5
    assert (lse[~seen] == -np.inf).all() and (o.transpose(0, 2, 1, 3)[~seen] == 0).all()
