"""The warp-specialization pass (tlc/schedule/warpspec.py): what it decides, for which targets,
and how `--emit ir` shows it (snapshots in golden_warpspec/; TLC_REGEN=1 rewrites them)."""
from __future__ import annotations

import dataclasses
import difflib
import os
from pathlib import Path

import pytest

import tlc
from tlc import ir, targets
from tlc.ir.walk import statements
from tlc.schedule import PASSES, schedule
from tlc.schedule.warpspec import specialize_warps

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = Path(__file__).resolve().parent / "golden_warpspec"
GEMM = ROOT / "examples" / "gemm.tl"
STD = ROOT / "stdlib" / "gemm.tl"


def _kernel(path: Path, name: str, arch: str = "sm_90a", **constants) -> ir.Kernel:
    return tlc.load(str(path), target="cpu").kernels[name].scheduled(constants, arch)


def test_it_is_the_last_pass_that_changes_a_specialized_kernel():
    # fold_stores, after it, leaves a warp-specialized kernel as it is
    # (order_heavy_first, last, only chooses the order the grid's blocks are launched in)
    at = PASSES.index("specialize_warps")
    assert PASSES[at:at + 3] == ("specialize_warps", "fold_stores", "order_heavy_first")
    k = _kernel(GEMM, "matmul")
    assert k.warp_spec is not None and not any(getattr(s, "stores", ()) for s in statements(k.body))


def test_the_example_gemm_gets_roles_a_ring_and_a_tile_order():
    ws = _kernel(GEMM, "matmul").warp_spec
    # the loop after clear(acc) and split-K's kparts and kchunk (schedule/split_k.py); gemm's wgmma stays in flight
    assert (ws.loop, ws.stages, ws.consumer, ws.release_lag) == (3, 3, (3, 4), 1)
    assert [(x.index, x.buffer, x.rows, x.cols, x.stage_elems, x.tensor_map, x.multicast) for x in ws.loads] == [
        (0, "As", 128, 64, 128 * 64, 0, False), (1, "Bs", 64, 256, 64 * 256, 1, True)]
    assert (ws.producer_threads, ws.producer_registers, ws.consumer_registers) == (128, 40, 232)
    # the ring's barriers after the kernel's 144 KB of stages: 3 full, then 3 empty ones
    assert (ws.barriers, ws.ring_end, ws.full_arrivals, ws.empty_arrivals) == (147456, 147504, 128, 2 * 256 // 32)
    assert ws.tile_order == ir.TileOrder(group=8, cluster=2)
    assert ws.store == ir.StagedStore(index=4, tensor_map=2, rows=64, offset=148480, nbytes=128 * 256 * 2)
    assert [(m.param, m.box_rows, m.box_cols, m.store) for m in ws.tensor_maps] == [
        ("A", 128, 64, False), ("B", 32, 64, False), ("C", 64, 64, True)]


@pytest.mark.parametrize("arch", ["sm_80", "sm_89"])
def test_targets_without_wgmma_and_the_tma_keep_the_plain_loop(arch):
    assert _kernel(GEMM, "matmul", arch).warp_spec is None


def test_the_pass_asks_the_target_for_its_features_and_limits():
    kernel = dataclasses.replace(_kernel(GEMM, "matmul"), warp_spec=None)
    hopper = targets.get("sm_90a")
    assert specialize_warps(kernel, dataclasses.replace(hopper, tma=False)).warp_spec is None
    assert specialize_warps(kernel, dataclasses.replace(hopper, wgmma=False)).warp_spec is None
    # a made-up target with half the register file: the consumers get fewer after the producer's 40
    made_up = dataclasses.replace(hopper, name="sm_test", registers_per_sm=32768)
    assert specialize_warps(kernel, made_up).warp_spec.consumer_registers == 96
    # and a shared memory too small for the staged epilogue beside the ring: stored from registers
    small = dataclasses.replace(hopper, name="sm_test", smem_per_block=160 * 1024)
    ws = specialize_warps(kernel, small).warp_spec
    assert ws.store is None and [m.param for m in ws.tensor_maps] == ["A", "B"]


def test_a_grouped_gemm_is_persistent_without_a_cluster():
    # the loop's length depends on the tile's group, so the blocks of a cluster could not wait
    # on each other's stages
    ws = _kernel(STD, "matmul_grouped").warp_spec
    assert ws.tile_order == ir.TileOrder(group=8, cluster=1) and not any(x.multicast for x in ws.loads)
    assert ws.empty_arrivals == 256 // 32


def test_an_im2col_ring_keeps_a_gatherers_registers_in_the_generic_build():
    """std.conv's conv2d: x's tile through the TMA's im2col box, whose fallback (the generic build:
    a launch without maps, the C launcher) gathers x's rows through cp.async; at the TMA's 40
    registers that producer spilled 136 bytes (bf16, ptxas -v), so the generic build's split is a
    gathering producer's.  The build whose maps all encode keeps 40 / 232, and a ring without an
    im2col load has one split."""
    from tlc.schedule.warpspec import GATHER_PRODUCER_REGS, consumer_registers

    ws = _kernel(ROOT / "stdlib" / "conv.tl", "conv2d", C=64, K=3).warp_spec
    assert [bool(x.im2col) for x in ws.loads] == [True, False] and not any(x.gather for x in ws.loads)
    assert (ws.producer_registers, ws.consumer_registers) == (40, 232)
    assert ws.generic_registers == (GATHER_PRODUCER_REGS, consumer_registers(256, 65536, GATHER_PRODUCER_REGS)) == (128, 184)
    assert _kernel(GEMM, "matmul").warp_spec.generic_registers is None


CASES = [("gemm", GEMM, "matmul"), ("std_gemm", STD, "matmul_grouped"), ("std_gemm", STD, "matmul_skinny")]


@pytest.mark.parametrize("stem,path,name", CASES, ids=[f"{c[0]}.{c[2]}" for c in CASES])
def test_emit_ir_shows_the_roles_stages_and_barriers(stem, path, name):
    text = ir.print_kernel(_kernel(path, name))
    golden = GOLDEN / f"{stem}.{name}.sm_90a.ir"
    if os.environ.get("TLC_REGEN") == "1":
        GOLDEN.mkdir(exist_ok=True)
        golden.write_text(text)
    want = golden.read_text()
    if text != want:
        diff = "".join(difflib.unified_diff(want.splitlines(True), text.splitlines(True), "golden", "now"))
        pytest.fail(f"the warp-specialized IR of {name} changed (TLC_REGEN=1 accepts it):\n{diff}", pytrace=False)


def test_emit_ir_of_the_cli_has_the_ring():
    from click.testing import CliRunner

    from tlc import cli

    result = CliRunner().invoke(cli.main, ["build", str(GEMM), "--arch", "sm_90a", "--emit", "ir"])
    assert result.exit_code == 0, result.output
    out = result.output
    assert "  warp specialized: loop k becomes a ring of 3 stages, it = its iterations counted across tiles\n" in out
    assert "    # producer: into stage it % 3 of Bs through map #1 (multicast)\n    copy B[" in out
    assert "  # consumers: staged in shared memory, stored by the TMA (map #2)\n  copy acc -> C[" in out
    result = CliRunner().invoke(cli.main, ["build", str(GEMM), "--arch", "sm_80", "--emit", "ir"])
    assert result.exit_code == 0 and "warp specialized" not in result.output


def test_a_snapshot_for_every_case():
    assert {p.name for p in GOLDEN.glob("*.ir")} == {f"{c[0]}.{c[2]}.sm_90a.ir" for c in CASES}


def test_schedule_records_it_for_a_program_too():
    program = tlc.load(str(GEMM), target="cpu").program
    assert schedule(program, "matmul", {}, target="sm_90a").warp_spec == _kernel(GEMM, "matmul").warp_spec


def _bad(kernel, **changes):
    return dataclasses.replace(kernel, warp_spec=dataclasses.replace(kernel.warp_spec, **changes))


@pytest.mark.parametrize("change,message", [
    (lambda ws: {"loop": 0}, "the warp specialization's loop 0 is not a pipelined loop of the kernel's body"),
    (lambda ws: {"loads": (dataclasses.replace(ws.loads[0], index=3),) + ws.loads[1:]},
     "the producer's copy 3 is not a copy into 'As'"),
    (lambda ws: {"loads": (dataclasses.replace(ws.loads[0], rows=64),) + ws.loads[1:]},
     "the producer's stage buffer 'As' is not a shared 64 x 64 tile"),
    (lambda ws: {"loads": (dataclasses.replace(ws.loads[0], tensor_map=3),) + ws.loads[1:]},
     "the producer's copy 0 names tensor map 3 of 3"),
    (lambda ws: {"consumer": (1, 4)}, "the consumers' statements 1..4 are not after the producer's copies in the loop"),
    (lambda ws: {"store": dataclasses.replace(ws.store, index=0)}, "the staged store 0 is not a copy after the ring's loop"),
    (lambda ws: {"tile_order": ir.TileOrder(group=0)}, "the warp specialization has no stages, or a tile order of no rows or blocks"),
    (lambda ws: {"reduces": (ir.BulkReduce(index=3, tensor_map=0, offset=149504, nbytes=32768),)},
     "the bulk reduction 3 is not a parallel loop of one atomic add among the consumers' statements"),
])
def test_the_verifier_checks_what_the_record_names(change, message):
    kernel = _kernel(GEMM, "matmul")
    with pytest.raises(ir.IRVerifyError) as info:
        ir.verify(_bad(kernel, **change(kernel.warp_spec)))
    assert str(info.value) == f"kernel 'matmul': {message}"


# the example gemm, its epilogue also storing A's staged tile (D = As)
READS_A_STAGE_AFTER = GEMM.read_text().replace("C: T[M, N],", "C: T[M, N], D: T[M, N],").replace(
    "        copy(acc, C[by * BM, bx * BN])",
    "        copy(acc, C[by * BM, bx * BN])\n        for i, j in parallel(BM, BK):\n"
    "            D[by * BM + i, bx * BN + j] = As[i, j]")


def test_a_loop_whose_staged_tile_is_read_after_it_is_not_specialized(tmp_path):
    # after the ring a staged buffer is its first stage again, which a persistent kernel's
    # producer is already refilling (tests/schedule/test_warpspec_interp.py runs that record)
    path = tmp_path / "reads_a_stage_after.tl"
    path.write_text(READS_A_STAGE_AFTER)
    assert _kernel(path, "matmul").warp_spec is None
    path.write_text(READS_A_STAGE_AFTER.replace("= As[i, j]", "= T(acc[i, j])"))
    assert _kernel(path, "matmul").warp_spec is not None


def test_the_consumer_is_every_statement_of_the_loop_after_its_loads():
    """DeepGEMM's 2xAcc port: the scale's `let` and its sync, the gemm, the promotion and the
    clear of the partial accumulator.  The consumer is a range of the loop's body; a ring_split
    that dropped the sync after the `let` (as the cp.async ring may: warpspec.after_scalar_lets)
    shortened it by one and left clear(C_local) out (relative error 0.71 on the H200)."""
    k = _kernel(ROOT / "tests" / "ports" / "deepgemm_fp8_2xacc.tl", "tl_gemm")
    ws = k.warp_spec
    body = k.body[ws.loop].body
    assert [type(s).__name__ for s in body[ws.consumer[0]:ws.consumer[1]]] == ["Assign", "Sync", "Gemm", "Parallel", "Fill"]
    assert all(isinstance(s, ir.Sync) for s in body[ws.consumer[1]:])


FUSED_BWD = ROOT / "bench" / "attention_bwd_fused.tl"


def _grid1(arch: str = "sm_90a", **constants) -> ir.Kernel:
    """The one-grid backward's grid over key blocks (its second launch), at head dim 128."""
    return tlc.load(str(FUSED_BWD), target="cpu").kernels["flash_bwd_fused"].scheduled_grids({"D": 128, **constants}, arch)[1]


@pytest.mark.parametrize("det,stages", [(False, 2), (True, 2), (False, 3)])
def test_a_tile_add_in_the_consumers_loop_goes_by_the_tmas_bulk_reduction(det, stages):
    """attention's one-grid backward: the step's dQ partial (a 64 x 128 f32 wgmma accumulator
    of two warpgroups side by side) added into the f32 workspace: staged in 32 KB after the
    ring's barriers (1024-aligned), two such buffers the steps take in turn where they fit (a
    2-deep ring, 215 KB; not beside a 3-deep one, 247 KB), through a map of dq_acc whose box is
    64 rows by one 128-byte segment, a map of the stores' kind (tl_tma's bit 1)."""
    k = _grid1(DETERMINISTIC=det, KV_STAGES=stages)
    ws = k.warp_spec
    index, offset, buffers = 21 if det else 18, 149504 if stages == 2 else 182272, 2 if stages == 2 else 1
    assert ws.reduces == (ir.BulkReduce(index=index, tensor_map=4, offset=offset, nbytes=32768 * buffers, buffers=buffers),)
    assert ws.ring_end <= offset and ws.staging_end == offset + 32768 * buffers
    m = ws.tensor_maps[4]
    assert (m.param, m.box_rows, m.box_cols, m.store, m.swizzle) == ("dq_acc", 64, 32, True, True)
    text = ir.print_kernel(k)
    two = ", two buffers the steps take in turn" if buffers == 2 else ""
    assert (f"    bulk reduce: statement {index}'s atomic_add of dq staged @{offset} ({32768 * buffers} bytes{two}), added "
            "into dq_acc by one thread through #4 (cp.reduce.async.bulk.tensor .add), the buffer rewritten once the add has "
            "read it" + ("; its turn counted once the add is complete" if det else "") + "\n") in text
    assert "    # consumers: staged in shared memory, added by the TMA's bulk reduction (map #4)\n    for atomic_add_i" in text


def test_a_tile_add_of_a_fragment_other_than_a_wgmma_accumulator_stays_reds():
    # the same loop on sm_80 has no ring; split-K's add after its loop is not the consumers'
    assert _grid1("sm_80").warp_spec is None
    splitk = _kernel(ROOT / "tests" / "programs" / "tile_atomics.tl", "splitk")
    assert splitk.warp_spec is None or splitk.warp_spec.reduces == ()


def test_im2col_cluster_two_puts_an_im2col_ring_in_clusters(monkeypatch):
    """schedule/warpspec.py IM2COL_CLUSTER (1: an im2col ring keeps one block a cluster unless it
    is a long ring of wide w tiles, long_wide_ring): at 2 std.conv's conv2d (3 x 3 over 64
    channels, a short ring) runs in clusters of 2, w's tile multicast; the switch is read where
    the plan is made."""
    from tlc.schedule import warpspec

    def conv():
        k = tlc.load(str(ROOT / "stdlib" / "conv.tl"), target="cpu").kernels["conv2d"]
        ws = k.scheduled({"C": 64, "K": 3}, "sm_90a").warp_spec
        return ws.tile_order.cluster, [(x.buffer, x.multicast) for x in ws.loads]
    monkeypatch.setattr(warpspec, "IM2COL_CLUSTER", 1)
    assert conv() == (1, [("xs", False), ("ws", False)])
    monkeypatch.setattr(warpspec, "IM2COL_CLUSTER", 2)
    assert conv() == (2, [("xs", False), ("ws", True)])
