"""bench/B_bwd_block_mask.tl: std.attention's flash_bwd with its dK/dV grid's mask a block
condition and the LSE in log2 units from grid0 (H200, session 28: 0.891x cuDNN against std 0.811x, causal 0.911x against 0.846x).
Its sm_90a grids as recorded run on the interpreter against the f64 gradients (ragged S and SK,
S > SK, GQA, causal); its SASS at config.json's tiles, built with codegen/half_pairs.py's
CAST_PAIRS and codegen/sm90.py's RING_SCALE_D_CLEARS "all" as the queued run builds it, has no
per-element mask and no F2FP halves swapped back, and no spill or serialized wgmma.  The same of
bench/attention_bwd_fused.tl's BLOCK_MASK (the one-grid backward's step written alike)."""
from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from tlc.driver import check_file
from tlc.schedule import schedule_grids

ROOT = Path(__file__).resolve().parents[2]
VARIANT = str(ROOT / "bench" / "B_bwd_block_mask.tl")
sys.path.insert(0, str(ROOT / "tests" / "stdlib"))
sys.path.insert(0, str(ROOT / "tests" / "codegen"))
from attention_kit import bwd_grid_errors  # noqa: E402

SM90_TILES = {"BM": 128, "THREADS": 256, "BN": 128, "BQ": 64, "KV_STAGES": 3}


@pytest.fixture(scope="module")
def program():
    return check_file(VARIANT).program


@pytest.mark.parametrize("B, H, HK, S, SK, causal, consts", [
    (1, 2, 1, 70, 100, False, {}), (1, 4, 2, 100, 70, True, {}),  # S > SK causal: rows that see no key
    (1, 4, 2, 150, 300, True, SM90_TILES), (2, 2, 1, 130, 100, False, SM90_TILES),
    (1, 6, 2, 130, 200, True, {**SM90_TILES, "BQ": 48, "KV_STAGES": 2}),
    (2, 2, 2, 128, 128, True, SM90_TILES)])  # whole blocks only: the diagonal's the only masked ones
def test_the_sm90a_grids_against_numpy(program, B, H, HK, S, SK, causal, consts):
    D = 64
    grids = schedule_grids(program, "flash_bwd", {"D": D, "CAUSAL": causal, "T": "f16", **consts}, target="sm_90a")
    ws2 = grids[2].warp_spec  # the producer brings each step's LSE (log2 units) and delta columns
    assert [(m.param, m.swizzle) for m in ws2.tensor_maps[2:]] == [("lse_log2", False), ("delta", False)]
    errors = bwd_grid_errors(grids, B, H, HK, S, SK, D, causal, seed=S + SK, workspaces=("delta", "lse_log2"))
    assert max(errors.values()) < 4e-3, errors


def _sass(path, tmp_path, monkeypatch, cast_pairs):
    """(dQ grid's SASS, dK/dV grid's, ptxas's log) of `path`'s flash_bwd at head dim 128, the
    tiles config.json gives std, built as the queued run builds the variant."""
    from nvcc import cubin_sass
    from tlc.codegen import half_pairs, sm90
    from tlc.runner import build

    monkeypatch.setattr(half_pairs, "CAST_PAIRS", cast_pairs)
    monkeypatch.setattr(sm90, "RING_SCALE_D_CLEARS", "all")
    defines = ("D=128", *(f"{k}={v}" for k, v in SM90_TILES.items()))
    source, _ = build(path, kernels=("flash_bwd",), defines=defines, arch="sm_90a")
    sass, log = cubin_sass(source, "sm_90a", tmp_path, "bwd")
    split = re.split(r"Function : (\w+)", sass)
    grids = dict(zip(split[1::2], split[2::2]))
    return grids["flash_bwd_grid1"], grids["flash_bwd_grid2"], log


SWAP = r"PRMT (R\d+), (R\d+), 0x5432, \2"  # an F2FP's two halves swapped back


@pytest.mark.slow  # nvcc builds of an off-by-default switch (untimed): CI's slow run
@pytest.mark.nvcc
def test_the_dkv_step_masks_blocks_and_rounds_pairs(tmp_path, monkeypatch):
    dq, dkv, log = _sass(VARIANT, tmp_path, monkeypatch, cast_pairs=True)
    waits = lambda body: re.findall(r"WARPGROUP\.DEPBAR\.LE gsb0, (0x\d)", body)  # noqa: E731
    assert waits(dq) == ["0x1", "0x0", "0x0"] and waits(dkv) == ["0x1", "0x1", "0x0"]
    # no exponential or LSE load under a per-element predicate: the mask is a branch past its selects
    assert not re.search(r"@!?P\d+ (MUFU\.EX2|LDS)", dkv) and dkv.count("MUFU.EX2") == 32
    # the LSE columns come in log2 units: one FFMA an exponential, no FMUL of a column
    first = dkv.index("WARPGROUP.DEPBAR.LE gsb0, 0x1")
    exps = dkv[first:dkv.index("MUFU.EX2", first) + 2000]
    assert "FMUL" not in exps.split("MUFU.EX2")[0]
    assert not re.search(SWAP, dq + dkv)
    assert " 0 bytes spill stores" in log and "C75" not in log and not re.search(r"\b(LDL|STL)\b", dq + dkv)


@pytest.mark.nvcc
@pytest.mark.slow  # a second build of the whole backward (the README's test command's time)
def test_without_cast_pairs_the_halves_are_swapped_back(tmp_path, monkeypatch):
    # what CAST_PAIRS saves: rounded one at a time, ptxas swaps each pair's halves back (a PRMT)
    dq, dkv, _ = _sass(VARIANT, tmp_path, monkeypatch, cast_pairs=False)
    assert len(re.findall(SWAP, dq)) >= 16 and len(re.findall(SWAP, dkv)) >= 16


FUSED = str(ROOT / "bench" / "attention_bwd_fused.tl")


@pytest.mark.parametrize("B, H, HK, S, SK, causal, consts", [
    (1, 4, 2, 100, 70, True, {}), (1, 2, 1, 70, 130, False, {"DETERMINISTIC": True}),
    (2, 2, 2, 128, 128, True, {"DETERMINISTIC": True}), (1, 2, 2, 150, 300, False, {"ROTATE": False})])
def test_the_one_grid_backward_masks_blocks_alike(B, H, HK, S, SK, causal, consts):
    # bench/attention_bwd_fused.tl's BLOCK_MASK: its step as this variant's (whole exponentials,
    # the mask a block's, the LSE in log2 units from grid0), on the interpreter against NumPy
    sys.path.insert(0, str(ROOT / "tests" / "stdlib"))
    import tlc
    from attention_kit import ATTENTION_PATH
    from test_attention import check_bwd

    fwd = tlc.load(ATTENTION_PATH, target="cpu").flash_fwd
    fused = tlc.load(FUSED, target="cpu").flash_bwd_fused
    check_bwd(fwd, fused, "f16", B, H, HK, S, SK, 64, causal, {"BKV": 64, "BQ": 32, "KV_THREADS": 128,
                                                               "BLOCK_MASK": True, **consts}, seed=S + SK)


@pytest.mark.slow  # nvcc builds of an off-by-default switch (untimed): CI's slow run
@pytest.mark.nvcc
def test_the_one_grid_backward_with_block_mask_has_no_per_element_mask(tmp_path, monkeypatch):
    from nvcc import cubin_sass
    from tlc.codegen import half_pairs, sm90
    from tlc.runner import build

    monkeypatch.setattr(half_pairs, "CAST_PAIRS", True)
    monkeypatch.setattr(sm90, "RING_SCALE_D_CLEARS", "all")
    source, _ = build(FUSED, kernels=("flash_bwd_fused",), defines=("D=128", "BLOCK_MASK=True"), arch="sm_90a")
    sass, log = cubin_sass(source, "sm_90a", tmp_path, "fused")
    grid = dict(zip(*[iter(re.split(r"Function : (\w+)", sass)[1:])] * 2))["flash_bwd_fused_grid1"]
    assert not re.search(r"@!?P\d+ (MUFU\.EX2|LDS)", grid) and grid.count("MUFU.EX2") == 32
    assert " 0 bytes spill stores" in log and "C75" not in log
