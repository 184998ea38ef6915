"""NumPy references and inputs for std.attention's tests (CPU and GPU alike)."""
import math

import numpy as np

from tlc.package_data import stdlib

ATTENTION_PATH = str(stdlib() / "attention.tl")


def p_in_shared(source: str) -> str:
    """std.attention's text (or a part of it) with P, `probs`, staged in shared memory rather
    than held in registers: the deferred P @ V then reads a P the next iteration rewrites, and
    FlashAttention 3's 192 x 192 tile at head dim 64 fits (its P would not, in registers)."""
    old = "        probs = fragment(T[BM, BN])\n"
    assert old in source
    return source.replace(old, "        probs = shared(T[BM, BN])\n")


def causal_mask(S: int, SK: int) -> np.ndarray:
    """(S, SK) booleans, True where query i sees key j: j <= i + SK - S (bottom-right aligned)."""
    return np.arange(SK)[None, :] <= np.arange(S)[:, None] + (SK - S)


def attention_reference(q, k, v, scale, causal=False, mask=None):
    """(O, LSE) in f64 from f32 copies: O = softmax(q @ k.T * scale) @ v per (batch, head), key
    heads shared by H // HK query heads; a row that sees no key has O = 0 and LSE = -inf."""
    q, k, v = (np.asarray(x, dtype=np.float64) for x in (q, k, v))
    B, H, S, D = q.shape
    HK, SK = k.shape[1], k.shape[2]
    if SK == 0:  # an empty cache
        return np.zeros(q.shape), np.full((B, H, S), -np.inf)
    group = H // HK
    k = np.repeat(k, group, axis=1)
    v = np.repeat(v, group, axis=1)
    s = np.einsum("bhid,bhjd->bhij", q, k) * scale
    seen = np.ones((S, SK), bool) if mask is None else mask
    if causal:
        seen = seen & causal_mask(S, SK)
    s = np.where(seen, s, -np.inf)
    m = s.max(axis=-1, keepdims=True)
    m_safe = np.where(np.isfinite(m), m, 0.0)
    p = np.exp(s - m_safe)
    total = p.sum(axis=-1, keepdims=True)
    o = np.einsum("bhij,bhjd->bhid", p, v) / np.where(total > 0, total, 1.0)
    lse = np.where(total[..., 0] > 0, np.log(np.where(total[..., 0] > 0, total[..., 0], 1.0)) + m_safe[..., 0], -np.inf)
    return o, lse


def attention_inputs(rng, dtype, B, H, HK, S, SK, D):
    """Q, K, V in `dtype` (values of about unit size, so the softmax is neither flat nor one-hot)
    and the default scale 1 / sqrt(D)."""
    q = rng.standard_normal((B, H, S, D)).astype(dtype)
    k = rng.standard_normal((B, HK, SK, D)).astype(dtype)
    v = rng.standard_normal((B, HK, SK, D)).astype(dtype)
    return q, k, v, 1.0 / math.sqrt(D)


def paged_cache(rng, k, v, lengths, page: int, spare: int = 3):
    """K and V of (B, HK, SK, D) laid out as a paged cache (NP, PAGE, HK, D) with a page table
    (B, MP): each sequence's pages at shuffled places among `spare` unused ones (poisoned with
    NaN: a read of one shows), and only its first lengths[b] keys meaningful."""
    B, HK, SK, D = k.shape
    MP = -(-SK // page)
    NP = B * MP + spare
    order = rng.permutation(NP)
    table = order[:B * MP].reshape(B, MP).astype(np.int32)
    kp = np.full((NP, page, HK, D), np.nan, k.dtype)
    vp = np.full((NP, page, HK, D), np.nan, v.dtype)
    for b in range(B):
        for p in range(MP):
            keys = slice(p * page, min((p + 1) * page, SK))
            n = keys.stop - keys.start
            kp[table[b, p], :n] = k[b, :, keys].transpose(1, 0, 2)
            vp[table[b, p], :n] = v[b, :, keys].transpose(1, 0, 2)
            kp[table[b, p], n:] = 0  # past the cache's end: zeros, masked out by length
            vp[table[b, p], n:] = 0
    return kp, vp, table


def attention_grads(q, k, v, do, scale, causal=False):
    """(dQ, dK, dV) in f64 by the textbook formulas: P = softmax(Q K.T scale), dV = P.T dO,
    dP = dO V.T, dS = P (dP - rowsum(dO O)), dQ = dS K scale, dK = dS.T Q scale; GQA's dK and dV
    summed over each group's query heads."""
    q, k, v, do = (np.asarray(x, np.float64) for x in (q, k, v, do))
    B, H, S, D = q.shape
    HK, SK = k.shape[1], k.shape[2]
    G = H // HK
    kk, vv = np.repeat(k, G, 1), np.repeat(v, G, 1)
    s = np.einsum("bhid,bhjd->bhij", q, kk) * scale
    seen = causal_mask(S, SK) if causal else np.ones((S, SK), bool)
    s = np.where(seen, s, -np.inf)
    m = s.max(-1, keepdims=True)
    m = np.where(np.isfinite(m), m, 0)
    p = np.exp(s - m)
    total = p.sum(-1, keepdims=True)
    p = p / np.where(total > 0, total, 1)
    o = p @ vv
    dv = np.einsum("bhij,bhid->bhjd", p, do)
    dp = np.einsum("bhid,bhjd->bhij", do, vv)
    ds = p * (dp - (do * o).sum(-1, keepdims=True))
    dq = np.einsum("bhij,bhjd->bhid", ds, kk) * scale
    dk = np.einsum("bhij,bhid->bhjd", ds, q) * scale
    return dq, dk.reshape(B, HK, G, SK, D).sum(2), dv.reshape(B, HK, G, SK, D).sum(2)


def bwd_grid_errors(grids, B, H, HK, S, SK, D, causal, seed, workspaces=("delta", "lse_log2")) -> dict:
    """flash_bwd's scheduled grids (`grids`, one kernel each) run on the interpreter in order, O
    and LSE from std.attention's flash_fwd there, f16 inputs from `seed`: each of dQ, dK and dV's
    largest error against attention_grads, relative to its largest value.  `workspaces`: the
    program's global allocations (f32 [B, H, S] each)."""
    import tlc
    from tlc.interp import run_kernel

    rng = np.random.default_rng(seed)
    q, k, v, scale = attention_inputs(rng, np.float16, B, H, HK, S, SK, D)
    do = rng.standard_normal(q.shape).astype(np.float16)
    o, lse = np.zeros_like(q), np.zeros((B, H, S), np.float32)
    tlc.load(ATTENTION_PATH, target="cpu").flash_fwd(q, k, v, o, lse, scale, CAUSAL=causal)
    grads = [np.full(x.shape, np.nan, x.dtype) for x in (q, k, v)]
    args = {"Q": q, "K": k, "V": v, "O": o, "dO": do, "LSE": lse, "dQ": grads[0], "dK": grads[1], "dV": grads[2],
            "scale": np.float32(scale), **{w: np.zeros((B, H, S), np.float32) for w in workspaces}}
    for kernel in grids:
        run_kernel(kernel, args)
    return {name: np.abs(got.astype(np.float64) - want).max() / np.abs(want).max()
            for name, got, want in zip(("dQ", "dK", "dV"), grads, attention_grads(q, k, v, do, scale, causal))}


def mla_inputs(rng, dtype, B, SQ, H, DK, lengths, page: int, spare: int = 3):
    """MLA decode's inputs as FlashMLA takes them: Q (B, SQ, H, DK) and a paged latent cache
    (NP, PAGE, DK), its pages for each sequence at shuffled places among `spare` unused ones
    poisoned with NaN (a read of one shows), the page table (B, MP) and the lengths; also each
    sequence's keys in order (B, max length, DK), for the reference."""
    MP = max(1, -(-max(lengths) // page))
    NP = B * MP + spare
    q = rng.standard_normal((B, SQ, H, DK)).astype(dtype)
    keys = rng.standard_normal((B, MP * page, DK)).astype(dtype)
    table = rng.permutation(NP)[:B * MP].reshape(B, MP).astype(np.int32)
    cache = np.full((NP, page, DK), np.nan, dtype)
    for b in range(B):
        keys[b, lengths[b]:] = 0  # past the sequence's end: zeros, masked out by its length
        cache[table[b]] = keys[b].reshape(MP, page, DK)
    return q, cache, table, np.array(lengths, np.int32), keys


def mla_reference(q, keys, lengths, DV: int, scale: float, causal: bool = True):
    """(O (B, SQ, H, DV), LSE (B, H, SQ)) in f64: query token s of sequence b attends to its
    first lengths[b] keys (K = the whole latent-and-rotary row, V = its first DV columns), with
    CAUSAL the last SQ of them as the new tokens (token s sees lengths[b] - SQ + 1 + s keys, as
    FlashMLA); a row that sees no key has O = 0 and LSE = -inf."""
    q, keys = np.asarray(q, np.float64), np.asarray(keys, np.float64)
    B, SQ, H, DK = q.shape
    o = np.zeros((B, SQ, H, DV))
    lse = np.full((B, H, SQ), -np.inf)
    for b in range(B):
        for s in range(SQ):
            n = max(lengths[b] - SQ + 1 + s, 0) if causal else lengths[b]
            if n == 0:
                continue
            k = keys[b, :n]
            scores = q[b, s] @ k.T * scale  # (H, n)
            m = scores.max(-1, keepdims=True)
            p = np.exp(scores - m)
            o[b, s] = p @ k[:, :DV] / p.sum(-1, keepdims=True)
            lse[b, :, s] = np.log(p.sum(-1)) + m[:, 0]
    return o, lse
