"""A warp-specialized ring's epilogue of several whole accumulators alike into one tensor (std.gemm's
matmul_f8_blockscaled at BN = 256: a tile's two 128-column halves) staged one after another beside
the ring and stored by the TMA through one map (ir.StagedStore.more), where they fit; where one
part's buffer alone fits (4 stages: 192 KB of ring), all in that one in turn (StagedStore.reuse)."""
import re
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from tlc import ir
from tlc.codegen import generate
from tlc.driver import check_file
from tlc.dtypes import F32
from tlc.interp import run_kernel
from tlc.ir.printer import print_kernel
from tlc.ir.warpspec import warp_spec_problem
from tlc.schedule import schedule

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "stdlib"))  # the shared kits
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "codegen"))
from precision_kit import cases  # noqa: E402
from stdlib_kit import GEMM_PATH  # noqa: E402


def _kernel(**consts) -> ir.Kernel:
    r = check_file(GEMM_PATH)
    return schedule(r.program, "matmul_f8_blockscaled", consts, target="sm_90a")


def _source(k: ir.Kernel) -> str:
    r = check_file(GEMM_PATH)
    return generate(k, "sm_90a", sources=r.sources, line_directives=False).source


def test_the_two_halves_are_staged_one_after_the_other():
    k = _kernel(BN=256, stages=3)
    st = k.warp_spec.store
    assert (st.offset, st.nbytes) == (148480, 32768) and len(st.more) == 1
    assert [k.body[i].src.name for i in (st.index, *st.more)] == ["acc", "acc2"]
    assert k.warp_spec.staging_end == 148480 + 2 * 32768
    text = print_kernel(k)
    assert "epilogue: acc staged @148480 (32768 bytes), acc2 @181248, 64 rows per warpgroup stored through #2" in text
    assert text.count("# consumers: staged in shared memory, stored by the TMA (map #2)") == 2


def test_where_only_one_fits_beside_the_ring_the_halves_take_it_in_turn():
    k = _kernel(BN=256, stages=4)  # a ring of 192 KB: one 32 KB part fits beside it, not two
    st = k.warp_spec.store
    assert st.reuse and len(st.more) == 1 and (st.offset, st.nbytes) == (197632, 32768)
    assert k.warp_spec.staging_end == 197632 + 32768 <= 232448
    assert "epilogue: acc staged @197632 (32768 bytes), acc2 @197632 (once the store before has read it), " \
        "64 rows per warpgroup stored through #2" in print_kernel(k)
    body = _source(k)
    body = body[body.index("if (tl_valid)"):]
    first, second = re.split(r"\n\s*// \d+: copy\(acc2", body)[:2]
    for part, why in ((first, "the last tile's store has read the buffer"), (second, "the last part's store has read it")):
        assert "tl_smem + 197632" in part
        assert f"if (threadIdx.x % 128 == 0) tl::tma_store_wait_read();  // {why}" in part
        assert part.count("tl::bar_sync_named(1 + tl_group, 128);") == 2


def test_one_accumulator_is_staged_as_before():
    st = _kernel().warp_spec.store
    assert st.more == () and st.nbytes == 32768


def test_the_second_half_waits_for_nothing_the_first_did_not():
    body = _source(_kernel(BN=256, stages=3))
    body = body[body.index("if (tl_valid)"):]
    first, second = re.split(r"\n\s*// \d+: copy\(acc2", body)[:2]
    assert "tl_smem + 148480" in first and "tl_smem + 181248" in second
    assert first.count("tl::tma_store_wait_read()") == 1 and "tma_store_wait_read" not in second
    assert first.count("tl::bar_sync_named(1 + tl_group, 128);") == 2
    assert second.count("tl::bar_sync_named(1 + tl_group, 128);") == 1
    assert "tl::tma_store_tile<__nv_bfloat16, 64, 128, 128, 2>(&tl_map2, tl_stage_c, tl_group * 64, ((bx * 256) + 128)," \
        in second


@pytest.mark.parametrize("stages", [3, 4])
def test_no_local_memory_and_four_tma_stores(tmp_path, stages):
    from nvcc import cubin_sass

    sass, log = cubin_sass(_source(_kernel(BN=256, stages=stages)), "sm_90a", tmp_path)
    assert "0 bytes spill stores" in log, log
    assert len(re.findall(r"\bUTMASTG\b", sass)) == 4  # two 64-column boxes a half


@pytest.mark.parametrize("stages", [3, 4])
def test_the_interpreter_runs_the_staged_halves(stages):
    M, N, K = 130, 300, 400
    for name, args, _, ref, _ in cases(np.random.default_rng(6), M, N, K):
        if name == "matmul_f8_blockscaled" and args[2].dtype == np.float32:
            C = np.full((M, N), np.nan, np.float32)
            run_kernel(_kernel(BN=256, stages=stages, TC=F32), dict(A=args[0], B=args[1], C=C, SA=args[3], SB=args[4]))
            assert np.abs(C - ref).max() <= 1e-3 * np.abs(ref).max()


def test_the_verifier_names_a_further_part_that_is_not_a_copy():
    k = _kernel(BN=256, stages=3)
    ws = k.warp_spec
    bad = replace(ws, store=replace(ws.store, more=(ws.loop,)))
    assert warp_spec_problem(replace(k, warp_spec=bad)) == \
        f"the staged store's further copies ({ws.loop},) are not copies after the ring's loop"
