"""std.moe's table: each operator's inputs, NumPy reference and check, shared by the interpreter
test (test_moe.py), the GPU test (tests/gpu/test_moe_gpu.py) and the benchmark rows.

A row's `check(mod, rng, dtype, shape, consts)` makes its inputs at `shape` = (M tokens, E
experts, K picked, D the hidden size), runs the operator as a user would (outputs allocated
here, filled with values it must overwrite) and compares it with NumPy: ids, orders and counts
exactly, weights by op_tolerances (a few f32 units), gathered rows bit for bit."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from op_tolerances import NUMPY, assert_close
from tlc import package_data

MOE_PATH = str(package_data.stdlib().joinpath("moe.tl"))
FLOATS = ("f32", "f16", "bf16")


def logits(rng, M: int, E: int, dtype: str):
    """Router logits with ties (a few repeated values a row) and one row all equal."""
    x = rng.standard_normal((M, E), dtype=np.float32) * 2
    x[:, 1::7] = x[:, :1]  # equal to column 0: the lower expert goes first
    x[0, :] = 0.5
    return x.astype(NUMPY[dtype])


def topk_ref(x, K: int, score: Callable, renormalize: bool):
    """(weights, ids): the K largest logits of each row, equal ones in order of the expert."""
    ids = np.argsort(-x.astype(np.float64), axis=1, kind="stable")[:, :K]
    w = score(x.astype(np.float64))
    w = np.take_along_axis(w, ids, 1)
    if renormalize:
        w = w / w.sum(axis=1, keepdims=True)
    return w, ids.astype(np.int32)


def softmax(x):
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def sigmoid(x):
    return 1 / (1 + np.exp(-x))


def routed(rng, M: int, E: int, K: int, drop: bool = False):
    """ids[M, K]: K distinct experts a token, skewed (some experts get many pairs, some none);
    with `drop`, some ids are -1 or E (experts held elsewhere)."""
    p = rng.dirichlet(np.full(E, 0.3))
    ids = np.stack([rng.choice(E, K, replace=False, p=p) for _ in range(M)]).astype(np.int32)
    if drop:
        ids[rng.random(ids.shape) < 0.1] = -1
        ids[rng.random(ids.shape) < 0.05] = E
    return ids


def align_ref(ids, E: int, BLOCK: int):
    """moe_align_block_size's outputs for flat ids: (sorted_ids rows up to the total, block
    experts, positions, offsets)."""
    N = ids.size
    flat = ids.reshape(-1)
    rows, experts, positions, offsets = [], [], np.full(N, -1, np.int32), []
    for e in range(E):
        pairs = np.flatnonzero(flat == e)
        padded = -(-len(pairs) // BLOCK) * BLOCK
        offsets.append(len(rows))
        positions[pairs] = len(rows) + np.arange(len(pairs))
        rows += list(pairs) + [N] * (padded - len(pairs))
        experts += [e] * (padded // BLOCK)
    return np.array(rows, np.int32), np.array(experts, np.int32), positions, np.array(offsets + [len(rows)], np.int32)


def align_capacity(N: int, E: int, BLOCK: int) -> tuple[int, int]:
    """(P, NB): vLLM's sizes of sorted_ids and block_expert for N pairs."""
    P = N + E * (BLOCK - 1)
    return P, -(-P // BLOCK)


def check_topk(mod, name: str, score: Callable, rng, dtype, shape, consts):
    M, E, K, _ = shape
    x = logits(rng, M, E, dtype)
    for renormalize in (False, True):
        w = np.full((M, K), np.nan, np.float32)
        ids = np.full((M, K), -7, np.int32)
        getattr(mod, name)(x, ids, w, RENORMALIZE=renormalize, **consts)
        want_w, want_ids = topk_ref(x, K, score, renormalize)
        where = f" shape={shape} renormalize={renormalize} {consts}"
        np.testing.assert_array_equal(ids, want_ids, err_msg=f"{name} ids {dtype}{where}")
        assert_close(w, want_w, name, "f32", where)


def grouped_ref(x, bias, K: int, groups: int, kept_groups: int, scale: float, use_sigmoid: bool, renormalize: bool):
    """topk_grouped in float64: (weights, ids, the selection scores s + bias, the group scores)."""
    x = x.astype(np.float64)
    M, E = x.shape
    size = E // groups
    s = sigmoid(x) if use_sigmoid else softmax(x)
    sel = s + bias.astype(np.float64)[None, :]
    ranked = -np.sort(-sel.reshape(M, groups, size), axis=2)
    group_score = ranked[:, :, 0] + (ranked[:, :, 1] if size > 1 else 0)
    best_groups = np.argsort(-group_score, axis=1, kind="stable")[:, :kept_groups]
    kept = np.zeros((M, groups), bool)
    np.put_along_axis(kept, best_groups, True, 1)
    masked = np.where(np.repeat(kept, size, axis=1), sel, -np.inf)
    ids = np.argsort(-masked, axis=1, kind="stable")[:, :K]
    w = np.take_along_axis(s, ids, 1)
    if renormalize:
        w = w / w.sum(axis=1, keepdims=True)
    return w * scale, ids.astype(np.int32), sel, group_score


def spread_logits(rng, M: int, E: int, dtype: str):
    """Logits on a grid of 1/16 (exact in every float dtype) with repeated values (ties): the
    scores of any two differ by far more than f32's rounding, or are equal."""
    return (rng.integers(-48, 48, (M, E)) / 16).astype(NUMPY[dtype])


def check_grouped(mod, rng, dtype, shape, consts):
    """Exactly as NumPy where the bias is 0 (the logits' scores differ by far more than f32's
    rounding, or tie exactly); with a random bias, s + bias can come within f32's rounding of
    another expert's, so the kernel's choice is checked to be a best one within 1e-5: its groups
    score at least every other group, its experts at least every other kept expert, in order."""
    M, E, K, _ = shape
    groups = 8 if E % 8 == 0 and E >= 32 else 2 if E % 2 == 0 else 1
    kept_groups = 3 if groups == 8 else 1
    x = spread_logits(rng, M, E, dtype)
    for use_sigmoid, with_bias in ((True, False), (False, False), (True, True)):
        bias = (rng.standard_normal(E) * 0.1 if with_bias else np.zeros(E)).astype(np.float32)
        ids = np.full((M, K), -7, np.int32)
        w = np.full((M, K), np.nan, np.float32)
        mod.topk_grouped(x, bias, ids, w, groups, kept_groups, 2.5, SIGMOID=use_sigmoid, **consts)
        want_w, want_ids, sel, group_score = grouped_ref(x, bias, K, groups, kept_groups, 2.5, use_sigmoid, True)
        where = f" {dtype} shape={shape} sigmoid={use_sigmoid} bias={with_bias} {consts}"
        if not with_bias:
            np.testing.assert_array_equal(ids, want_ids, err_msg="topk_grouped ids" + where)
            assert_close(w, want_w, "topk_grouped", "f32", where)
            continue
        size = E // groups
        chosen_groups = ids // size
        for m in range(M):
            kept = set(chosen_groups[m])
            assert len(kept) <= kept_groups, f"topk_grouped: more than {kept_groups} groups{where}"
            others = [g for g in range(groups) if g not in kept]
            if others:
                assert group_score[m, list(kept)].min() >= group_score[m, others].max() - 1e-5, where
            picked = sel[m, ids[m]]
            assert (np.diff(picked) <= 1e-5).all(), "topk_grouped: not best first" + where
        want_w = np.take_along_axis(sigmoid(x.astype(np.float64)), ids.astype(np.int64), 1)
        assert_close(w, want_w / want_w.sum(1, keepdims=True) * 2.5, "topk_grouped", "f32", where)


def check_histogram(mod, rng, dtype, shape, consts):
    M, E, K, _ = shape
    ids = routed(rng, M, E, K, drop=True).astype(NUMPY[dtype])
    counts = np.zeros(E, np.int32)
    mod.expert_histogram(ids.reshape(-1), counts, **consts)
    flat = ids.reshape(-1)
    want = np.bincount(flat[(flat >= 0) & (flat < E)], minlength=E)
    np.testing.assert_array_equal(counts, want, err_msg=f"expert_histogram shape={shape} {consts}")


def check_align(mod, rng, dtype, shape, consts):
    M, E, K, _ = shape
    ids = routed(rng, M, E, K, drop=True).astype(NUMPY[dtype])
    BLOCK = consts.get("BLOCK", 64)
    P, NB = align_capacity(ids.size, E, BLOCK)
    sorted_ids = np.full(P, -7, np.int32)
    block_expert = np.full(NB, -7, np.int32)
    positions = np.full(ids.size, -7, np.int32)
    offsets = np.full(E + 1, -7, np.int32)
    mod.moe_align_block_size(ids.reshape(-1), sorted_ids, block_expert, positions, offsets, **consts)
    rows, experts, want_pos, want_offsets = align_ref(ids, E, BLOCK)
    total = want_offsets[-1]
    where = f" shape={shape} {consts}"
    np.testing.assert_array_equal(offsets, want_offsets, err_msg="offsets" + where)
    np.testing.assert_array_equal(sorted_ids[:total], rows, err_msg="sorted_ids" + where)
    assert (sorted_ids[total:] == ids.size).all(), "sorted_ids past the total" + where
    np.testing.assert_array_equal(block_expert[:len(experts)], experts, err_msg="block_expert" + where)
    assert (block_expert[len(experts):] == -1).all(), "block_expert past the total" + where
    np.testing.assert_array_equal(positions, want_pos, err_msg="positions" + where)


def check_permute(mod, rng, dtype, shape, consts):
    M, E, K, D = shape
    ids = routed(rng, M, E, K)
    rows = align_ref(ids, E, 16)[0]
    x = (rng.standard_normal((M, D)) * 2).astype(NUMPY[dtype])
    sorted_ids = np.concatenate([rows, np.full(5, M * K, np.int32)])
    y = np.full((len(sorted_ids), D), np.nan, NUMPY[dtype])
    mod.moe_permute(x, sorted_ids, y, K, **consts)
    want = np.zeros_like(y)
    real = sorted_ids < M * K
    want[real] = x[sorted_ids[real] // K]
    np.testing.assert_array_equal(y, want, err_msg=f"moe_permute {dtype} shape={shape} {consts}")


def check_unpermute(mod, rng, dtype, shape, consts):
    M, E, K, D = shape
    ids = routed(rng, M, E, K, drop=True)
    _, _, positions, offsets = align_ref(ids, E, 16)
    y = (rng.standard_normal((offsets[-1] + 3, D)) * 2).astype(NUMPY[dtype])
    w = rng.random((M, K)).astype(np.float32)
    out = np.full((M, D), np.nan, NUMPY[dtype])
    pos = positions.reshape(M, K)
    mod.moe_unpermute(y, pos, w, out, **consts)
    yd = y.astype(np.float64)
    want = sum(np.where(pos[:, k:k + 1] >= 0, w[:, k:k + 1] * yd[np.maximum(pos[:, k], 0)], 0) for k in range(K))
    assert_close(out, want, "moe_unpermute", dtype, f" shape={shape} {consts}")


@dataclass(frozen=True)
class Op:
    """One operator of std.moe: its name, the dtypes its row runs (of the logits, the ids or
    the rows), and its check."""
    name: str
    dtypes: tuple
    check: Callable


OPS = [
    Op("topk_softmax", FLOATS, lambda mod, *a: check_topk(mod, "topk_softmax", softmax, *a)),
    Op("topk_sigmoid", FLOATS, lambda mod, *a: check_topk(mod, "topk_sigmoid", sigmoid, *a)),
    Op("topk_grouped", FLOATS, check_grouped),
    Op("expert_histogram", ("i32", "i64"), check_histogram),
    Op("moe_align_block_size", ("i32", "i64"), check_align),
    Op("moe_permute", FLOATS, check_permute),
    Op("moe_unpermute", FLOATS, check_unpermute),
]


def tiles(name: str) -> list:
    """(shape (M, E, K, D), constants) of a row on the interpreter: ragged token counts, E
    below the tile, several blocks and chunks."""
    if name == "topk_grouped":  # 8 groups of 8 (3 kept), and 2 groups of 3 (1 kept)
        return [((9, 64, 6, 0), dict(BM=4, BE=64, KB=8, GB=8, THREADS=32)),
                ((3, 6, 2, 0), dict(BM=2, BE=8, KB=2, GB=2, THREADS=32))]
    if name.startswith("topk"):  # and the sm_90a table's tile for E <= 64 (32 tokens, 2 blocks, the last ragged)
        return [((9, 60, 6, 0), dict(BM=4, BE=64, KB=8, THREADS=32)),
                ((3, 8, 2, 0), dict(BM=2, BE=8, KB=2, THREADS=32)), ((40, 60, 6, 0), dict(BM=32, BE=64, KB=8))]
    if name == "expert_histogram":
        # blocks of 64 ids in parts of 24 (the last part running past its block), and of 16 in one part
        return [((37, 20, 4, 0), dict(BE=32, BLOCK=64, PART=24, THREADS=32)), ((5, 3, 2, 0), dict(BE=4, BLOCK=16, THREADS=32))]
    if name == "moe_align_block_size":
        # three slices of 50 ids, each four chunks (the last ragged); 10 ids in 8 slices (the last three empty)
        return [((37, 20, 4, 0), dict(BE=32, BLOCK=8, SLICES=3, CHUNK=16, GROUP=8, THREADS=32)),
                ((5, 3, 2, 0), dict(BE=4, BLOCK=4, SLICES=8, CHUNK=16, GROUP=4, THREADS=32))]
    return [((13, 6, 3, 40), dict(BD=16, THREADS=32)), ((2, 4, 1, 8), dict(BD=16, THREADS=32))]
