"""std.moe against NumPy, one table (moe_kit.OPS): every operator on the interpreter at ragged
shapes for each dtype it takes; the module compiled by nvcc (sm_90a; sm_80 in the slow run); the
registry and the reference page.  tests/gpu/test_moe_gpu.py runs the table on the GPU at larger
shapes with the default tiles, and the routing end to end against PyTorch."""
from __future__ import annotations

import re
import zlib

import numpy as np
import pytest

import tlc
from moe_kit import MOE_PATH, OPS, tiles
from module_checks import assert_builds_without_spills, assert_reference_page_is_current, defs_without_a_doc_comment
from nvcc import compile_device
from op_registry import check_or_record



@pytest.fixture(scope="module")
def mod():
    return tlc.load(MOE_PATH, target="cpu")


def test_the_module_holds_every_operator_of_the_table(mod):
    assert {op.name for op in OPS} == set(mod.kernels)


def test_every_operator_has_a_doc_comment():
    """The line under each def is a comment saying what it computes (the reference page reads it)."""
    assert defs_without_a_doc_comment(MOE_PATH) == []


PASSED: dict[str, set] = {}  # operator -> the dtypes whose rows passed in this run


@pytest.mark.parametrize("op,dtype", [pytest.param(op, d, id=f"{op.name}-{d}") for op in OPS for d in op.dtypes])
def test_against_numpy(mod, op, dtype):
    for shape, consts in tiles(op.name):
        op.check(mod, np.random.default_rng(zlib.crc32(op.name.encode()) + shape[0]), dtype, shape, consts)
    PASSED.setdefault(op.name, set()).add(dtype)


def test_a_moe_layer_end_to_end(mod):
    """A layer's forward from its router's logits: topk_softmax, moe_align_block_size,
    moe_permute, std.gemm's matmul_grouped over the aligned offsets (every block one expert's),
    moe_unpermute; against NumPy's sum over each token's experts of gate * (h @ W[e].T)."""
    gemm = tlc.load("std.gemm", target="cpu")
    rng = np.random.default_rng(3)
    M, E, K, D, N, BLOCK = 11, 6, 2, 32, 48, 16
    x = rng.standard_normal((M, E)).astype(np.float32)
    h = rng.standard_normal((M, D)).astype(np.float16)
    W = (rng.standard_normal((E, N, D)) / 4).astype(np.float16)
    w, ids = np.zeros((M, K), np.float32), np.zeros((M, K), np.int32)
    mod.topk_softmax(x, ids, w, RENORMALIZE=True, BE=8, KB=2, THREADS=32)
    P = M * K + E * (BLOCK - 1)
    sorted_ids, block_expert = np.zeros(P, np.int32), np.zeros(-(-P // BLOCK), np.int32)
    positions, offsets = np.zeros(M * K, np.int32), np.zeros(E + 1, np.int32)
    mod.moe_align_block_size(ids.reshape(-1), sorted_ids, block_expert, positions, offsets, BLOCK=BLOCK, BE=8,
                             CHUNK=16, GROUP=4, THREADS=32)
    for b in range(offsets[E] // BLOCK):  # every row of a block is a pair routed to its expert
        rows = sorted_ids[b * BLOCK:(b + 1) * BLOCK]
        assert all(ids.reshape(-1)[r] == block_expert[b] for r in rows if r < M * K)
    routed = np.zeros((P, D), np.float16)
    mod.moe_permute(h, sorted_ids, routed, K, BD=16, THREADS=32)
    expert_out = np.zeros((P, N), np.float16)
    gemm.matmul_grouped(routed, W, offsets, expert_out, BM=16, BN=16, BK=16, stages=1, THREADS=32)
    out = np.zeros((M, N), np.float16)
    mod.moe_unpermute(expert_out, positions.reshape(M, K), w, out, BD=16, THREADS=32)
    h64, W64 = h.astype(np.float64), W.astype(np.float64)
    want = sum(w[:, k:k + 1] * np.einsum("md,mnd->mn", h64, W64[ids[:, k]]) for k in range(K))
    np.testing.assert_allclose(out, want, rtol=4e-3, atol=4e-3 * np.abs(want).max())


def test_topk_refuses_more_experts_than_its_tile_or_k_past_them(mod):
    from tlc.device_assert import DeviceAssertError

    x = np.zeros((2, 65), np.float32)
    with pytest.raises(DeviceAssertError, match=r"topk_softmax: E = 65 experts \(BE = 64\), K = 2 \(KB = 16\)"):
        mod.topk_softmax(x, np.zeros((2, 2), np.int32), np.zeros((2, 2), np.float32), BE=64, THREADS=32)
    with pytest.raises(DeviceAssertError, match=r"topk_sigmoid: E = 3 experts \(BE = 64\), K = 4 \(KB = 16\)"):
        mod.topk_sigmoid(x[:, :3], np.zeros((2, 4), np.int32), np.zeros((2, 4), np.float32), BE=64, THREADS=32)


def test_align_refuses_a_sorted_ids_too_short(mod):
    from tlc.device_assert import DeviceAssertError

    ids = np.array([0, 1, 2, 0], np.int32)
    with pytest.raises(DeviceAssertError, match=r"moe_align_block_size: 12 padded rows, sorted_ids holds 8, "):
        mod.moe_align_block_size(ids, np.zeros(8, np.int32), np.zeros(3, np.int32), np.zeros(4, np.int32),
                                 np.zeros(4, np.int32), BLOCK=4, BE=4, CHUNK=16, GROUP=4,
                                 THREADS=32)


def test_registry():
    """stdlib/tested.json lists exactly the operators of this table, each of whose rows (every
    dtype) passed in this run (TLC_RECORD_TESTED=1 rewrites it; tests/stdlib/op_registry.py)."""
    table = {op.name: set(op.dtypes) for op in OPS}
    check_or_record("std.moe", table, {k: v for k, v in PASSED.items() if v == table.get(k)}, __file__)


@pytest.mark.nvcc
@pytest.mark.parametrize("arch,dtype", [pytest.param(a, d, marks=m) for a, d, m in
                                        (("sm_80", "f16", pytest.mark.slow), ("sm_90a", "bf16", ()))])
def test_builds_with_nvcc(arch, dtype, tmp_path):
    """Every operator of the module, for one dtype, compiles without warnings or spills."""
    assert_builds_without_spills(MOE_PATH, arch, dtype, tmp_path)


@pytest.mark.parametrize("name", ["topk_softmax", "topk_sigmoid"])
def test_the_sm90a_table_takes_32_tokens_of_64_experts_a_block_for_e_up_to_64(mod, name):
    """stdlib/config.json: at most 64 experts on sm_90a, BE = 64 and BM = 32 (H200: topk_softmax
    2.3x faster than at BM = 8); more experts, or sm_80, keep the .tl's defaults; a caller's BM wins."""
    k = mod.kernels[name]

    def chosen(E, arch="sm_90a", **given):
        return k.with_recorded({"logits": np.zeros((100, E), np.float16)}, {"T": "f16", **given}, arch)

    assert chosen(64) == chosen(8) == {"T": "f16", "BE": 64, "BM": 32}
    assert chosen(65) == chosen(64, "sm_80") == {"T": "f16"}
    assert chosen(64, BM=8) == {"T": "f16", "BE": 64, "BM": 8}


@pytest.mark.nvcc
@pytest.mark.parametrize("dtype", ["f16", pytest.param("f32", marks=pytest.mark.slow)])  # one in the README run
def test_the_table_tiles_build_without_spills(dtype, tmp_path):
    """The config table's topk tile (BE = 64, BM = 32: 64 registers in f16) on sm_90a, and
    topk_grouped's defaults (64 threads, 8 blocks an SM: 122 registers in f32)."""
    from tlc.runner import build

    for kernels, defines in ((("topk_softmax", "topk_sigmoid"), ("BE=64", "BM=32")), (("topk_grouped",), ())):
        source, _ = build(MOE_PATH, kernels=kernels, defines=(f"T={dtype}", *defines), arch="sm_90a")
        log = compile_device(source, "sm_90a", tmp_path)  # the tiles' registers (the module build has the launchers)
        spills = dict(re.findall(r"Function properties for (\w+)\n\s*\d+ bytes stack frame, (\d+) bytes spill", log))
        assert {k: v for k, v in spills.items() if not k.startswith("_Z")} == dict.fromkeys(kernels, "0"), log


def test_the_reference_page_is_generated_from_the_sources():
    """docs/stdlib/moe.md is what scripts/stdlib-docs writes (rerun it after editing the .tl)."""
    assert_reference_page_is_current(MOE_PATH)
