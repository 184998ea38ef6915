"""A warp-specialized ring whose last gemm reads A from shared memory keeps it in flight into the
next iteration (schedule/gemm_overlap.py's carried_gemms, codegen/sm90.py): bench/E_bwd_staged.tl,
std.attention's flash_bwd with dS written to shared memory before dK += dS.T @ Q, as
FlashAttention 3's backward does, at config.json's sm_90a tiles.  Each consumer warpgroup writes
the rows of dS its own wgmma reads, so it meets at a barrier of its own there
(WarpSpecialization.warpgroup_syncs) and no barrier of all the consumers stays in the loop.
std.attention's flash_bwd itself (dS in registers, dK's product waited for at each step's end)
carries nothing.  mla_decode carries P @ V on its two stages where CARRIED_MIN_STAGES allows it
(2; the default 3 does not), its stage released early with codegen/sm90.py EARLY_CARRIED_RELEASE."""
from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from tlc import ir
from tlc.driver import check_file
from tlc.ir.walk import statements
from tlc.schedule import schedule_grids
from tlc.schedule.gemm_overlap import carried_gemms

ROOT = Path(__file__).resolve().parents[2]
STAGED = str(ROOT / "bench" / "E_bwd_staged.tl")
sys.path.insert(0, str(ROOT / "tests" / "stdlib"))
from attention_kit import ATTENTION_PATH  # noqa: E402

SM90_TILES = {"BM": 128, "THREADS": 256, "BN": 128, "BQ": 64, "KV_STAGES": 3}


def dkv_grid(path, target="sm_90a", **consts):
    program = check_file(path).program
    return schedule_grids(program, "flash_bwd", {"D": 128, "T": "f16", **SM90_TILES, **consts}, target=target)[2]


def test_dks_product_stays_in_flight_and_each_warpgroup_meets_alone():
    k = dkv_grid(STAGED)
    ws = k.warp_spec
    loop = k.body[ws.loop]
    copy, sync, gemm = [s for s in loop.body if not isinstance(s, ir.Sync) or s is not loop.body[-1]][-3:]
    assert isinstance(copy, ir.Copy) and (copy.src.name, copy.dst.name) == ("ds_t", "ds_s") and isinstance(sync, ir.Sync)
    assert isinstance(gemm, ir.Gemm) and (gemm.a, gemm.b, gemm.c) == ("ds_s", "q_tile", "dk")
    start, stop = ws.consumer
    assert carried_gemms(list(loop.body[start:stop]), {b.name: b for b in k.buffers}, k.threads) == (gemm,)
    # the stage dK's product reads released one iteration late; the warpgroups' own barrier alone
    assert ws.release_lag == 1 and ws.deferred is None and ws.kept_syncs == ()
    assert ws.warpgroup_syncs == (next(i for i, s in enumerate(loop.body) if s is sync),)
    assert "each consumer warpgroup meets at named barrier 6 + its index" in ir.print_kernel(k)


@pytest.mark.parametrize("path, consts", [(ATTENTION_PATH, {}), (STAGED, {"KV_STAGES": 2})])
def test_nothing_carried(path, consts):
    """std.attention's flash_bwd (dK's A in registers: held across the next step's scores it
    would be more registers than a warpgroup has, ptxas's C7512); two stages (a stage released
    one iteration late would leave the producer none to fill)."""
    k = dkv_grid(path, **consts)
    assert k.warp_spec.release_lag == 0
    assert any(isinstance(s, ir.Gemm) and s.c == "dk" for s in statements(k.body))


def test_the_generated_ring_carries_dks_product():
    """The C of the dK/dV grid: dK's product issued with its first K step's scale-d `tl_k > 0`
    (the clear before the ring folded into it, zeros after a ring of no iteration), the previous
    stage released after the first wait of a step, no wait at a step's end for dK; the scores'
    clears their products' scale-d 0; dS stored a pair of columns at a time before the
    warpgroup's own barrier."""
    from tlc.runner import build

    defines = ("D=128", *(f"{k}={v}" for k, v in SM90_TILES.items()))
    cu, _ = build(STAGED, kernels=("flash_bwd",), defines=defines, arch="sm_90a")
    grid = cu[cu.index("void __launch_bounds__(384, 1) flash_bwd_grid2("):]
    consumer = grid[grid.index("tl::setmaxnreg_inc"):]
    loop, after = consumer.split("tl::wgmma_wait<0>();  // the last iteration's carried gemms")
    assert "dk[tl_r] = 0.0f" not in grid[:grid.index("tl::setmaxnreg_inc")] and "dk cleared by its gemm's first" in grid
    assert loop.count("_clear, half, 128, 128, 64, true, half, 1, 1, true>(") == 2  # the scores, dO . V^T
    assert "(ds_s, (q_tile + ((tl_it) % 3) * 8192), dk, tl_k > 0);" in loop
    first_wait = loop.index("tl::wgmma_wait<1>();")
    release = loop.index("if (tl_k > 0 && threadIdx.x % 32 == 0) tl::mbar_arrive(tl_empty + (tl_it + 2) % 3);")
    assert first_wait < release < loop.index("fast_exp2")
    assert "tl::wgmma_wait<0>" not in loop and "tl::mbar_arrive(tl_empty + tl_stage)" not in loop
    assert loop.count("tl::bar_sync_named(6 + threadIdx.x / 128, 128);") == 1 and "bar_sync_named(5" not in loop
    assert loop.index("(ds_s, ds_t);") < loop.index("tl::bar_sync_named(6") < loop.index("(ds_s, (q_tile")
    assert after.index("if (tl_n == 0) {") < after.index("dk[tl_r] = 0.0f;") < after.index("__syncthreads()")


@pytest.mark.nvcc
def test_sm90a_sass(tmp_path):
    """sm_90a: one wait a product group in the loop (0x1 three times) and one after it, dK's
    HGMMA reading dS from shared memory (gdesc), its first K step predicated (UP0), the scores'
    first steps' scale-d 0 (RZ, !UPT); dS stored as 32-bit STS, no STS.U16 in the loop; no spills,
    no serialized wgmma (C75xx)."""
    sys.path.insert(0, str(ROOT / "tests" / "codegen"))
    from nvcc import cubin_sass
    from tlc.runner import build

    defines = ("D=128", *(f"{k}={v}" for k, v in SM90_TILES.items()))
    source, _ = build(STAGED, kernels=("flash_bwd",), defines=defines, arch="sm_90a")
    sass, log = cubin_sass(source, "sm_90a", tmp_path, "staged")
    split = re.split(r"Function : (\w+)", sass)
    dkv = dict(zip(split[1::2], split[2::2]))["flash_bwd_grid2"]
    assert re.findall(r"WARPGROUP\.DEPBAR\.LE gsb0, (0x\d)", dkv) == ["0x1", "0x1", "0x1", "0x0"]
    products = re.findall(r"HGMMA\.64x128x16\.F32 R\d+, (R\d+|gdesc)[^;]*?(UP0)? ;", dkv)
    assert [a[0] == "R" for a, _ in products] == [True] * 4 + [False] * 4
    assert [p for a, p in products if a == "gdesc"] == ["UP0", "", "", ""] and dkv.count("RZ, !UPT") == 2
    assert "BAR.SYNC.DEFER_BLOCKING R" in dkv and "0x5, 0x100" not in dkv
    assert not re.search(r"\b(LDL|STL)\b", sass) and " 0 bytes spill stores" in log and "C75" not in log


def test_the_ring_on_the_interpreter_against_numpy():
    """The staged program's sm_90a grids as recorded (the ring, a stage released one iteration
    late), GQA and causal, ragged at both ends, against the f64 gradients."""
    from attention_kit import bwd_grid_errors

    B, H, HK, S, SK, D = 1, 4, 2, 150, 300, 64
    grids = schedule_grids(check_file(STAGED).program, "flash_bwd", {"D": D, "CAUSAL": True, "T": "f16", **SM90_TILES},
                           target="sm_90a")
    assert grids[2].warp_spec.release_lag == 1 and grids[2].warp_spec.warpgroup_syncs
    errors = bwd_grid_errors(grids, B, H, HK, S, SK, D, True, seed=5, workspaces=("delta",))
    assert max(errors.values()) < 4e-3, errors


MLA = ("DK=576", "DV=512", "PAGE=64", "T=bf16")


def _mla_source(monkeypatch, early: bool) -> str:
    """std.attention's mla_decode grid 0 for sm_90a with P @ V carried on its two stages
    (CARRIED_MIN_STAGES 2), with or without codegen/sm90.py's EARLY_CARRIED_RELEASE."""
    import tlc.codegen.sm90 as sm90
    import tlc.schedule.warpspec as warpspec
    from tlc.runner import build

    monkeypatch.setattr(warpspec, "CARRIED_MIN_STAGES", 2)
    monkeypatch.setattr(sm90, "EARLY_CARRIED_RELEASE", early)
    cu, _ = build(ATTENTION_PATH, kernels=("mla_decode",), defines=MLA, arch="sm_90a")
    return cu


@pytest.mark.parametrize("early", [False, True])
def test_mla_decode_carries_p_at_v_and_releases_its_stage(monkeypatch, early):
    """P @ V of the last page stays in flight under this page's scores; its stage is released
    once it is done: with EARLY_CARRIED_RELEASE right after the scores' two groups are issued
    (warpgroup 0, which issued them, waits with 2 left in flight, warpgroup 1 with none), else
    where the scores are first needed (their wait completes it too)."""
    cu = _mla_source(monkeypatch, early)
    loop = cu[cu.index("tl::setmaxnreg_inc<232>();"):]
    loop, after = loop.split("tl::wgmma_wait<0>();  // the last iteration's carried gemms")
    issue = loop.index("(qr_tile, (kr_tile + ((tl_it) % 2) * 4096), scores);")
    release = loop.index("if (tl_k > 0 && threadIdx.x % 32 == 0) tl::mbar_arrive(tl_empty + (tl_it + 1) % 2);")
    mask = loop.index("if ((((first + (kb * 64)) + 64) > seen)) {")
    if early:
        two = loop.index("if (threadIdx.x < 128) tl::wgmma_wait<2>();")
        none = loop.index("else tl::wgmma_wait<0>();")
        assert issue < two < none < release < loop.index("\n        tl::wgmma_wait<0>();", release) < mask
    else:
        scores_wait = loop.index("\n        tl::wgmma_wait<0>();", issue)
        assert "tl::wgmma_wait<2>" not in loop and issue < scores_wait < release < mask
    assert loop.count("tl::mbar_arrive(tl_empty") == 1 and "tl::mbar_arrive(tl_empty + tl_stage)" not in loop


@pytest.mark.slow  # nvcc builds of an off-by-default switch (untimed): CI's slow run
@pytest.mark.nvcc
def test_mla_decode_early_release_sass(monkeypatch, tmp_path):
    """sm_90a: warpgroup 0 waits with 2 groups in flight, then releases the stage, then waits for
    the scores; no spills, no serialized wgmma (C75xx), 168 registers as std's."""
    sys.path.insert(0, str(ROOT / "tests" / "codegen"))
    from nvcc import cubin_sass

    sass, log = cubin_sass(_mla_source(monkeypatch, True), "sm_90a", tmp_path, "mla_early")
    split = re.split(r"Function : (\w+)", sass)
    body = dict(zip(split[1::2], split[2::2]))["mla_decode_grid0"]
    loop = body[body.index("HGMMA.64x64x16"):body.rindex("HGMMA.64x256x16")]
    two = loop.index("WARPGROUP.DEPBAR.LE gsb0, 0x2")
    release = loop.index("SYNCS.ARRIVE.TRANS64.A1T0", two)
    assert two < release < loop.index("WARPGROUP.DEPBAR.LE gsb0, 0x0", release)
    assert not re.search(r"\b(LDL|STL)\b", sass) and " 0 bytes spill stores" in log and "C75" not in log
    assert max(int(r) for r in re.findall(r"Used (\d+) registers", log)) <= 232
