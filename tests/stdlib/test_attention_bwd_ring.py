"""std.attention's flash_bwd on the sm_90a schedule: its dQ grid's loop over the key blocks and
its dK/dV grid's loop over the query blocks of every head of a group are TMA rings filled by a
producer warpgroup (schedule/warpspec.py); the log-sum-exp and dO . O rows are copied into
registers by the consumers alone before the dQ loop, and each dK/dV step's columns come with its
Q and dO tiles (unswizzled TMA boxes into a 1-D stage); the interpreter runs the rings as
recorded, and the gradients match NumPy's."""
from __future__ import annotations

import pytest

from attention_kit import ATTENTION_PATH, bwd_grid_errors
from tlc.driver import check_file
from tlc.schedule import schedule_grids

BWD_TOL = 4e-3
SM90_TILES = {"BM": 128, "THREADS": 256, "BN": 128, "BQ": 64, "KV_STAGES": 3}


@pytest.fixture(scope="module")
def program():
    return check_file(ATTENTION_PATH).program


@pytest.mark.parametrize("B, H, HK, S, SK, causal, consts", [
    (1, 2, 1, 70, 100, False, {}), (2, 2, 2, 64, 64, True, {}), (1, 4, 2, 100, 70, True, {}),
    (1, 3, 3, 33, 150, True, {"BKV": 64, "BQ": 16, "KV_THREADS": 128}), (1, 2, 2, 200, 130, False, {"BM": 128, "THREADS": 256}),
    # config.json's sm_90a tiles: 128 keys a dQ step, 64 queries a dK/dV step in a 3-deep ring (ragged
    # at both ends)
    (1, 4, 2, 150, 300, True, SM90_TILES), (2, 2, 1, 130, 100, False, SM90_TILES),
    # across the heads of a group; 48 and 32 queries a step in a 2-deep and a 3-deep ring
    (1, 6, 2, 130, 200, True, {**SM90_TILES, "BQ": 48, "KV_STAGES": 2}),
    (2, 3, 1, 100, 64, False, {**SM90_TILES, "BQ": 32})])
def test_both_grids_run_on_the_ring(program, B, H, HK, S, SK, causal, consts):
    D = 64  # 128-byte rows, as the TMA copies them
    grids = schedule_grids(program, "flash_bwd", {"D": D, "CAUSAL": causal, "T": "f16", **consts}, target="sm_90a")
    ws = grids[1].warp_spec
    assert ws is not None and [type(grids[1].body[i]).__name__ for i in ws.consumer_only] == \
        ["Copy", "Copy", "Copy", "Copy"]  # Q, dO into shared; LSE (log2 units: grid0's), delta into registers
    # the dK/dV grid's producer copies each step's Q and dO tiles and its LSE and delta columns
    # (one unswizzled TMA box each, read from shared memory by the consumers)
    ws2 = grids[2].warp_spec
    assert ws2 is not None and [(x.buffer, x.flat) for x in ws2.loads] == \
        [("q_tile", False), ("do_tile", False), ("lse_cols", True), ("delta_cols", True)]
    assert [(m.param, m.box(), m.swizzle) for m in ws2.tensor_maps[2:]] == \
        [("lse_log2", [consts.get("BQ", 32), 1, 1], False), ("delta", [consts.get("BQ", 32), 1, 1], False)]
    errors = bwd_grid_errors(grids, B, H, HK, S, SK, D, causal, seed=S + SK)
    assert max(errors.values()) < BWD_TOL, errors


def test_config_gives_sm90a_the_tiles_tested_here():
    from tlc.config_table import choose, rules_for

    chosen = choose(rules_for(ATTENTION_PATH, "flash_bwd"), "sm_90a", {"D": 128}, {"T": "f16"})
    assert chosen == SM90_TILES
    # head dims 129-256: 64 keys a dK/dV block (test_head_dim_256_builds_without_spills); sm_80 none
    rules = rules_for(ATTENTION_PATH, "flash_bwd")
    assert choose(rules, "sm_90a", {"D": 256}, {"T": "f16"}) == choose(rules, "sm_90a", {"D": 129}, {"T": "bf16"}) \
        == {"BKV": 64, "MASK_BLOCKS": False}
    assert not choose(rules, "sm_80", {"D": 256}, {"T": "f16"}) and not choose(rules, "sm_90a", {"D": 257}, {"T": "f16"})


@pytest.mark.parametrize("B, H, HK, S, SK, causal", [(1, 2, 1, 70, 100, True), (1, 2, 2, 64, 130, False)])
def test_head_dim_256_at_the_config_rule_matches_numpy(program, B, H, HK, S, SK, causal):
    """config.json's D = 256 rule (BKV=64: 64 keys a dK/dV block, dV and dK on mma.sync from P
    and dS in shared memory) on the interpreter as scheduled for sm_90a, ragged, GQA and causal."""
    grids = schedule_grids(program, "flash_bwd", {"D": 256, "CAUSAL": causal, "T": "f16", "BKV": 64, "MASK_BLOCKS": False},
                           target="sm_90a")
    errors = bwd_grid_errors(grids, B, H, HK, S, SK, 256, causal, seed=S + SK)
    assert max(errors.values()) < BWD_TOL, errors


@pytest.mark.nvcc
def test_sm90a_waits_for_each_product_where_its_result_is_needed(tmp_path):
    """sm_90a, head dim 128, config.json's tiles: the scores and dO . V^T issued back to back, P
    made while the second runs (wait for one group), then dS; in the dK/dV grid dV's product runs
    while dS is made; every product on HGMMA (m64n128 in the dQ grid, m64n64 and m64n128 in the
    dK/dV grid), no local memory, no serialized wgmma."""
    import re
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "codegen"))
    from nvcc import cubin_sass
    from tlc.runner import build

    defines = ("D=128", *(f"{k}={v}" for k, v in SM90_TILES.items()))
    source, _ = build(ATTENTION_PATH, kernels=("flash_bwd",), defines=defines, arch="sm_90a")
    sass, log = cubin_sass(source, "sm_90a", tmp_path, "bwd")
    split = re.split(r"Function : (\w+)", sass)
    grids = dict(zip(split[1::2], split[2::2]))
    dq, dkv = grids["flash_bwd_grid1"], grids["flash_bwd_grid2"]
    assert dq.count("HGMMA.64x128x16.F32") == 24 and dkv.count("HGMMA.64x64x16.F32") == 16 \
        and dkv.count("HGMMA.64x128x16.F32") == 8
    waits = lambda body: re.findall(r"WARPGROUP\.DEPBAR\.LE gsb0, (0x\d)", body)  # noqa: E731
    assert waits(dq) == ["0x1", "0x0", "0x0"] and waits(dkv) == ["0x1", "0x1", "0x0"]
    # P's exponentials between the first wait and the next product
    first = dkv.index("WARPGROUP.DEPBAR.LE gsb0, 0x1")
    assert "MUFU.EX2" in dkv[first:dkv.index("HGMMA.64x128x16", first)]
    assert not re.search(r"\b(LDL|STL)\b", sass) and " 0 bytes spill stores" in log and "C75" not in log
    # the dK/dV mask a block's (MASK_BLOCKS): no exponential or LSE load under a per-element
    # predicate, a branch past the selects; the LSE columns in log2 units (grid0's): one FFMA an
    # exponential, no FMUL of a column; no F2FP's halves swapped back (codegen/half_pairs.py)
    assert not re.search(r"@!?P\d+ (MUFU\.EX2|LDS)", dkv) and dkv.count("MUFU.EX2") == 32
    assert "FMUL" not in dkv[first:dkv.index("MUFU.EX2", first)]
    assert not re.search(r"PRMT (R\d+), (R\d+), 0x5432, \2", dq + dkv)


@pytest.mark.nvcc
@pytest.mark.slow  # one more build of the whole backward (the README's test command's time)
def test_without_cast_pairs_the_halves_are_swapped_back(tmp_path, monkeypatch):
    """What codegen/half_pairs.py's CAST_PAIRS saves in flash_bwd (sm_90a, D = 128, config.json's
    tiles): rounded one at a time, ptxas swaps each pair's halves back, a PRMT."""
    import re
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "codegen"))
    from nvcc import cubin_sass
    from tlc.codegen import half_pairs
    from tlc.runner import build

    monkeypatch.setattr(half_pairs, "CAST_PAIRS", False)
    defines = ("D=128", *(f"{k}={v}" for k, v in SM90_TILES.items()))
    source, _ = build(ATTENTION_PATH, kernels=("flash_bwd",), defines=defines, arch="sm_90a")
    sass, _ = cubin_sass(source, "sm_90a", tmp_path, "bwd")
    grids = dict(zip(*[iter(re.split(r"Function : (\w+)", sass)[1:])] * 2))
    swap = r"PRMT (R\d+), (R\d+), 0x5432, \2"  # an F2FP's two halves swapped back
    assert len(re.findall(swap, grids["flash_bwd_grid1"])) >= 16 and len(re.findall(swap, grids["flash_bwd_grid2"])) >= 16


@pytest.mark.nvcc
@pytest.mark.slow  # one more build of the whole backward (the README's test command's time)
def test_head_dim_256_builds_without_spills(tmp_path):
    """sm_90a, D = 256 at config.json's rule (BKV=64: the dK/dV warpgroups split the scores'
    columns, dV and dK on mma.sync from P and dS in shared memory; session 28's H200: 0.549x
    cuDNN against 0.427x at the .tl's BKV=128, whose 64 keys x 256 of dK and of dV a warpgroup
    spill 2292 bytes a thread and serialize the wgmmas, C7511; the mask element by element,
    MASK_BLOCKS False: the block mask serialized them, C7518): no spills, no C75xx."""
    import re
    import sys
    from pathlib import Path

    from tlc.config_table import choose, rules_for

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "codegen"))
    from nvcc import cubin_sass
    from tlc.runner import build

    chosen = choose(rules_for(ATTENTION_PATH, "flash_bwd"), "sm_90a", {"D": 256}, {"T": "f16"})
    assert chosen == {"BKV": 64, "MASK_BLOCKS": False}
    defines = ("D=256", *(f"{k}={v}" for k, v in chosen.items()))
    source, _ = build(ATTENTION_PATH, kernels=("flash_bwd",), defines=defines, arch="sm_90a")
    _, log = cubin_sass(source, "sm_90a", tmp_path, "bwd")
    assert set(re.findall(r"(\d+) bytes spill stores", log)) == {"0"} and "C75" not in log
