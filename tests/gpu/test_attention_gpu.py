"""std.attention on the GPU: the interpreter's table (tests/stdlib/test_attention.py) with the
GPU's default tiles and the small ones, ragged shapes at every head dim the benchmark runs, and
against PyTorch's SDPA (math backend, f32) with torch tensors; compute-sanitizer memcheck and
racecheck at one ragged shape run in tests/gpu/test_sanitizer_gpu.py's table when present."""
import math
import pathlib
import sys

import numpy as np
import pytest

import tlc

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "stdlib"))  # the shared kit
from attention_kit import ATTENTION_PATH, attention_inputs, attention_reference, p_in_shared  # noqa: E402
from test_attention import (BWD_CASES, CASES, DECODE_CASES, MLA_CASES, PAGED_CASES, SPARSE_CASES, TOL,  # noqa: E402
                            VARLEN_CASES, check_bwd, check_mla, check_paged, check_sparse, check_varlen)

pytestmark = pytest.mark.gpu

# (B, H, HK, S, SK, D, CAUSAL, constants) at the default tiles: ragged S and SK, S > SK
DEFAULT_TILES = [
    (1, 2, 1, 70, 200, 64, False, {}), (1, 2, 2, 100, 70, 128, True, {}), (2, 4, 2, 300, 513, 128, True, {}),
    (1, 2, 2, 256, 256, 256, False, {"BN": 64, "STAGES": 2}), (1, 2, 2, 129, 1000, 128, False, {"STAGES": 2}),
    (2, 8, 1, 1000, 1000, 128, True, {}),
    # config.json's D = 64 rule (192 rows on three consumer warpgroups, 96 keys): causal and GQA
    (2, 4, 2, 300, 513, 64, True, {}), (1, 8, 2, 1000, 1000, 64, True, {}),
]


def run_cupy(dtype, B, H, HK, S, SK, D, causal, consts, seed, kernel="flash_fwd", module="std.attention"):
    import cupy as cp
    from tlc.dtypes import lookup

    mod = tlc.load(module, target="cuda")
    q, k, v, scale = attention_inputs(np.random.default_rng(seed), lookup(dtype).numpy(), B, H, HK, S, SK, D)
    o = cp.full(q.shape, cp.nan, q.dtype)
    lse = cp.full((B, H, S), cp.nan, cp.float32)
    getattr(mod, kernel)(cp.asarray(q), cp.asarray(k), cp.asarray(v), o, lse, scale, T=dtype, CAUSAL=causal, **consts)
    want_o, want_lse = attention_reference(q, k, v, scale, causal)
    o, lse = o.get(), lse.get()
    o_tol, lse_tol = TOL[dtype]
    seen = np.isfinite(want_lse)
    assert np.abs(o.astype(np.float64) - want_o).max() < o_tol
    assert np.abs(lse[seen] - want_lse[seen]).max() < lse_tol
    assert (lse[~seen] == -np.inf).all() and (o[~np.broadcast_to(seen[..., None], o.shape)] == 0).all()


@pytest.mark.parametrize("dtype", ["f16", "bf16"])
@pytest.mark.parametrize("case", range(len(CASES) + len(DEFAULT_TILES)))
def test_flash_fwd_against_numpy(dtype, case):
    table = CASES + DEFAULT_TILES
    run_cupy(dtype, *table[case], seed=case)


@pytest.mark.parametrize("stages", [2, 3])
def test_flash_fwd_with_p_staged_in_shared_memory_against_numpy(tmp_path, stages):
    # the deferred P @ V reads a shared P the next iteration rewrites (warpspec's wait before it)
    path = tmp_path / "shared_probs.tl"
    path.write_text(p_in_shared(pathlib.Path(ATTENTION_PATH).read_text()))
    run_cupy("f16", 2, 4, 2, 300, 1513, 128, False, {"STAGES": stages}, seed=stages, module=str(path))


# flash_decode at the benchmark's tiles: GQA groups of 4 and 8, a long cache, splits that hold no key
DECODE_DEFAULT_TILES = [(3, 32, 8, 1, 8192, 128, False, {}), (2, 16, 2, 1, 1000, 128, False, {"SPLITS": 16}),
                        (1, 8, 1, 4, 3000, 64, True, {}), (2, 4, 4, 1, 64, 256, False, {"BN": 64})]


@pytest.mark.parametrize("dtype", ["f16", "bf16"])
@pytest.mark.parametrize("case", range(len(DECODE_CASES) + len(DECODE_DEFAULT_TILES)))
def test_flash_decode_against_numpy(dtype, case):
    run_cupy(dtype, *(DECODE_CASES + DECODE_DEFAULT_TILES)[case], seed=case, kernel="flash_decode")


PAGED_DEFAULT_TILES = [(4, 32, 8, 1, [8192, 5000, 1, 4097], 128, False, 64, {}),
                       (2, 16, 16, 2, [1000, 64], 128, True, 128, {"SPLITS": 8})]


@pytest.mark.parametrize("dtype", ["f16", "bf16"])
@pytest.mark.parametrize("case", range(len(PAGED_CASES) + len(PAGED_DEFAULT_TILES)))
def test_flash_decode_paged_against_numpy(dtype, case):
    import cupy as cp

    mod = tlc.load("std.attention", target="cuda")

    def run(*args, **consts):
        dev = [cp.asarray(a) if isinstance(a, np.ndarray) else a for a in args]
        mod.flash_decode_paged(*dev, **consts)
        for host, d in zip(args, dev):
            if isinstance(host, np.ndarray):
                host[...] = d.get()
    check_paged(run, dtype, *(PAGED_CASES + PAGED_DEFAULT_TILES)[case], seed=case)


BWD_DEFAULT_TILES = [(1, 4, 2, 300, 513, 128, True, {}), (2, 8, 8, 1000, 1000, 128, False, {}),
                     (1, 2, 1, 129, 64, 64, True, {}),
                     # session 16's 48 queries a dK/dV step, GQA: the columns' TMA boxes ragged at both ends
                     (1, 6, 2, 260, 300, 128, True, {"BQ": 48, "KV_STAGES": 2}),
                     # config.json's D = 256 rule (BKV=64: the dK/dV grid on mma.sync), ragged, causal, GQA
                     (1, 4, 2, 300, 513, 256, True, {}), (2, 2, 2, 200, 130, 256, False, {})]


def on_device(kernel):
    """`kernel` called with NumPy arrays through CuPy, its outputs copied back into them."""
    import cupy as cp

    def run(*args, **consts):
        dev = [cp.asarray(a) if isinstance(a, np.ndarray) else a for a in args]
        kernel(*dev, **consts)
        for host, d in zip(args, dev):
            if isinstance(host, np.ndarray):
                host[...] = d.get()
    return run


@pytest.mark.parametrize("dtype", ["f16", "bf16"])
@pytest.mark.parametrize("case", range(len(BWD_CASES) + len(BWD_DEFAULT_TILES)))
def test_flash_bwd_against_numpy(dtype, case):
    mod = tlc.load("std.attention", target="cuda")
    check_bwd(on_device(mod.flash_fwd), on_device(mod.flash_bwd), dtype, *(BWD_CASES + BWD_DEFAULT_TILES)[case], seed=case)


VARLEN_DEFAULT_TILES = [(8, 2, 128, [1000, 0, 3000, 1, 129], [1000, 7, 2000, 300, 129], True, {}),
                        (4, 4, 64, [4096, 4096], [4096, 4096], False, {})]


@pytest.mark.parametrize("dtype", ["f16", "bf16"])
@pytest.mark.parametrize("case", range(len(VARLEN_CASES) + len(VARLEN_DEFAULT_TILES)))
def test_flash_fwd_varlen_against_numpy(dtype, case):
    mod = tlc.load("std.attention", target="cuda")
    check_varlen(on_device(mod.flash_fwd_varlen), dtype, *(VARLEN_CASES + VARLEN_DEFAULT_TILES)[case], seed=case)


class OnDevice:
    """std.attention's kernels called with NumPy arrays through CuPy (for the CPU tests' checks)."""

    def __init__(self):
        self.mod = tlc.load("std.attention", target="cuda")

    def __getattr__(self, name):
        return on_device(getattr(self.mod, name))


SPARSE_DEFAULT_TILES = [(1, 4, 2, 2000, 2000, 128, True, 256, None), (2, 2, 2, 1000, 1300, 64, False, 0, 0.3)]


@pytest.mark.parametrize("dtype", ["f16", "bf16"])
@pytest.mark.parametrize("case", range(len(SPARSE_CASES) + len(SPARSE_DEFAULT_TILES)))
def test_flash_fwd_sparse_against_numpy(dtype, case):
    tiles = {} if case >= len(SPARSE_CASES) else {"BM": 64, "BN": 32, "THREADS": 128}
    check_sparse(OnDevice(), dtype, *(SPARSE_CASES + SPARSE_DEFAULT_TILES)[case], seed=case,
                 **({"BM": 128, "BN": 128, "THREADS": 256} if not tiles else tiles))


# mla_decode at DeepSeek's sizes and the GPU's default tiles: a long sequence beside a one-token
# one, splits (some past a short sequence's keys), two new tokens
MLA_DEFAULT_TILES = [(3, 1, 128, 576, 512, [4097, 1, 700], 64, True, {}),
                     (2, 2, 128, 576, 512, [1000, 64], 64, True, {"SPLITS": 4}),
                     (2, 2, 128, 576, 512, [130, 3000], 64, False, {"SPLITS": 3})]


@pytest.mark.parametrize("dtype", ["f16", "bf16"])
@pytest.mark.parametrize("case", range(len(MLA_CASES) + len(MLA_DEFAULT_TILES)))
def test_mla_decode_against_numpy(dtype, case):
    mod = tlc.load("std.attention", target="cuda")
    *shape, consts = (MLA_CASES + MLA_DEFAULT_TILES)[case]
    consts = {k: v for k, v in consts.items() if k != "STAGES"}  # (the interpreter's, for sm_80's shared memory)
    check_mla(on_device(mod.mla_decode), dtype, *shape, consts, seed=case)


@pytest.mark.parametrize("splits", [1, 2])
def test_mla_decode_with_torch_tensors_against_f32_torch(splits):
    """FlashMLA's problem with torch tensors: 128 heads, two new tokens (causal), a cache of
    576-wide rows in shuffled pages of 64, against PyTorch in f32 (softmax(q K^T scale) V with
    V the rows' first 512 columns) and torch.logsumexp."""
    import torch

    mod = tlc.load("std.attention", target="cuda")
    g = torch.Generator(device="cuda").manual_seed(7)
    B, SQ, H, DK, DV, page, lengths = 3, 2, 128, 576, 512, 64, [777, 2, 4096]
    mp = -(-max(lengths) // page)
    cache = torch.randn(B * mp + 2, page, DK, device="cuda", dtype=torch.bfloat16, generator=g)
    table = torch.randperm(B * mp + 2, device="cuda", generator=g)[:B * mp].reshape(B, mp).to(torch.int32)
    q = torch.randn(B, SQ, H, DK, device="cuda", dtype=torch.bfloat16, generator=g)
    o = torch.empty(B, SQ, H, DV, device="cuda", dtype=torch.bfloat16)
    lse = torch.empty(B, H, SQ, device="cuda", dtype=torch.float32)
    scale = 1 / math.sqrt(DK)
    mod.mla_decode(q, cache, table, torch.tensor(lengths, dtype=torch.int32, device="cuda"), o, lse, scale,
                   SPLITS=splits)
    for b, n in enumerate(lengths):
        k = cache[table[b].long()].reshape(-1, DK)[:n].float()
        s = torch.einsum("shd,kd->shk", q[b].float(), k) * scale
        seen = torch.arange(n, device="cuda")[None, :] <= torch.arange(SQ, device="cuda")[:, None] + n - SQ
        s = s.masked_fill(~seen[:, None, :], float("-inf"))
        want = torch.softmax(s, dim=-1) @ k[:, :DV]
        assert (o[b].float() - want).abs().max().item() < 1.6e-2, b
        assert (lse[b] - torch.logsumexp(s, dim=-1).transpose(0, 1)).abs().max().item() < 1e-4, b


@pytest.mark.parametrize("causal", [False, True])
def test_flash_fwd_with_torch_tensors_against_sdpa(causal):
    import torch
    import torch.nn.functional as F

    mod = tlc.load("std.attention", target="cuda")
    g = torch.Generator(device="cuda").manual_seed(3)
    B, H, HK, S, D = 2, 8, 2, 777, 128
    q = torch.randn(B, H, S, D, device="cuda", dtype=torch.bfloat16, generator=g)
    k, v = (torch.randn(B, HK, S, D, device="cuda", dtype=torch.bfloat16, generator=g) for _ in range(2))
    o = torch.empty_like(q)
    lse = torch.empty(B, H, S, device="cuda", dtype=torch.float32)
    scale = 1 / math.sqrt(D)
    mod.flash_fwd(q, k, v, o, lse, scale, T="bf16", CAUSAL=causal)
    kk, vv = (x.float().repeat_interleave(H // HK, dim=1) for x in (k, v))
    want = F.scaled_dot_product_attention(q.float(), kk, vv, scale=scale, is_causal=causal)
    s = (q.float() @ kk.transpose(-1, -2)) * scale
    if causal:
        s = s.masked_fill(torch.ones(S, S, device="cuda", dtype=torch.bool).triu(1), float("-inf"))
    assert (o.float() - want).abs().max().item() < 1.6e-2
    assert (lse - torch.logsumexp(s, dim=-1)).abs().max().item() < 1e-4


# flash_fwd as an author's persistent walk (tests/schedule/test_persistent_grid.py's attention_walk):
# its tile grid made persistent, Q by the producer's TMA once a tile, O staged in K's last stage
# (D = 128) or beside the ring (D = 64); ragged S and SK, S > SK, GQA, more tiles than blocks
WALK_CASES = [(2, 4, 2, 300, 513, 128, False, {}), (2, 8, 2, 1000, 777, 128, True, {}),
              (1, 4, 4, 129, 70, 128, True, {}), (3, 16, 4, 700, 1000, 64, False, {}),
              (2, 8, 8, 2000, 300, 128, False, {"T": "bf16"})]


@pytest.mark.parametrize("case", range(len(WALK_CASES)))
def test_flash_fwd_as_a_persistent_walk_against_numpy(tmp_path, case):
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "schedule"))
    from test_persistent_grid import attention_walk

    B, H, HK, S, SK, D, causal, consts = WALK_CASES[case]
    consts = dict(consts)
    dtype = consts.pop("T", "f16")
    run_cupy(dtype, B, H, HK, S, SK, D, causal, consts, seed=40 + case, module=str(attention_walk(tmp_path)))


@pytest.mark.parametrize("name", ["flash_decode", "flash_decode_paged"])
def test_an_empty_batch_launches_nothing_on_the_gpu(name):
    """B = 0 (tests/stdlib/test_attention.py's test_an_empty_batch_launches_nothing): each call
    returns, the general path's and then the fast path's, and a call with B = 1 still runs."""
    import cupy as cp

    from test_attention import gqa_arguments

    kernel = getattr(tlc.load(ATTENTION_PATH, target="cuda"), name)
    for B in (0, 0, 1):
        args = {k: cp.asarray(v) if isinstance(v, np.ndarray) else v for k, v in gqa_arguments(4, 2, B=B)[name].items()}
        kernel(**args)
        cp.cuda.Device().synchronize()
        assert args["O"].shape[0] == B and not bool(cp.isnan(args["O"]).any())
