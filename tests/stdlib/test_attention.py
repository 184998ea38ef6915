"""std.attention against NumPy on the interpreter (attention_kit's f64 reference): ragged S and
SK, S != SK, causal and not (a causal row that sees no key), MHA, GQA and MQA, f16 and bf16; the
sm_90a schedule (a TMA ring with a producer warpgroup) run by the interpreter as its IR says;
nvcc builds for sm_80 and sm_90a without spills; the registry and the reference page.
tests/gpu/test_attention_gpu.py runs the same table on the GPU."""
from __future__ import annotations

import numpy as np
import pytest

import tlc
from attention_kit import (ATTENTION_PATH, attention_grads, attention_inputs, attention_reference, mla_inputs, mla_reference,
                           paged_cache)
from module_checks import assert_reference_page_is_current, defs_without_a_doc_comment
from op_registry import check_or_record
from tlc.interp import run_kernel

SMALL = {"BM": 64, "BN": 32, "THREADS": 128}
# (B, H, HK, S, SK, D, CAUSAL, constants): every ragged edge the kernel has
CASES = [
    (1, 2, 2, 70, 100, 64, False, SMALL),    # S, SK ragged, several key blocks
    (1, 2, 2, 100, 70, 64, True, SMALL),     # S > SK: the first 30 rows see no key
    (2, 4, 2, 33, 150, 32, True, SMALL),     # GQA, S < SK: the mask aligned to the bottom right
    (1, 3, 1, 64, 64, 32, False, SMALL),     # MQA, whole tiles
    (1, 2, 1, 17, 200, 64, True, {"BM": 64, "BN": 64, "THREADS": 128, "STAGES": 3}),
]
# flash_decode: (B, H, HK, SQ, SK, D, CAUSAL, constants): one or a few new tokens, GQA groups
# spread over row blocks, splits past the last key (empty), a causal row that sees part of the cache
DECODE_CASES = [
    (2, 4, 2, 1, 300, 64, False, {}),
    (1, 8, 2, 3, 200, 64, True, {"SPLITS": 3}),
    (1, 2, 2, 2, 100, 32, True, {"SPLITS": 8, "BN": 32}),        # splits 4..7 hold no key
    (1, 12, 1, 2, 77, 32, False, {"SPLITS": 2, "BN": 32, "BM": 16}),  # 24 rows: two row blocks
    (2, 8, 2, 1, 300, 32, False, {"BLOCKS": 7, "BN": 32}),  # 4 items: 3 splits fill whole waves of 7
    (4, 4, 1, 1, 500, 32, False, {"BLOCKS": 10, "BN": 32}),  # under one wave: 3 splits
]
# flash_decode_paged: (B, H, HK, SQ, lengths, D, CAUSAL, PAGE, constants): sequences of their own
# lengths (one empty, one ending inside a page), pages shuffled among unused NaN pages
PAGED_CASES = [
    (2, 4, 2, 1, [300, 130], 64, False, 64, {}),
    (3, 8, 2, 2, [200, 0, 33], 32, True, 32, {"SPLITS": 3}),
    (1, 6, 1, 3, [97], 64, True, 16, {"SPLITS": 2}),
    (3, 8, 2, 1, [300, 0, 130], 32, False, 32, {"BLOCKS": 7}),  # 6 items: 3 splits
    (4, 12, 1, 2, [77, 1, 0, 200], 32, True, 32, {"SPLITS": 3, "BLOCKS": 5}),  # 8 items: 2 splits
]
# flash_bwd: (B, H, HK, S, SK, D, CAUSAL, constants)
BWD_CASES = [
    (1, 2, 1, 70, 100, 32, False, {"BN": 32, "BKV": 64, "BQ": 32}),
    (1, 4, 2, 100, 70, 32, True, {"BN": 32}),                 # S > SK: rows that see no key
    (2, 2, 2, 64, 64, 64, True, {}),
    (1, 3, 3, 33, 150, 16, True, {"BKV": 32, "BQ": 16, "KV_THREADS": 128}),
]
# flash_fwd_varlen: (H, HK, D, query lengths, key lengths, CAUSAL, constants): empty sequences,
# more keys than queries and fewer, a sequence shorter than a tile beside a longer one
VARLEN_CASES = [
    (2, 1, 64, [70, 0, 130, 5], [100, 20, 60, 5], False, {"BM": 64, "BN": 32, "THREADS": 128}),
    (4, 2, 32, [33, 64, 1], [33, 80, 0], True, {"BM": 64, "BN": 64, "THREADS": 128}),
]
# flash_fwd_sparse: (B, H, HK, S, SK, D, CAUSAL, WINDOW, density or None for the sliding window's
# blocks); BM = 64, BN = 32: random block masks with an empty row, and a causal sliding window
SPARSE_CASES = [
    (1, 2, 1, 130, 200, 32, False, 0, 0.5),
    (1, 2, 2, 100, 150, 32, True, 0, 0.6),
    (2, 2, 1, 200, 200, 32, True, 40, None),
    (1, 2, 2, 90, 90, 32, False, 50, None),
]
# mla_decode: (B, SQ, H, DK, DV, lengths, PAGE, CAUSAL, constants): lengths not a multiple of the
# page, a sequence of one token (SQ = 2: its first new token sees no key), an empty one, H not a
# multiple of BM, splits past a short sequence's keys, and DeepSeek's sizes (576 = 512 + 64, 128
# heads; sm_80's shared memory, which the interpreter's schedule takes, holds one stage there)
MLA_CASES = [
    (2, 1, 8, 96, 64, [100, 37], 16, True, {"SPLITS": 2}),
    (3, 2, 8, 96, 64, [100, 1, 64], 16, True, {"SPLITS": 3}),
    (2, 2, 20, 96, 64, [50, 0], 32, False, {}),
    (1, 2, 128, 576, 512, [130], 64, True, {"SPLITS": 2, "STAGES": 1}),
]
BWD_TOL = {"f16": 4e-3, "bf16": 3e-2}  # the largest error over the largest gradient
TOL = {"f16": (2e-3, 1e-5), "bf16": (1.6e-2, 1e-5)}  # (O: absolute, LSE: absolute), values of size ~1
PASSED: dict = {}


@pytest.fixture(scope="module")
def mod():
    return tlc.load(ATTENTION_PATH, target="cpu")


def test_every_kernel_has_a_doc_comment():
    assert defs_without_a_doc_comment(ATTENTION_PATH) == []


def check(run, dtype, B, H, HK, S, SK, D, causal, seed):
    from tlc.dtypes import lookup

    q, k, v, scale = attention_inputs(np.random.default_rng(seed), lookup(dtype).numpy(), B, H, HK, S, SK, D)
    o = np.full(q.shape, np.nan, q.dtype)
    lse = np.full((B, H, S), np.nan, np.float32)
    run(q, k, v, o, lse, scale)
    want_o, want_lse = attention_reference(q, k, v, scale, causal)
    o_tol, lse_tol = TOL[dtype]
    assert np.abs(o.astype(np.float64) - want_o).max() < o_tol
    seen = np.isfinite(want_lse)
    assert np.abs(lse[seen] - want_lse[seen]).max() < lse_tol
    assert (lse[~seen] == -np.inf).all() and (o[~np.broadcast_to(seen[..., None], o.shape)] == 0).all()


@pytest.mark.parametrize("dtype", ["f16", "bf16"])
@pytest.mark.parametrize("case", range(len(CASES)))
def test_flash_fwd_against_numpy(mod, dtype, case):
    B, H, HK, S, SK, D, causal, consts = CASES[case]
    check(lambda *a: mod.flash_fwd(*a, T=dtype, CAUSAL=causal, **consts), dtype, B, H, HK, S, SK, D, causal, case)
    PASSED.setdefault("flash_fwd", {}).setdefault(dtype, set()).add(case)


@pytest.mark.parametrize("dtype", ["f16", "bf16"])
@pytest.mark.parametrize("case", range(len(DECODE_CASES)))
def test_flash_decode_against_numpy(mod, dtype, case):
    B, H, HK, SQ, SK, D, causal, consts = DECODE_CASES[case]
    check(lambda *a: mod.flash_decode(*a, T=dtype, CAUSAL=causal, **consts), dtype, B, H, HK, SQ, SK, D, causal,
          100 + case)
    PASSED.setdefault("flash_decode", {}).setdefault(dtype, set()).add(case)


@pytest.mark.parametrize("dtype", ["f16", "bf16"])
@pytest.mark.parametrize("case", range(len(PAGED_CASES)))
def test_flash_decode_paged_against_numpy(mod, dtype, case):
    check_paged(lambda *a, **c: mod.flash_decode_paged(*a, **c), dtype, *PAGED_CASES[case], seed=200 + case)
    PASSED.setdefault("flash_decode_paged", {}).setdefault(dtype, set()).add(case)


def check_paged(run, dtype, B, H, HK, SQ, lengths, D, causal, page, consts, seed):
    """Each sequence of a paged cache against the reference over its own keys."""
    from tlc.dtypes import lookup

    rng = np.random.default_rng(seed)
    q, k, v, scale = attention_inputs(rng, lookup(dtype).numpy(), B, H, HK, SQ, max(lengths), D)
    kp, vp, table = paged_cache(rng, k, v, lengths, page)
    o = np.full(q.shape, np.nan, q.dtype)
    lse = np.full((B, H, SQ), np.nan, np.float32)
    run(q, kp, vp, table, np.array(lengths, np.int32), o, lse, scale, T=dtype, CAUSAL=causal, **consts)
    o_tol, lse_tol = TOL[dtype]
    for b, n in enumerate(lengths):
        want_o, want_lse = attention_reference(q[b:b + 1], k[b:b + 1, :, :n], v[b:b + 1, :, :n], scale, causal)
        seen = np.isfinite(want_lse)
        assert np.abs(o[b:b + 1].astype(np.float64) - want_o).max() < o_tol, b
        assert np.abs(lse[b:b + 1][seen] - want_lse[seen]).max(initial=0) < lse_tol, b
        assert (lse[b:b + 1][~seen] == -np.inf).all()


@pytest.mark.parametrize("causal", [False, True])
def test_flash_decode_paged_reads_pages_the_sequences_share(mod, causal):
    """The table may point sequences at the same pages (a shared prefix, as vLLM's prefix cache
    does): sequences 1 and 2 read sequence 0's first two pages in place of their own (poisoned
    with NaN, so a read of one shows), sequence 2's whole cache that prefix."""
    rng = np.random.default_rng(41)
    lengths, page, shared = [150, 200, 64], 32, 2
    q, k, v, scale = attention_inputs(rng, np.float16, 3, 4, 2, 2, max(lengths), 32)
    k[1:, :, :shared * page], v[1:, :, :shared * page] = k[0, :, :shared * page], v[0, :, :shared * page]
    kp, vp, table = paged_cache(rng, k, v, lengths, page)
    for b in (1, 2):
        kp[table[b, :shared]], vp[table[b, :shared]] = np.nan, np.nan
        table[b, :shared] = table[0, :shared]
    o = np.full(q.shape, np.nan, q.dtype)
    lse = np.full((3, 4, 2), np.nan, np.float32)
    mod.flash_decode_paged(q, kp, vp, table, np.array(lengths, np.int32), o, lse, scale, CAUSAL=causal, SPLITS=2)
    for b, n in enumerate(lengths):
        want_o, want_lse = attention_reference(q[b:b + 1], k[b:b + 1, :, :n], v[b:b + 1, :, :n], scale, causal)
        assert np.abs(o[b:b + 1].astype(np.float64) - want_o).max() < TOL["f16"][0], b
        assert np.abs(lse[b:b + 1] - want_lse).max() < TOL["f16"][1], b


def test_mla_decode_reads_pages_the_sequences_share(mod):
    """mla_decode's table likewise: sequence 1's first page is sequence 0's (its own poisoned)."""
    rng = np.random.default_rng(43)
    lengths, page = [100, 70], 32
    q, cache, table, lens, keys = mla_inputs(rng, np.float16, 2, 2, 8, 96, lengths, page)
    keys[1, :page] = keys[0, :page]
    cache[table[1, 0]] = np.nan
    table[1, 0] = table[0, 0]
    o = np.full((2, 2, 8, 64), np.nan, q.dtype)
    lse = np.full((2, 8, 2), np.nan, np.float32)
    scale = 1.0 / np.sqrt(96)
    mod.mla_decode(q, cache, table, lens, o, lse, scale, T="f16", SPLITS=2)
    want_o, want_lse = mla_reference(q, keys, lens, 64, scale, True)
    assert np.abs(o.astype(np.float64) - want_o).max() < TOL["f16"][0]
    assert np.abs(lse - want_lse).max() < TOL["f16"][1]


@pytest.mark.parametrize("dtype", ["f16", "bf16"])
@pytest.mark.parametrize("case", range(len(MLA_CASES)))
def test_mla_decode_against_numpy(mod, dtype, case):
    check_mla(lambda *a, **c: mod.mla_decode(*a, **c), dtype, *MLA_CASES[case], seed=600 + case)
    PASSED.setdefault("mla_decode", {}).setdefault(dtype, set()).add(case)


def check_mla(run, dtype, B, SQ, H, DK, DV, lengths, page, causal, consts, seed):
    """mla_decode over a shuffled paged cache (NaN in the pages no sequence owns) against the
    f64 reference of each token over its sequence's keys; every output element written."""
    from tlc.dtypes import lookup

    rng = np.random.default_rng(seed)
    q, cache, table, lens, keys = mla_inputs(rng, lookup(dtype).numpy(), B, SQ, H, DK, lengths, page)
    scale = 1.0 / np.sqrt(DK)
    o = np.full((B, SQ, H, DV), np.nan, q.dtype)
    lse = np.full((B, H, SQ), np.nan, np.float32)
    run(q, cache, table, lens, o, lse, scale, T=dtype, CAUSAL=causal, **consts)
    want_o, want_lse = mla_reference(q, keys, lens, DV, scale, causal)
    o_tol, lse_tol = TOL[dtype]
    seen = np.isfinite(want_lse)
    assert np.abs(o.astype(np.float64) - want_o).max() < o_tol
    assert np.abs(lse[seen] - want_lse[seen]).max(initial=0) < lse_tol
    assert (lse[~seen] == -np.inf).all() and (o.transpose(0, 2, 1, 3)[~seen] == 0).all()


@pytest.mark.parametrize("dtype", ["f16", "bf16"])
@pytest.mark.parametrize("case", range(len(BWD_CASES)))
def test_flash_bwd_against_numpy(mod, dtype, case):
    check_bwd(lambda *a, **c: mod.flash_fwd(*a, **c), lambda *a, **c: mod.flash_bwd(*a, **c), dtype,
              *BWD_CASES[case], seed=300 + case)
    PASSED.setdefault("flash_bwd", {}).setdefault(dtype, set()).add(case)


def check_bwd(fwd, bwd, dtype, B, H, HK, S, SK, D, causal, consts, seed):
    """flash_fwd's O and LSE, then flash_bwd's gradients against attention_grads."""
    from tlc.dtypes import lookup

    rng = np.random.default_rng(seed)
    q, k, v, scale = attention_inputs(rng, lookup(dtype).numpy(), B, H, HK, S, SK, D)
    do = rng.standard_normal(q.shape).astype(q.dtype)
    o = np.zeros_like(q)
    lse = np.zeros((B, H, S), np.float32)
    fwd(q, k, v, o, lse, scale, T=dtype, CAUSAL=causal)
    grads = [np.full(x.shape, np.nan, x.dtype) for x in (q, k, v)]
    bwd(q, k, v, o, do, lse, *grads, scale, T=dtype, CAUSAL=causal, **consts)
    for name, got, want in zip(("dQ", "dK", "dV"), grads, attention_grads(q, k, v, do, scale, causal)):
        err = np.abs(got.astype(np.float64) - want).max() / np.abs(want).max()
        assert err < BWD_TOL[dtype], (name, err)


@pytest.mark.parametrize("dtype", ["f16", "bf16"])
@pytest.mark.parametrize("case", range(len(VARLEN_CASES)))
def test_flash_fwd_varlen_against_numpy(mod, dtype, case):
    check_varlen(lambda *a, **c: mod.flash_fwd_varlen(*a, **c), dtype, *VARLEN_CASES[case], seed=400 + case)
    PASSED.setdefault("flash_fwd_varlen", {}).setdefault(dtype, set()).add(case)


def check_varlen(run, dtype, H, HK, D, lengths_q, lengths_k, causal, consts, seed):
    """Packed sequences against the reference of each; rows of an empty sequence none, and
    every row written."""
    from tlc.dtypes import lookup

    rng = np.random.default_rng(seed)
    dt = lookup(dtype).numpy()
    cu_q = np.concatenate([[0], np.cumsum(lengths_q)]).astype(np.int32)
    cu_k = np.concatenate([[0], np.cumsum(lengths_k)]).astype(np.int32)
    q = rng.standard_normal((cu_q[-1], H, D)).astype(dt)
    k, v = (rng.standard_normal((cu_k[-1], HK, D)).astype(dt) for _ in range(2))
    scale = 1.0 / np.sqrt(D)
    o = np.full(q.shape, np.nan, dt)
    lse = np.full((H, cu_q[-1]), np.nan, np.float32)
    run(q, k, v, cu_q, cu_k, o, lse, scale, int(max(lengths_q)), T=dtype, CAUSAL=causal, **consts)
    assert not np.isnan(o.astype(np.float32)).any() and not np.isnan(lse).any()
    o_tol, lse_tol = TOL[dtype]
    for b in range(len(lengths_q)):
        rows, keys = slice(cu_q[b], cu_q[b + 1]), slice(cu_k[b], cu_k[b + 1])
        if lengths_q[b] == 0:
            continue
        want_o, want_lse = attention_reference(*(x[None].transpose(0, 2, 1, 3) for x in (q[rows], k[keys], v[keys])),
                                               scale, causal)
        got_o, got_lse = o[rows][None].transpose(0, 2, 1, 3), lse[:, rows][None]
        seen = np.isfinite(want_lse)
        assert np.abs(got_o.astype(np.float64) - want_o).max() < o_tol, b
        assert np.abs(got_lse[seen] - want_lse[seen]).max(initial=0) < lse_tol, b
        assert (got_lse[~seen] == -np.inf).all(), b


@pytest.mark.parametrize("dtype", ["f16", "bf16"])
@pytest.mark.parametrize("case", range(len(SPARSE_CASES)))
def test_flash_fwd_sparse_against_numpy(mod, dtype, case):
    check_sparse(mod, dtype, *SPARSE_CASES[case], seed=500 + case)
    for name in ("flash_fwd_sparse", "block_mask_to_index", "sliding_window_mask"):
        if name != "sliding_window_mask" or SPARSE_CASES[case][8] is None:
            PASSED.setdefault(name, {}).setdefault(dtype, set()).add(case)


def check_sparse(mod, dtype, B, H, HK, S, SK, D, causal, window, density, seed, BM=64, BN=32, THREADS=128):
    """The block lists (from a random mask, or the sliding window's), flash_fwd_sparse over them
    against the reference under the same mask at the token level; and the lists themselves."""
    from tlc.dtypes import lookup

    rng = np.random.default_rng(seed)
    q, k, v, scale = attention_inputs(rng, lookup(dtype).numpy(), B, H, HK, S, SK, D)
    nqb, nkb = -(-S // BM), -(-SK // BN)
    past = SK - S
    if density is None:
        mask = np.zeros((B, H, nqb, nkb), np.uint8)
        mod.sliding_window_mask(mask, S, SK, window, CAUSAL=causal, BM=BM, BN=BN)
    else:
        mask = (rng.random((B, H, nqb, nkb)) < density).astype(np.uint8)
        mask[0, 0, 0] = 0  # a query block that sees no key block
    index = np.full((B, H, nqb, nkb), -1, np.int32)
    count = np.full((B, H, nqb), -1, np.int32)
    mod.block_mask_to_index(mask, index, count)
    assert (count == mask.sum(-1)).all()
    assert all((index[b, h, i, :count[b, h, i]] == np.flatnonzero(mask[b, h, i])).all()
               for b in range(B) for h in range(H) for i in range(nqb))
    o = np.full(q.shape, np.nan, q.dtype)
    lse = np.full((B, H, S), np.nan, np.float32)
    mod.flash_fwd_sparse(q, k, v, o, lse, index, count, scale, T=dtype, CAUSAL=causal, WINDOW=window, BM=BM, BN=BN,
                         THREADS=THREADS)
    tokens = np.repeat(np.repeat(mask.astype(bool), BM, axis=2), BN, axis=3)[:, :, :S, :SK]
    i, j = np.arange(S)[:, None] + past, np.arange(SK)[None, :]
    if window:
        tokens &= (j > i - window) & ((j < i + window) | causal)
        if density is None:  # the blocks the window touches are all it needs
            assert not (((j > i - window) & ((j <= i) | (~causal & (j < i + window)))) & ~tokens[0, 0]).any()
    o_tol, lse_tol = TOL[dtype]
    G = H // HK
    for b in range(B):
        for h in range(H):
            want_o, want_lse = attention_reference(q[b:b + 1, h:h + 1], k[b:b + 1, h // G:h // G + 1],
                                                   v[b:b + 1, h // G:h // G + 1], scale, causal, mask=tokens[b, h])
            seen = np.isfinite(want_lse)
            assert np.abs(o[b:b + 1, h:h + 1].astype(np.float64) - want_o).max() < o_tol, (b, h)
            assert np.abs(lse[b:b + 1, h:h + 1][seen] - want_lse[seen]).max(initial=0) < lse_tol, (b, h)
            assert (lse[b:b + 1, h:h + 1][~seen] == -np.inf).all(), (b, h)


@pytest.mark.parametrize("case", [0, 1, 4])  # D = 64: 128-byte rows, as the TMA copies them
def test_the_sm90a_ring_against_numpy(mod, case, monkeypatch):
    """The sm_90a schedule: K and V through a TMA ring filled by a producer warpgroup, the Q
    copy before it made by the consumers alone; the interpreter runs the ring as recorded.
    (One tile a block: schedule/warpspec.py GRID_TILE_LOADS off; the persistent form below.)"""
    from tlc.schedule import warpspec
    monkeypatch.setattr(warpspec, "GRID_TILE_LOADS", False)
    B, H, HK, S, SK, D, causal, consts = CASES[case]
    kernel = mod.kernels["flash_fwd"].scheduled({**consts, "D": D, "CAUSAL": causal}, "sm_90a")
    ws = kernel.warp_spec
    assert ws is not None and len(ws.loads) == 2 and ws.tile_order is None
    assert [type(kernel.body[i]).__name__ for i in ws.consumer_only] == ["Assert", "Copy"]

    def run(q, k, v, o, lse, scale):
        run_kernel(kernel, {"Q": q, "K": k, "V": v, "O": o, "LSE": lse, "scale": np.float32(scale)})
    check(run, "f16", B, H, HK, S, SK, D, causal, case)


@pytest.mark.parametrize("case", [0, 1, 4])
def test_the_sm90a_two_stage_ring_against_numpy(mod, case):
    """Two stages: P @ V deferred, V on barriers of its own (WarpSpecialization.late_loads); the
    interpreter runs the ring as recorded."""
    B, H, HK, S, SK, D, causal, consts = CASES[case]
    kernel = mod.kernels["flash_fwd"].scheduled({**consts, "D": D, "CAUSAL": causal, "STAGES": 2}, "sm_90a")
    ws = kernel.warp_spec
    assert ws.stages == 2 and ws.deferred is not None and [ws.loads[j].buffer for j in ws.late_loads] == ["v_tile"]

    def run(q, k, v, o, lse, scale):
        run_kernel(kernel, {"Q": q, "K": k, "V": v, "O": o, "LSE": lse, "scale": np.float32(scale)})
    check(run, "f16", B, H, HK, S, SK, D, causal, case)


@pytest.mark.parametrize("case", [0, 1, 4])
def test_the_sm90a_ring_of_a_persistent_walk_against_numpy(mod, case, monkeypatch):
    """flash_fwd as the grid of an author's persistent walk reaches warp specialization
    (Kernel.persistent_walk): persistent, the producer copying each tile's Q once a tile (causal:
    the tiles in pairs from both ends of bx); the interpreter walks the tiles as recorded."""
    import dataclasses

    from tlc import targets
    from tlc.schedule.warpspec import specialize_warps
    from tlc.schedule import warpspec
    monkeypatch.setattr(warpspec, "DYNAMIC_TILES", False)  # pairs (the dynamic order: tests/schedule/test_dynamic_tiles.py)
    B, H, HK, S, SK, D, causal, consts = CASES[case]
    kernel = mod.kernels["flash_fwd"].scheduled({**consts, "D": D, "CAUSAL": causal}, "sm_90a")
    kernel = specialize_warps(dataclasses.replace(kernel, warp_spec=None, persistent_walk=True), targets.get("sm_90a"))
    ws = kernel.warp_spec
    assert ws.tile_order.pairs == causal and [x.buffer for x in ws.tile_loads] == ["q_tile"]

    def run(q, k, v, o, lse, scale):
        run_kernel(kernel, {"Q": q, "K": k, "V": v, "O": o, "LSE": lse, "scale": np.float32(scale)})
    check(run, "f16", B, H, HK, S, SK, D, causal, case)


@pytest.mark.parametrize("case", [0, 1, 4])
def test_the_sm90a_persistent_grid_constant_against_numpy(mod, case, monkeypatch):
    """flash_fwd's PERSISTENT constant (grid(persistent_tiles=True)), GRID_TILE_LOADS off: the
    grid walked by persistent blocks, each tile's Q the producer's (causal: the tiles longest
    first from the counter); the interpreter walks the tiles as recorded."""
    from tlc.schedule import warpspec
    monkeypatch.setattr(warpspec, "GRID_TILE_LOADS", False)
    B, H, HK, S, SK, D, causal, consts = CASES[case]
    kernel = mod.kernels["flash_fwd"].scheduled({**consts, "D": D, "CAUSAL": causal, "PERSISTENT": True}, "sm_90a")
    ws = kernel.warp_spec
    assert ws.tile_order is not None and [x.buffer for x in ws.tile_loads] == ["q_tile"]

    def run(q, k, v, o, lse, scale):
        run_kernel(kernel, {"Q": q, "K": k, "V": v, "O": o, "LSE": lse, "scale": np.float32(scale)})
    check(run, "f16", B, H, HK, S, SK, D, causal, case)


def test_a_scale_that_is_not_positive_fails_the_device_assert(mod):
    q, k, v, _ = attention_inputs(np.random.default_rng(0), np.float16, 1, 1, 1, 8, 8, 16)
    with pytest.raises(tlc.TlcError, match=r"flash_fwd: scale = -0\.250000, not positive"):
        mod.flash_fwd(q, k, v, np.zeros_like(q), np.zeros((1, 1, 8), np.float32), -0.25, **SMALL)



def gqa_arguments(H, HK, B=1, S=8, D=16):
    """Each GQA kernel's arguments (in parameter order, by name) for H query heads and HK
    key/value heads: zeros, 8 queries and keys, the paged cache in one page of 16."""
    z = lambda *shape, dt=np.float16: np.zeros(shape, dt)  # noqa: E731
    q, o, k, lse = z(B, H, S, D), z(B, H, S, D), z(B, HK, S, D), z(B, H, S, dt=np.float32)
    cu = np.array([0, S], np.int32)
    return {
        "flash_fwd": dict(Q=q, K=k, V=k, O=o, LSE=lse, scale=0.25),
        "flash_decode": dict(Q=q, K=k, V=k, O=o, LSE=lse, scale=0.25),
        "flash_decode_paged": dict(Q=q, K=z(1, 16, HK, D), V=z(1, 16, HK, D), pages=np.zeros((B, 1), np.int32),
                                   lengths=np.full(B, S, np.int32), O=o, LSE=lse, scale=0.25),
        "flash_bwd": dict(Q=q, K=k, V=k, O=o, dO=o, LSE=lse, dQ=q.copy(), dK=k.copy(), dV=k.copy(), scale=0.25),
        "flash_fwd_varlen": dict(Q=z(S, H, D), K=z(S, HK, D), V=z(S, HK, D), cu_seqlens_q=cu, cu_seqlens_k=cu,
                                 O=z(S, H, D), LSE=z(H, S, dt=np.float32), scale=0.25, max_seqlen_q=S),
        "flash_fwd_sparse": dict(Q=q, K=k, V=k, O=o, LSE=lse, block_index=np.zeros((B, H, 1, 1), np.int32),
                                 block_count=np.ones((B, H, 1), np.int32), scale=0.25),
    }


# H = 3 query heads over HK = 2 key/value heads (head 2 read no keys: its O was 0, silently):
# refused before the launch by the type of one output whose axis is HK * (H // HK) (or
# H - H % HK), the one whose index arithmetic that changes least (stdlib/attention.tl's comments)
HK_DOES_NOT_DIVIDE_H = {
    "flash_fwd": "'LSE' axis 1 has size 3 but the kernel expects HK * (H // HK) = 2 "
                 "(HK = 2 from 'K' (axis 1), H = 3 from 'Q' (axis 1))",
    "flash_decode": "'LSE' axis 1 has size 3 but the kernel expects H - H % HK = 2 "
                    "(H = 3 from 'Q' (axis 1), HK = 2 from 'K' (axis 1))",
    "flash_decode_paged": "'LSE' axis 1 has size 3 but the kernel expects H - H % HK = 2 "
                          "(H = 3 from 'Q' (axis 1), HK = 2 from 'K' (axis 2))",
    "flash_bwd": "'dQ' axis 1 has size 3 but the kernel expects HK * (H // HK) = 2 "
                 "(HK = 2 from 'K' (axis 1), H = 3 from 'Q' (axis 1))",
    "flash_fwd_varlen": "'LSE' axis 0 has size 3 but the kernel expects HK * (H // HK) = 2 "
                        "(HK = 2 from 'K' (axis 1), H = 3 from 'Q' (axis 1))",
    "flash_fwd_sparse": "'LSE' axis 1 has size 3 but the kernel expects HK * (H // HK) = 2 "
                        "(HK = 2 from 'K' (axis 1), H = 3 from 'Q' (axis 1))",
}


@pytest.mark.parametrize("target", ["interp", "cpu"])
@pytest.mark.parametrize("name", list(HK_DOES_NOT_DIVIDE_H))
def test_a_kernel_refuses_query_heads_that_hk_does_not_divide(target, name):
    """H = 3, HK = 2 fails at the call with the exact text, H = 2, HK = 3 (H // HK = 0) too, and
    H = 4, HK = 2 (GQA) runs."""
    from tlc.interp.args import ArgumentError

    kernel = getattr(tlc.load(ATTENTION_PATH, target=target), name)
    with pytest.raises(ArgumentError) as e:
        kernel(**gqa_arguments(3, 2)[name])
    assert str(e.value) == HK_DOES_NOT_DIVIDE_H[name]
    with pytest.raises(ArgumentError, match=r"has size 2 but the kernel expects .* = 0 \("):
        kernel(**gqa_arguments(2, 3)[name])
    kernel(**gqa_arguments(4, 2)[name])


@pytest.mark.parametrize("name", list(HK_DOES_NOT_DIVIDE_H))
def test_the_cuda_launcher_refuses_query_heads_that_hk_does_not_divide(name):
    """The CUDA launch's check, without a GPU: the binder of each grid of the kernel (its
    defaults, sm_90a, D = 16) refuses H = 3, HK = 2 with the interpreter's text."""
    from tlc.runtime.args import LaunchArgumentError

    for _, binder, given in grid_binders(name, gqa_arguments(3, 2)[name], B=1, H=3):
        with pytest.raises(LaunchArgumentError) as e:
            binder.bind(given, device=0)
        assert str(e.value) == HK_DOES_NOT_DIVIDE_H[name]


def grid_binders(name: str, args: dict, B: int, H: int):
    """Per grid of kernel `name` (its defaults, sm_90a, D = 16, HK = 2): its generated kernel,
    its CUDA binder and its arguments, `args` and the workspaces (delta, part_o, part_lse) of
    their sizes."""
    from tlc.codegen import generate
    from tlc.runtime.args import Binder

    sizes = {"B": B, "H": H, "HK": 2, "S": 8, "SQ": 8, "D": 16, "SPLITS": 4}
    kernel = getattr(tlc.load(ATTENTION_PATH, target="cpu"), name)
    for grid in kernel.scheduled_grids({"D": 16, "PAGE": 16} if name == "flash_decode_paged" else {"D": 16}, "sm_90a"):
        gen = generate(grid, "sm_90a")
        binder = Binder(grid, gen)
        given = {n: args[n] for n in binder.names if n in args}
        for i, n, *_ in binder.tensors:
            if n not in given:
                given[n] = np.zeros([sizes.get(str(d), d) for d in grid.params[i].shape], np.float32)
        yield gen, binder, given


@pytest.mark.parametrize("name", ["flash_decode", "flash_decode_paged"])
def test_an_empty_batch_launches_nothing(name):
    """B = 0: the split count NS divides by the items B * HK * ..., but the grids are empty (B is
    an extent of each), so nothing runs and nothing reads NS (runtime/grid.py's
    `empty_despite_division`), as an empty tensor launches nothing elsewhere; it stopped with
    the grid's division by zero.  The interpreter, the cpu target, and the CUDA launch's binder
    and grid of each of the kernel's grids (sm_90a, D = 16, no GPU)."""
    from tlc.runtime.grid import compile_grid, launches_blocks

    args = gqa_arguments(4, 2, B=0)[name]
    for target in ("interp", "cpu"):
        getattr(tlc.load(ATTENTION_PATH, target=target), name)(**args)
    for gen, binder, given in grid_binders(name, args, B=0, H=4):
        bound = binder.bind(given, device=0)
        assert not gen.persistent
        assert not launches_blocks(gen.name, compile_grid(gen.grid, binder.slots, kernel=gen.name)(bound.values))


BUILDS = [  # head dim, each kernel's constants (PAGE, the paged cache's page, is compiled in)
    (64, {"flash_fwd": "", "flash_bwd": "", "flash_decode": "", "flash_decode_paged": "PAGE=64", "flash_fwd_varlen": "",
          "flash_fwd_sparse": "", "block_mask_to_index": "", "sliding_window_mask": ""}),
    (128, {"flash_fwd": "", "flash_bwd": "", "flash_decode": "", "flash_decode_paged": "PAGE=128",
           "flash_fwd_varlen": ""}),
    (128, {"flash_fwd": "CAUSAL=True", "flash_bwd": "CAUSAL=True", "flash_decode": "CAUSAL=True",
           "flash_decode_paged": "CAUSAL=True PAGE=16", "flash_fwd_varlen": "CAUSAL=True",
           "flash_fwd_sparse": "CAUSAL=True WINDOW=256", "mla_decode": "SPLITS=4"}),
    (256, {"flash_fwd": "BN=64 STAGES=2", "flash_decode": "BN=64", "flash_decode_paged": "PAGE=64"}),
]
# sm_80's mma.sync holds more of a tile in registers than wgmma: the forward kernels at D = 128
# take BN = 64 there (at 128 they spill 72 bytes), the backward BN = 32 (at 64 its dQ grid spills 4)
SM80 = {"flash_fwd": "BN=64", "flash_fwd_varlen": "BN=64", "flash_fwd_sparse": "BN=64", "flash_bwd": "BN=32",
        "mla_decode": "STAGES=1"}  # (mla_decode: 224 KB of shared memory in two stages, sm_80 has 163)
MLA_SIZES = "DK=576 DV=512 PAGE=64"  # DeepSeek V3's latent cache, in FlashMLA's pages


def _builds():
    """One case a kernel, head dim and arch; the default run builds head dim 128 causal for
    sm_90a (the README's test command's time), mla_decode left to its SASS test below."""
    for (D, consts), label in zip(BUILDS, ["d64", "d128", "d128-causal", "d256"]):
        for name, given in consts.items():
            for arch in ("sm_90a", "sm_80"):
                # flash_decode and varlen: flash_decode_paged's and flash_fwd's loops, built here
                default = arch == "sm_90a" and label == "d128-causal" and name not in ("mla_decode", "flash_decode",
                                                                                      "flash_fwd_varlen")
                yield pytest.param(arch, D, name, given, marks=() if default else pytest.mark.slow,
                                   id=f"{label}-{name}-{arch}")


@pytest.mark.nvcc
@pytest.mark.parametrize("arch,D,name,given", list(_builds()))
def test_builds_with_nvcc_without_spills(arch, D, name, given, tmp_path):
    """Each kernel (flash_decode's split and combine grids) at each head dim, one kernel a file
    as the runtime compiles them (in one file of all three, ptxas gave the paged split kernel at
    PAGE=16 72 registers and a 4-byte spill; alone, 80 and none)."""
    import re
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "codegen"))
    from nvcc import compile_object
    from tlc.runner import build

    given = given if name in ("block_mask_to_index", "sliding_window_mask") else \
        f"{MLA_SIZES} {given}" if name == "mla_decode" else f"D={D} {given}"
    if arch == "sm_80" and D >= 128 and name in SM80:
        given = f"{given} {SM80[name]}"
    source, _ = build(ATTENTION_PATH, kernels=(name,), defines=tuple(given.split()), arch=arch)
    log = compile_object(source, arch, tmp_path, name)
    assert set(re.findall(r"(\d+) bytes spill stores", log)) == {"0"}, log


def test_registry():
    count = {"flash_fwd": len(CASES), "flash_bwd": len(BWD_CASES), "flash_decode": len(DECODE_CASES),
             "flash_decode_paged": len(PAGED_CASES), "flash_fwd_varlen": len(VARLEN_CASES),
             "flash_fwd_sparse": len(SPARSE_CASES), "block_mask_to_index": len(SPARSE_CASES),
             "mla_decode": len(MLA_CASES)}
    passed_count = {**count, "sliding_window_mask": sum(c[8] is None for c in SPARSE_CASES)}
    # the block-list helpers have no dtype parameter: their rows count under the mask's u8
    table = {k: {"u8"} if k in ("block_mask_to_index", "sliding_window_mask") else {"f16", "bf16"} for k in passed_count}
    seen = {k: ({"u8": set().union(*PASSED[k].values())} if k in PASSED and table[k] == {"u8"} else PASSED.get(k, {}))
            for k in table}
    passed = {k: {d for d, cases in seen[k].items() if len(cases) == passed_count[k]} for k in table}
    check_or_record("std.attention", table, {k: v for k, v in passed.items() if v == table[k]}, __file__)


def test_the_reference_page_is_generated_from_the_sources():
    assert_reference_page_is_current(ATTENTION_PATH)


@pytest.mark.nvcc
@pytest.mark.slow  # one more build of the whole backward (the README's test command's time): CI's slow run
def test_the_backward_runs_every_product_on_hgmma_without_local_memory(tmp_path):
    """sm_90a: the dQ grid's three products and the dK/dV grid's four all on wgmma (HGMMA; no
    mma.sync HMMA), and neither touches local memory."""
    import re
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "codegen"))
    from nvcc import cubin_sass
    from tlc.runner import build

    source, _ = build(ATTENTION_PATH, kernels=("flash_bwd",), defines=("D=128", "CAUSAL=True"), arch="sm_90a")
    sass, log = cubin_sass(source, "sm_90a", tmp_path, "bwd")
    grids = {m.group(1): body for m, body in zip(re.finditer(r"Function : (\w+)", sass),
                                                 re.split(r"Function : \w+", sass)[1:])}
    assert sorted(grids) == ["flash_bwd_grid0", "flash_bwd_grid1", "flash_bwd_grid2"]
    for name in ("flash_bwd_grid1", "flash_bwd_grid2"):
        assert "HGMMA" in grids[name] and "HMMA" not in grids[name].replace("HGMMA", ""), name
    assert not re.search(r"\b(LDL|STL)\b", sass) and " 0 bytes spill stores" in log


@pytest.mark.nvcc
def test_mla_decode_runs_on_hgmma_without_local_memory(tmp_path):
    """sm_90a, DeepSeek's sizes: the scores (64 heads x 64 keys, one warpgroup's m64n64:
    schedule/one_warpgroup.py) and the output (64 x 512, each warpgroup 256 columns) on wgmma, nothing on mma.sync, no
    local memory, and registers to spare for the 128 a thread the output takes (the consumers'
    232 after setmaxnreg; ptxas reports the 168 of __launch_bounds__(384))."""
    import re
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "codegen"))
    from nvcc import cubin_sass
    from tlc.runner import build

    source, _ = build(ATTENTION_PATH, kernels=("mla_decode",), defines=tuple(f"{MLA_SIZES} SPLITS=2".split()),
                      arch="sm_90a")
    sass, log = cubin_sass(source, "sm_90a", tmp_path, "mla")
    split = re.split(r"Function : (\w+)", sass)
    grids = dict(zip(split[1::2], split[2::2]))
    body = grids["mla_decode_grid0"]
    assert body.count("HGMMA.64x64x16.F32.BF16") == 36 and body.count("HGMMA.64x256x16.F32.BF16") == 4
    assert "HGMMA.64x32x16" not in body
    assert "HMMA" not in body.replace("HGMMA", "")
    assert not re.search(r"\b(LDL|STL)\b", sass) and " 0 bytes spill stores" in log
    registers = [int(r) for r in re.findall(r"Used (\d+) registers", log)]
    assert max(registers) <= 232, log
    # the page loop is a TMA ring (a producer warpgroup: UTMALDG, no cp.async) whose consumers
    # meet at their own named barriers, twice a page: before warpgroup 0 stores P (the last
    # page's reads of it and of the factors are done: warpgroup 1, which writes neither, only
    # arrives), and after it stored P and the rescale factors (the exchange's); the row max and
    # sum by shuffles in warpgroup 0, no scratch
    assert "ATOMS" not in body and "LDGSTS" not in body and "UTMALDG" in body
    assert len(re.findall(r"\bBAR\.SYNC\.DEFER_BLOCKING 0x5, 0x100", body)) == 1
    assert len(re.findall(r"\bBAR\.SYNC\.DEFER_BLOCKING 0x8, 0x100", body)) == 1
    assert len(re.findall(r"\bBAR\.ARV 0x8, 0x100", body)) == 1
    assert "tl::reduce_parts_to_scratch<" not in source and source.count("tl::exchange_f2s<tl_mla_decode_grid0_") == 2
    # the operands' descriptors made once a gemm, each step a constant added in uniform
    # registers: Q.K^T's HGMMAs a few instructions apart (13 when each was built from a pointer)
    addrs = [int(a, 16) for a, op in re.findall(r"/\*([0-9a-f]{4,})\*/\s+(\S+)", body) if op.startswith("HGMMA.64x64x16")]
    assert len(addrs) == 36 and max(b - a for a, b in zip(addrs, addrs[1:])) // 16 <= 16, addrs


@pytest.mark.nvcc
@pytest.mark.slow  # one more build of mla_decode (the README's test command's time): CI's slow run
def test_mla_decode_with_uniform_guards_tests_no_warp_for_divergence(tmp_path, monkeypatch):
    """codegen/sm80.py UNIFORM_GUARDS: warpgroup 0's guards on a warp index ptxas sees uniform
    leave the page loop without a divergence test (BRA.DIV) or a WARPSYNC ahead of the row
    maxima's shuffles, which `threadIdx.x < 128` costs (with the products, registers and
    barriers as the test above has them)."""
    import re
    import sys
    from pathlib import Path

    import tlc.codegen.sm80 as sm80
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "codegen"))
    from nvcc import cubin_sass
    from tlc.runner import build

    bodies = {}
    for uniform in (False, True):
        monkeypatch.setattr(sm80, "UNIFORM_GUARDS", uniform)
        source, _ = build(ATTENTION_PATH, kernels=("mla_decode",), defines=tuple(MLA_SIZES.split()), arch="sm_90a")
        assert ("tl_warp < 4" in source) == uniform
        sass, log = cubin_sass(source, "sm_90a", tmp_path, f"mla_{uniform}")
        split = re.split(r"Function : (\w+)", sass)
        bodies[uniform] = dict(zip(split[1::2], split[2::2]))["mla_decode_grid0"]
        assert " 0 bytes spill stores" in log and max(int(r) for r in re.findall(r"Used (\d+) registers", log)) <= 232
    # the page loop: from the scores' first HGMMA to P @ V's last
    loops = {u: b[b.index("HGMMA.64x64x16"):b.rindex("HGMMA.64x256x16")] for u, b in bodies.items()}
    assert "BRA.DIV" in loops[False]  # (what the guards cost: ptxas's test before the shuffles)
    assert "BRA.DIV" not in loops[True] and "WARPSYNC" not in loops[True]
    assert loops[True].count("HGMMA.64x64x16") == 36 and loops[True].count("SHFL.BFLY") >= 8


def test_config_gives_head_dim_256_a_ring_on_sm90a():
    """config.json: at D = 256 the .tl's 128 keys on three stages overran sm_90a's shared memory
    and fit.py shrank them to one stage (no ring); 80 keys on two stages fit, P @ V deferred
    with V on barriers of its own (FlashAttention 3's 128 x 80)."""
    from attention_kit import ATTENTION_PATH
    from tlc.config_table import choose, rules_for

    rules = rules_for(ATTENTION_PATH, "flash_fwd")
    assert choose(rules, "sm_90a", {"D": 256}, {"T": "f16"}) == {"BN": 80, "STAGES": 2}
    assert not choose(rules, "sm_90a", {"D": 128}, {"T": "f16"}) and not choose(rules, "sm_80", {"D": 256}, {"T": "f16"})
    fwd = tlc.load(str(ATTENTION_PATH), target="cpu").kernels["flash_fwd"]
    q = np.zeros((1, 2, 8, 256), np.float16)
    chosen = fwd.with_recorded({"Q": q, "K": q, "V": q}, {}, "sm_90a")  # a call's, from its arrays
    assert chosen == {"BN": 80, "STAGES": 2}
    ws = fwd.scheduled({**chosen, "D": 256}, "sm_90a").warp_spec
    assert ws.stages == 2 and ws.deferred is not None and ws.late_loads == (1,)
    assert fwd.scheduled({"D": 256}, "sm_90a").warp_spec is None  # the shrunk default: one stage


def test_config_gives_head_dim_64_three_consumer_warpgroups_on_sm90a():
    """config.json: at D = 64 FlashAttention 3's 192 query rows on three consumer warpgroups
    taking turns, 96 keys a step (session 28's H200: 0.936x cuDNN against 0.823x at the .tl's
    128 x 128; 128 keys spill, so not taken); other head dims and sm_80 keep their tiles."""
    from attention_kit import ATTENTION_PATH
    from tlc.config_table import choose, rules_for

    rules = rules_for(ATTENTION_PATH, "flash_fwd")
    three = {"BM": 192, "THREADS": 384, "BN": 96}
    assert choose(rules, "sm_90a", {"D": 64}, {"T": "f16"}) == three
    assert choose(rules, "sm_90a", {"D": 64}, {"T": "bf16"}) == three
    assert not any(choose(rules, "sm_90a", {"D": d}, {"T": "f16"}) for d in (32, 63, 65, 128))
    assert not choose(rules, "sm_80", {"D": 64}, {"T": "f16"})
    fwd = tlc.load(str(ATTENTION_PATH), target="cpu").kernels["flash_fwd"]
    q = np.zeros((1, 2, 8, 64), np.float16)
    chosen = fwd.with_recorded({"Q": q, "K": q, "V": q}, {}, "sm_90a")  # a call's, from its arrays
    assert chosen == three
    from tlc.ir.printer import print_kernel

    text = print_kernel(fwd.scheduled({**chosen, "D": 64}, "sm_90a"))
    assert "the 3 consumer warpgroups take turns to issue both gemms" in text
