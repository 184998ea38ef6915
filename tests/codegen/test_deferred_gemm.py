"""The deferred gemm of a warp-specialized loop (ir.DeferredGemm) as C: std.attention's P @ V of
iteration it - 1 issued after iteration it's Q @ K.T, on its own stage, the first waited for
with the deferred one in flight (wgmma.wait_group 1), the deferred one before the probabilities
are rewritten, the last after the loop; and in SASS: HGMMA for both products, the wait for one
group, no local memory."""
import re
import sys
from pathlib import Path

import pytest

from kit_codegen import generated_source
from nvcc import cubin_sass

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "stdlib"))
from attention_kit import p_in_shared  # noqa: E402

SRC = (Path(__file__).resolve().parents[2] / "stdlib" / "attention.tl").read_text()


def cuda(**constants) -> str:
    return generated_source(SRC, "flash_fwd", arch="sm_90a", constants={"D": 128, **constants}).source


def test_the_loop_issues_both_products_and_waits_for_each_where_its_results_are_needed():
    """The two consumer warpgroups take turns issuing (ping-pong: named barriers 3 and 4), the
    first iteration peeled, so that the loop issues the deferred gemm every time; the output's
    rescale (DeferredGemm.before_issue) runs between the two issues, under S = Q @ K.T, and after
    the loop before the last P @ V (FlashAttention 3's rescale_o)."""
    text = cuda(STAGES=3)
    loop = text[text.index("tl::setmaxnreg_inc"):]
    issue_s = "tl::gemm_wgmma_issue<tl_flash_fwd_wgmma_n128_f16, half, 128, 128, 128, true>(q_tile, (k_tile + ((tl_it) % 3)"
    turn, other = "tl::bar_sync_named(3 + threadIdx.x / 128, 256);", "tl::bar_arrive_named(4 - threadIdx.x / 128, 256);"
    steps = [
        "if (threadIdx.x < 128 && tl_n > 0) tl::bar_arrive_named(3, 256);",
        "if (tl_n > 0) {  // the first iteration: no deferred gemm before it",
        turn, issue_s, other,
        "tl::wgmma_wait<0>();  // this iteration's first gemm is done",
        "for (int tl_k = 1; tl_k < tl_n; ++tl_k, ++tl_it) {",
        turn, issue_s,
        "{  // the deferred gemm of iteration tl_it + 2, on its stage",
        "acc[tl_r] = (acc[tl_r] * rescale",
        "tl::gemm_wgmma_rs_issue<tl_flash_fwd_wgmma_n128_f16_nmajor_rs, half, 128, 128, false>(probs, "
        "(v_tile + ((tl_it + 2) % 3)",
        other,
        "tl::wgmma_wait<1>();  // this iteration's first gemm is done",
        "reduce_max(scores -> row_max",
        "tl::wgmma_wait_in_place<0>();  // the deferred gemm is done",
        "probs[tl_r] = tl::cvt<half>(scores[tl_r]);",
        "if (threadIdx.x % 32 == 0) tl::mbar_arrive(tl_empty + (tl_it + 2) % 3);",
        "if (threadIdx.x < 128 && tl_n > 0) tl::bar_sync_named(3, 256);",
        "if (tl_n > 0) {  // the deferred gemm of iteration tl_it - 1, on its stage",
        "acc[tl_r] = (acc[tl_r] * rescale",
        "tl::gemm_wgmma_rs<tl_flash_fwd_wgmma_n128_f16_nmajor_rs, half, 128, 128, false>(probs, (v_tile + ((tl_it - 1) % 3)",
    ]
    at, pos = [], 0
    for x in steps:
        pos = loop.find(x, pos)
        assert pos != -1, x
        at.append(pos)
    assert loop.count("gemm_wgmma_rs") == 2 and loop.count(turn) == 2 and loop.count(other) == 2
    assert loop.count("acc[tl_r] = (acc[tl_r] * rescale") == 2  # not at the peeled iteration's end


def test_one_consumer_warpgroup_takes_no_turns():
    """Ping-pong needs two warpgroups of their own rows: one (BM = 64) takes no turns; its first
    iteration is peeled as ping-pong's is (a conditional issue of the deferred gemm in the loop
    made ptxas wait for the first gemm there: C7517), so the loop waits for one group always."""
    loop = cuda(STAGES=3, BM=64, THREADS=128)
    loop = loop[loop.index("tl::setmaxnreg_inc"):]
    assert "bar_sync_named(3" not in loop and "bar_arrive_named" not in loop
    assert "if (tl_k > 0) tl::wgmma_wait" not in loop
    first = loop.index("if (tl_n > 0) {  // the first iteration: no deferred gemm before it")
    assert first < loop.index("tl::wgmma_wait<0>();  // this iteration's first gemm is done") \
        < loop.index("for (int tl_k = 1; tl_k < tl_n; ++tl_k, ++tl_it) {") < loop.index("tl::wgmma_wait<1>();")


def test_three_consumer_warpgroups_take_turns_in_order():
    """FlashAttention 3's 192-row tiles at head dim 64: three warpgroups of their own rows issue
    in warpgroup order, each syncing on its own turn barrier (9 + its index) and arriving on the
    next one's; the first's turn comes first, and it takes the last one's final arrival after
    the loop."""
    loop = cuda(D=64, BM=192, THREADS=384, BN=96)
    loop = loop[loop.index("tl::setmaxnreg_inc<"):]
    order = ["if (threadIdx.x < 128 && tl_n > 0) tl::bar_arrive_named(9, 256);",
             "tl::bar_sync_named(9 + threadIdx.x / 128, 256);  // this warpgroup's turn to issue",
             "tl::bar_arrive_named(9 + (threadIdx.x / 128 + 1) % 3, 256);",
             "for (int tl_k = 1; tl_k < tl_n; ++tl_k, ++tl_it) {",
             "tl::bar_sync_named(9 + threadIdx.x / 128, 256);  // this warpgroup's turn to issue",
             "tl::bar_arrive_named(9 + (threadIdx.x / 128 + 1) % 3, 256);",
             "if (threadIdx.x < 128 && tl_n > 0) tl::bar_sync_named(9, 256);"]
    pos = 0
    for x in order:
        pos = loop.index(x, pos) + 1
    assert "bar_sync_named(3 + threadIdx.x" not in loop  # (two warpgroups' turns: 3 and 4)


def test_two_stages_defer_it_on_barriers_of_vs_own():
    # the deferred gemm holds V's stage one iteration longer: on two stages V has its own full and
    # empty barriers (WarpSpecialization.late_loads), K's stage is freed once S = Q @ K.T is done
    # (tests/codegen/test_attention_fwd_overlap.py has the order)
    loop = cuda(STAGES=2)
    loop = loop[loop.index("for (int tl_k = 1; tl_k < tl_n; ++tl_k, ++tl_it) {"):]
    pv = loop.index("tl::gemm_wgmma_rs_issue<tl_flash_fwd_wgmma_n128_f16_nmajor_rs")
    assert loop.index("// the deferred gemm of iteration tl_it + 1, on its stage") < pv < loop.index("tl::wgmma_wait<1>();")
    assert "(v_tile + ((tl_it + 1) % 2) * 16384), acc)" in loop[pv:pv + 200]


@pytest.mark.nvcc
def test_sass_has_hgmma_for_both_products_one_group_in_flight_and_no_local_memory(tmp_path):
    sass, log = cubin_sass(cuda(STAGES=3), "sm_90a", tmp_path, "flash")
    assert re.search(r"HGMMA\.64x128x16\.F32 R\d+, gdesc", sass)  # Q @ K.T from shared memory
    assert re.search(r"HGMMA\.64x128x16\.F32 R\d+, R\d+, gdesc", sass)  # P @ V, P from registers
    assert "WARPGROUP.DEPBAR.LE gsb0, 0x1" in sass
    assert not re.search(r"\b(LDL|STL)\b", sass) and " 0 bytes spill stores" in log
    # the turns' named barriers, and no wgmma serialized around them (ptxas's C7514)
    assert re.search(r"BAR\.SYNC\.DEFER_BLOCKING R\d+, 0x100", sass) and re.search(r"BAR\.ARV R\d+, 0x100", sass)
    assert "C7514" not in log


@pytest.mark.nvcc
def test_sass_of_three_consumer_warpgroups_has_no_local_memory_and_no_injected_wait(tmp_path):
    # 192 x 96 tiles at head dim 64 in 160 registers a consumer thread (setmaxnreg at 512 threads)
    sass, log = cubin_sass(cuda(D=64, BM=192, THREADS=384, BN=96), "sm_90a", tmp_path, "flash3")
    assert re.search(r"HGMMA\.64x96x16\.F32 R\d+, gdesc", sass) and re.search(r"HGMMA\.64x64x16\.F32 R\d+, R\d+, gdesc", sass)
    assert not re.search(r"\b(LDL|STL)\b", sass) and " 0 bytes spill stores" in log
    assert not re.search(r"C75\d\d", log), log


@pytest.mark.slow  # nvcc builds of an off-by-default switch (untimed): CI's slow run
@pytest.mark.nvcc
@pytest.mark.parametrize("passed", [False, "warp_specialized"])
def test_sass_of_three_warpgroups_with_p_in_shared_memory_has_no_local_memory_in_its_loops(tmp_path, monkeypatch, passed):
    # FlashAttention 3's 192 x 192 tile at head dim 64, P through shared memory: 96 score
    # registers a thread, no P held in registers, within 160 (bench/results/q_A_fwd_persistent-h200-twentyeighth.txt).
    # With schedule/host_dims.py's HOST_DIMS off (its default), one scalar goes through local
    # memory, outside the loops: H // HK, computed at the start for hk and again for the LSE
    # store's axis HK * (H // HK) after the loop (23fe47f), which ptxas keeps from the one to the
    # other across the warpgroups' register reallocation (12 bytes: its three stores on the paths
    # of tl::floordiv at the start, a load there and one at the end).  With the launch passing
    # that axis (HOST_DIMS "warp_specialized") nothing is spilled at all.
    from tlc.schedule import host_dims

    monkeypatch.setattr(host_dims, "HOST_DIMS", passed)
    src = p_in_shared(SRC)
    source = generated_source(src, "flash_fwd", arch="sm_90a",
                              constants={"D": 64, "BM": 192, "THREADS": 384, "BN": 192, "STAGES": 2}).source
    assert ("int tl_dim0" in source) is bool(passed)
    sass, log = cubin_sass(source, "sm_90a", tmp_path, "flash3p")
    assert re.search(r"HGMMA\.64x192x16\.F32 R\d+, gdesc", sass) and re.search(r"HGMMA\.64x64x16\.F32 R\d+, gdesc", sass)
    first, last = sass.index("HGMMA."), sass.rindex("HGMMA.")
    assert not re.search(r"\b(LDL|STL)\b", sass if passed else sass[first:last])
    spilled = re.search(r"(\d+) bytes spill stores", log)
    assert spilled and int(spilled.group(1)) <= (0 if passed else 12), log
    assert not re.search(r"C75\d\d", log), log
