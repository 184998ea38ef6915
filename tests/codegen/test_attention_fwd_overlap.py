"""std.attention's flash_fwd on sm_90a, where the tensor cores' work overlaps the rest:
- the deferred P @ V (issued with the next Q @ K.T) is waited for where the code generator puts
  the wait, after the softmax (`tl::wgmma_wait_in_place`): ptxas had moved the plain wait up to
  the scores' wait, so each warpgroup waited for both products before its softmax (FlashAttention
  3's intra-warpgroup overlap lost); in SASS every exponential of the loop now stands between
  the two waits;
- the consumers copy Q after the ring's setup (`WarpSpecialization.late_copies`), meeting at
  their own barrier, so that the producer's first K and V tiles load while Q does (flash_fwd_sparse,
  whose tiles' lengths are the block mask's);
- on two stages V has barriers of its own (`WarpSpecialization.late_loads`): the producer waits
  for V's stage apart from K's, the consumers free K's once S = Q @ K.T is done and V's once the
  deferred P @ V is, so the deferral needs no third stage (FlashAttention 3's K and V pipelines);
- flash_fwd as the grid of an author's persistent walk, whose producer copies each tile's Q
  through the TMA (`tile_loads`), the tiles in pairs from both ends of x where causal (std's grid
  keeps one tile a block: it ran faster on the H200)."""
import re
from pathlib import Path

import pytest

from kit_codegen import generated_source, scheduled_source
from nvcc import cubin_sass

from tlc.ir import print_kernel
from tlc.ir.warpspec import warp_spec_problem

ROOT = Path(__file__).resolve().parents[2]
SRC = (ROOT / "stdlib" / "attention.tl").read_text()


def cuda(kernel="flash_fwd", **constants) -> str:
    return generated_source(SRC, kernel, arch="sm_90a", constants={"D": 128, **constants}).source


def scheduled(kernel="flash_fwd", **constants):
    return scheduled_source(SRC, kernel, "sm_90a", {"D": 128, **constants})[0]


def walk_cuda(**constants) -> str:
    """flash_fwd as the grid of an author's persistent walk reaches warp specialization
    (Kernel.persistent_walk): the pass run again on it, then the code generator."""
    from dataclasses import replace

    from tlc import targets
    from tlc.codegen import generate
    from tlc.schedule.warpspec import specialize_warps
    k, sources = scheduled_source(SRC, "flash_fwd", "sm_90a", {"D": 128, **constants})
    k = specialize_warps(replace(k, warp_spec=None, persistent_walk=True), targets.get("sm_90a"))
    return generate(k, "sm_90a", sources=sources).source


def test_the_deferred_gemm_is_waited_for_in_place_after_the_softmax():
    text = cuda()
    loop = text[text.index("for (int tl_k = 1; tl_k < tl_n; ++tl_k, ++tl_it) {"):]
    softmax = loop.index("reduce_sum(scores -> tile_sum")
    wait = loop.index("tl::wgmma_wait_in_place<0>();  // the deferred gemm is done")
    assert softmax < wait < loop.index("probs[tl_r] = tl::cvt<half>(scores[tl_r]);")
    assert "wgmma_wait_in_place" in text[:text.index("for (int tl_k = 1;")]  # the peeled first iteration too


def _in_order(text: str, steps) -> None:
    pos = 0
    for x in steps:
        pos = text.find(x, pos)
        assert pos != -1, x


def test_two_stages_free_k_after_the_scores_and_v_after_the_deferred_gemm():
    text = cuda(STAGES=2)
    assert "tl::mbar_init(tl_full_late + tl_s, (tl_tma & 1) ? 1 : 128);" in text
    producer = text[text.index("// the producer warpgroup"):text.index("tl::setmaxnreg_inc")]
    for path in producer.split("} else {  // the host could not encode a tensor map"):  # the TMA's and the element copies
        _in_order(path, ["tl::mbar_wait(tl_empty + tl_stage, ((tl_it / 2) & 1) ^ 1);", "(k_tile + ", "tl_full + tl_stage",
                         "tl::mbar_wait(tl_empty_late + tl_stage, ((tl_it / 2) & 1) ^ 1);", "(v_tile + ",
                         "tl_full_late + tl_stage"])
    loop = text[text.index("for (int tl_k = 1; tl_k < tl_n; ++tl_k, ++tl_it) {"):]
    _in_order(loop, ["tl::mbar_wait(tl_full + tl_stage, (tl_it / 2) & 1);",
                     "tl::mbar_wait(tl_full_late + (tl_it + 1) % 2, ((tl_it - 1) / 2) & 1);",
                     "tl::bar_sync_named(3 + threadIdx.x / 128, 256);", "gemm_wgmma_issue<", "gemm_wgmma_rs_issue<",
                     "tl::wgmma_wait<1>();", "if (threadIdx.x % 32 == 0) tl::mbar_arrive(tl_empty + tl_stage);",
                     "tl::wgmma_wait_in_place<0>();",
                     "if (threadIdx.x % 32 == 0) tl::mbar_arrive(tl_empty_late + (tl_it + 1) % 2);"])
    after = loop[loop.index("if (threadIdx.x < 128 && tl_n > 0) tl::bar_sync_named(3, 256);"):]
    _in_order(after, ["tl::mbar_wait(tl_full_late + (tl_it - 1) % 2, ((tl_it - 1) / 2) & 1);", "tl::gemm_wgmma_rs<"])
    assert "tl_full_late" not in cuda()  # three stages: one barrier pair a stage


@pytest.mark.nvcc
@pytest.mark.parametrize("constants", [{}, {"STAGES": 2}], ids=["3-stages", "2-stages"])
def test_sass_the_exponentials_run_between_the_scores_wait_and_the_deferred_gemms(tmp_path, constants):
    """In the loop (from the wait that leaves P @ V in flight to the next full wait) stand all of
    a thread's 64 exponentials of a 128 x 128 block (and the two of its rows' rescales)."""
    sass, log = cubin_sass(cuda(**constants), "sm_90a", tmp_path, "flash_overlap")
    body = sass[sass.index("WARPGROUP.DEPBAR.LE gsb0, 0x1"):]
    between = body[:body.index("WARPGROUP.DEPBAR.LE gsb0, 0x0")]
    assert len(re.findall(r"MUFU\.EX2", between)) >= 64
    assert "BPT.TRAP" in between  # the branch that ends ptxas's block, never taken
    assert not re.search(r"\b(LDL|STL)\b", sass) and "C7514" not in log


def test_the_output_goes_through_qs_tile_and_the_tma(monkeypatch):
    from tlc.schedule import warpspec
    monkeypatch.setattr(warpspec, "GRID_TILE_LOADS", False)  # one tile a block (the default; session 28 timed the walk slower)
    text = cuda()
    start = text.index(": copy(acc, O[b, h, bx * BM, 0])")  # (the line's number follows the module's comments)
    epilogue = text[start:text.index("#ifndef __CUDACC_RTC__", start)]
    _in_order(epilogue, ["if (tl_tma & 2) {", "half* tl_stage_c = reinterpret_cast<half*>(tl_smem + 196608);",
                         "tl::copy_f2s_staged<tl_flash_fwd_layout_0, float, half, 128, 128>(tl_stage_c, acc);",
                         "tl::fence_proxy_async();",
                         "if (threadIdx.x % 128 == 0) tl::tma_store_tile<half, 64, 128, 128, 4>(&tl_map2, tl_stage_c, ",
                         "} else {", "tl::copy_f2g<tl_flash_fwd_layout_0>((O + ", "copy(row_sum, LSE",
                         "if ((tl_tma & 2) && threadIdx.x % 128 == 0) tl::tma_store_wait_read();"])
    assert "tl::tma_store_wait();  // this warpgroup's last store is done" not in text  # (a persistent kernel's)


def test_the_consumers_copy_q_after_the_rings_setup():
    # flash_fwd_sparse: its tiles' lengths are the block mask's (flash_fwd's Q: the tile loads, below)
    text = cuda("flash_fwd_sparse")
    ring = text.index("tl::setmaxnreg_inc")
    before = text[text.index("extern \"C\" __global__"):ring]
    assert "copy_g2s<half, 128, 128, 256" not in before and "// (the consumers make this copy after the ring's setup)" in before
    assert "// sync: the consumers' late copies meet at their own barrier" in before
    after = text[ring:]
    _in_order(after, ["tl::copy_g2s<half, 128, 128, 256, 0, 128, false>(q_tile, ", "tl::fence_proxy_async();",
                      "tl::bar_sync_named(5, 256);  // the consumers' copies before they read them",
                      "if (threadIdx.x < 128 && tl_n > 0) tl::bar_arrive_named(3, 256);"])


def test_emit_ir_says_where_the_consumers_copy_q():
    k = scheduled("flash_fwd_sparse")
    assert k.warp_spec.late_copies and warp_spec_problem(k) is None
    text = print_kernel(k)
    assert ("# consumers only (threads 0..255), after the ring's setup while the producer's first copies load; "
            "they meet at bar.sync 5 after it\n  copy Q[") in text
    assert "# left out: the consumers' late copies meet at their own barrier\n  sync\n" in text


def test_the_verifier_names_late_copies_that_are_not_the_consumers():
    from dataclasses import replace
    k = scheduled("flash_fwd_sparse")
    bad = replace(k, warp_spec=replace(k.warp_spec, late_copies=(k.warp_spec.loop - 1,)))
    assert warp_spec_problem(bad) == (f"the consumers' late copies [{k.warp_spec.loop - 1}] are not copies among "
                                      "their statements before the loop")


def test_a_copy_into_registers_before_the_loop_keeps_the_copies_in_place():
    """flash_bwd's dQ grid also loads each row's log-sum-exp and dO . O into registers before its
    loop: its copies keep their place (and the block's barrier after them); the dK/dV grid, whose
    consumers only copy K and V into shared memory there, copies them late."""
    from tlc.driver import check_source
    from tlc.schedule import schedule_grids
    r = check_source(SRC, "t.tl")
    grids = {g.name: g for g in schedule_grids(r.program, "flash_bwd", {"D": 128}, target="sm_90a")}
    dq, dkv = grids["flash_bwd_grid1"].warp_spec, grids["flash_bwd_grid2"].warp_spec
    assert dq.consumer_only and dq.late_copies == ()
    assert dkv.late_copies == dkv.consumer_only and len(dkv.late_copies) == 2


@pytest.mark.parametrize("causal", [False, True])
def test_tile_loads_the_producer_copies_q_once_a_tile_of_the_persistent_walk(causal, monkeypatch):
    """Not causal, every tile runs cdiv(SK, BN) iterations: the kernel walks the tiles, its producer
    copies each tile's Q through the TMA after the tile's first K and V, once the consumers'
    loop of the last tile is done (tl_tile_full + 1), and the consumers wait for it (tl_tile_full)
    before their loop; the deferred gemm's last stage is released for the next tile's copies.
    Causal: the lengths grow with bx, each block takes two tiles at a time from both ends of bx."""
    from tlc.schedule import warpspec
    monkeypatch.setattr(warpspec, "DYNAMIC_TILES", False)  # pairs (the dynamic order: tests/schedule/test_dynamic_tiles.py)
    text = walk_cuda(CAUSAL=causal)
    if causal:
        assert ("for (int tl_tile = 2 * blockIdx.x; tl_tile < tl_tiles_x * tl_tiles_y * tl_tiles_z; "
                "tl_tile += (tl_tile & 1) ? 2 * gridDim.x - 1 : 1) {") in text
        assert "tl::paired_tile(tl_tile, tl_tiles_x, tl_tiles_y, bx, h, b);" in text
    else:
        assert "for (int tl_tile = blockIdx.x; tl_tile < tl_tiles_x * tl_tiles_y * tl_tiles_z; tl_tile += gridDim.x) {" in text
        assert "tl::persistent_tile<8>(tl_tile, tl_tiles_x, tl_tiles_y, bx, h, b);" in text
    assert "copy_g2s<half, 128, 128, 256" not in text  # no consumer copies Q
    init = ["tl::mbar_init(tl_tile_full, (tl_tma & 1) ? 1 : 128);",
            "tl::mbar_init(tl_tile_full + 1, 8);  // one arrival per consumer warp", "tl::fence_barrier_init();"]
    producer = ["tl::tma_load_tile<half, 128, 128, 4>((v_tile + ((tl_it) % 3) * 16384), &tl_map2, tl_full + tl_stage, ",
                "if (tl_k == 0) {  // this tile's loads, once the consumers are done with the last tile's",
                "tl::mbar_wait(tl_tile_full + 1, (tl_tq & 1) ^ 1);", "tl::mbar_arrive_expect_tx(tl_tile_full, 32768);",
                "tl::tma_load_tile<half, 128, 128, 4>(q_tile, &tl_map0, tl_tile_full, 0, (bx * 128), {b, h});",
                "tl_tq += tl_n > 0;",
                # the generic build's: every producer thread copies Q's elements and arrives
                "tl::copy_g2s_elements<half, 128, 128, 128, 0, 128>(q_tile, ", "tl::mbar_arrive(tl_tile_full);"]
    # the last iteration frees Q once its S = Q @ K.T is done (WarpSpecialization.tile_done): the
    # next tile's loads under its softmax, its P @ V and the epilogue
    free = ("tl::wgmma_wait<1>();  // this iteration's first gemm is done", "tl::fence_registers<64>(scores);",
            "if (tl_k == tl_n - 1 && threadIdx.x % 32 == 0) tl::mbar_arrive(tl_tile_full + 1);  // the tile loads are free")
    assert "\n".join(free) in "\n".join(line.strip() for line in text.splitlines())
    assert "if (tl_n > 0 && threadIdx.x % 32 == 0) tl::mbar_arrive(tl_tile_full + 1);" not in text
    consumers = ["tl::setmaxnreg_inc", "if (tl_n > 0) tl::mbar_wait(tl_tile_full, tl_tq & 1);",
                 "if (threadIdx.x < 128 && tl_n > 0) tl::bar_arrive_named(3, 256);",
                 "if (tl_k == tl_n - 1 && threadIdx.x % 32 == 0) tl::mbar_arrive(tl_tile_full + 1);",
                 "if (threadIdx.x < 128 && tl_n > 0) tl::bar_sync_named(3, 256);",
                 "// the deferred gemm of iteration tl_it - 1, on its stage",
                 # its stage holds the output (StagedStore.in_stage): released after the loop only
                 # where the store's map did not encode, else once the store has read it
                 "if (!(tl_tma & 2) && tl_n > 0 && threadIdx.x % 32 == 0) tl::mbar_arrive(tl_empty + (tl_it + 2) % 3);",
                 "tl_tq += tl_n > 0;",
                 "if ((tl_tma & 2) && tl_n > 0) {  // through the ring's last stage: the TMA stores this warpgroup's rows",
                 "const int tl_last = (tl_it + 2) % 3;  // the stage of the tile's last iteration",
                 "half* tl_stage_c = reinterpret_cast<half*>(tl_smem + 0 + tl_last * 32768);",
                 # every consumer warp's last S = Q @ K.T is done: K's stage is free to write
                 "tl::mbar_wait(tl_tile_full + 1, (tl_tq - 1) & 1);",
                 "tl::copy_f2s_staged<tl_flash_fwd_layout_0, float, half, 128, 128>(tl_stage_c, acc);",
                 "tl::fence_proxy_async();", "tl::bar_sync_named(1 + tl_group, 128);",
                 "tl::tma_store_tile<half, 64, 128, 128, 4>(&tl_map3, tl_stage_c, tl_group * 64, 0, (bx * 128) + tl_group * 64, {b, h});",
                 "tl::tma_store_wait_read();  // it has read the stage: the producer may fill it",
                 "tl::mbar_arrive_count(tl_empty + tl_last, 4);  // for this warpgroup's four warps",
                 "} else {", "tl::copy_f2g<"]
    pos = 0
    for x in init + producer + consumers:
        pos = text.find(x, pos)
        assert pos != -1, x


@pytest.mark.nvcc
def test_sass_the_persistent_kernel_loads_q_by_the_tma_without_local_memory(tmp_path):
    sass, log = cubin_sass(walk_cuda(), "sm_90a", tmp_path, "flash_tile_loads")
    assert len(re.findall(r"UTMALDG", sass)) >= 3  # K, V and Q
    assert "UTMASTG" in sass  # O, staged in K's last stage
    assert not re.search(r"\b(LDL|STL)\b", sass) and "C7514" not in log


def test_without_a_deferred_gemm_the_tile_loads_are_freed_after_the_loop():
    """D = 256 on two stages of 64 keys: no deferred P @ V (it would hold a stage one iteration
    longer), so no statement is recorded as Q's last reader and the consumers free Q after their
    loop, each warp once."""
    from dataclasses import replace

    from tlc import targets
    from tlc.schedule.warpspec import specialize_warps
    k = scheduled(D=256, BN=64, STAGES=2)
    k = specialize_warps(replace(k, warp_spec=None, persistent_walk=True), targets.get("sm_90a"))
    assert k.warp_spec.tile_loads and k.warp_spec.deferred is None and k.warp_spec.tile_done is None
    text = walk_cuda(D=256, BN=64, STAGES=2)
    assert "tl_k == tl_n - 1" not in text
    assert text.count("if (tl_n > 0 && threadIdx.x % 32 == 0) tl::mbar_arrive(tl_tile_full + 1);") == 1
