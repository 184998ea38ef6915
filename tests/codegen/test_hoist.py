"""Loads in a parallel loop that need no column are read before it (codegen/hoist.py): once
for the loop, or once per row slot of a wgmma accumulator or a blocked layout; everything else stays
per register."""
import re

import pytest

from kit_codegen import generated_source, kernel_part
from nvcc import cubin_sass

SCALED = """
@kernel
def k(A: f16[M, K], B: f16[N, K], C: f16[M, N], SA: f32[M, KB], SB: f32[KB], bias: f32[N]):
    with grid(cdiv(N, 128), cdiv(M, 128), threads=256) as (bx, by):
        As = shared(f16[128, 64])
        Bs = shared(f16[128, 64])
        part = fragment(f32[128, 128])
        acc = fragment(f32[128, 128])
        clear(acc)
        for k in pipelined(cdiv(K, 64), stages=3):
            copy(A[by * 128, k * 64], As)
            copy(B[bx * 128, k * 64], Bs)
            clear(part)
            gemm(As, Bs, part, trans_b=True)
            for i, j in parallel(128, 128):
                acc[i, j] += part[i, j] * (SA[by * 128 + i, k] * SB[k]) + bias[bx * 128 + j]
        copy(acc, C[by * 128, bx * 128])
"""


def _generate(src, arch="sm_90a"):
    return generated_source(src, arch=arch, line_directives=False)


def test_row_and_loop_invariant_loads_are_read_before_the_loop():
    body = kernel_part(_generate(SCALED).source)
    slots = "tl::Slots<tl_k_layout_0, 0>"
    assert ("const float tl_hoist0 = ((k >= 0 && k < KB) ? SB[static_cast<long long>(k)] : 0.0f);  "
            "// the same for every register") in body
    assert f"float tl_hoist1[{slots}::COUNT];" in body
    assert f"const int i = tl_k_layout_0::row(threadIdx.x, {slots}::rep(tl_s));" in body
    assert (f"tl_hoist1[tl_s] = ((((by * 128) + i) >= 0 && ((by * 128) + i) < M && k >= 0 && k < KB) ? "
            "SA[(static_cast<long long>(((by * 128) + i)) * KB + k)] : 0.0f);") in body
    assert f"(part[tl_r] * (tl_hoist1[{slots}::slot(tl_r)] * tl_hoist0))" in body
    # the bias reads a column: one load per register, as before
    assert "bias[static_cast<long long>(((bx * 128) + j))]" in body


def test_hoisted_loads_leave_a_few_loads_in_the_machine_code(tmp_path):
    src = SCALED.replace(" + bias[bx * 128 + j]", "")
    sass, log = cubin_sass(_generate(src).source, "sm_90a", tmp_path)
    assert re.search(r"0 bytes spill stores, 0 bytes spill loads", log), log
    # SA's 2 rows and SB per K step (the element-copy path has none): 64 a step before
    assert len(re.findall(r"\bLDG\b", sass)) <= 8


def test_a_tensor_the_loop_writes_is_not_hoisted():
    src = SCALED.replace("acc[i, j] += part[i, j] * (SA[by * 128 + i, k] * SB[k]) + bias[bx * 128 + j]",
                         "acc[i, j] += part[i, j] * SA[by * 128 + i, k]\n                SA[by * 128 + i, k] = 1.0")
    body = kernel_part(_generate(src, "sm_80").source)
    assert "tl_hoist" not in body


def test_a_load_indexed_by_a_scalar_of_the_loop_body_is_not_hoisted():
    src = SCALED.replace("acc[i, j] += part[i, j] * (SA[by * 128 + i, k] * SB[k]) + bias[bx * 128 + j]",
                         "r = i + 1\n                acc[i, j] += part[i, j] * SA[by * 128 + r - 1, k]")
    assert "tl_hoist" not in kernel_part(_generate(src).source)


def test_loads_are_read_at_the_start_of_the_block_so_they_run_under_the_gemm():
    body = kernel_part(_generate(SCALED).source)
    wait = body.index("tl::mbar_wait(tl_full")
    # (the ring's consumers issue the gemm and wait for it where the loop reads its accumulator)
    assert wait < body.index("tl_hoist1[tl_s] = ") < body.index("tl::gemm_wgmma_issue<") \
        < body.index("tl::wgmma_wait<0>") < body.index("// parallel (i, j)")


def test_a_load_after_a_statement_that_defines_its_index_stays_at_the_loop():
    src = SCALED.replace("            for i, j in parallel(128, 128):\n",
                         "            kk = k\n            for i, j in parallel(128, 128):\n").replace(
        "SA[by * 128 + i, k]", "SA[by * 128 + i, kk]")
    body = kernel_part(_generate(src).source)
    loop = body.index("// parallel (i, j)")
    assert body.index("tl::gemm_wgmma_issue<") < loop < body.index("tl_hoist1[tl_s] = ") < body.index("tl_r = 0", loop)


def test_a_decode_accumulator_reads_its_column_scales_per_column_slot():
    # 64 x 16: each thread holds 4 columns, so A's scale per column is 4 registers, not 8 loads
    src = """
@kernel
def k(W: f16[N, K], A: f16[M, K], SA: f32[M], C: f32[M, N]):
    with grid(cdiv(N, 64), cdiv(M, 16), threads=128) as (bx, by):
        Ws = shared(f16[64, 64])
        As = shared(f16[16, 64])
        acc = fragment(f32[64, 16])
        clear(acc)
        for k in pipelined(cdiv(K, 64), stages=3):
            copy(W[bx * 64, k * 64], Ws)
            copy(A[by * 16, k * 64], As)
            gemm(Ws, As, acc, trans_b=True)
        for i, j in parallel(64, 16):
            C[by * 16 + j, bx * 64 + i] = acc[i, j] * SA[by * 16 + j]
"""
    body = kernel_part(_generate(src).source)
    slots = "tl::Slots<tl_k_layout_0, 1>"
    assert f"const int j = tl_k_layout_0::col(threadIdx.x, {slots}::rep(tl_s));" in body
    assert f"(acc[tl_r] * tl_hoist0[{slots}::slot(tl_r)])" in body


def test_a_wide_tiles_column_loads_stay_per_register():
    # 128 columns a warp: 32 column slots would cost more registers than the loads they save
    assert "Slots<tl_k_layout_0, 1>" not in kernel_part(_generate(SCALED).source)


COLUMN_VECTOR = """
@kernel
def k(X: f16[M, N], b: f16[M, 1], Y: f16[M, N]):
    with grid(cdiv(N, 256), cdiv(M, 8), threads=128) as (bx, by):
        t = fragment(f16[8, 256])
        copy(X[by * 8, bx * 256], t)
        for i, j in parallel(8, 256):
            t[i, j] = t[i, j] / b[by * 8 + i, 0]
        copy(t, Y[by * 8, bx * 256])
"""


def test_a_blocked_loop_reads_a_row_load_once_per_row_a_thread_holds():
    """std.elementwise's add_col / div_col: b[M, 1] read at the loop's row is the same for the 8
    registers of a run; each was its own 2-byte load behind a bounds check, which nvcc did not
    merge (add_col f16 at (16384, 8192), sm_90a, the whole-runs build: 16 LDG.E.U16 and 234
    instructions a thread; now 2 loads and 143; div_col 16 MUFU.RCP -> 2, 395 -> 215).  A thread
    of this [8, 256] tile over 128 threads holds 2 rows (tl::Slots<L, 0>::COUNT)."""
    from tlc.schedule.layout import Blocked, Replicated

    body = kernel_part(_generate(COLUMN_VECTOR).source)
    slots = "tl::Slots<tl_k_layout_0, 0>"
    assert f"half tl_hoist0[{slots}::COUNT];" in body
    assert (f"tl_hoist0[tl_s] = ((((by * 8) + i) >= 0 && ((by * 8) + i) < M && 0 >= 0 && 0 < 1) ? "
            "b[(static_cast<long long>(((by * 8) + i)) * 1 + 0)] : tl::cvt<half>(0.0f));") in body
    assert f"tl_hoist0[{slots}::slot(tl_r)]" in body
    assert Replicated(Blocked((8, 256), 128, 8), (1,)).registers == 2


def test_a_blocked_loop_whose_rows_are_not_whole_runs_keeps_its_row_loads_per_register():
    """[3, 100] over 32 threads: a round of runs (256 columns) is neither whole rows nor a
    divisor of a row, so no slot holds one row in every thread; each register reads its own."""
    src = COLUMN_VECTOR.replace("f16[8, 256]", "f16[3, 100]").replace("threads=128", "threads=32").replace(
        "parallel(8, 256)", "parallel(3, 100)")
    body = kernel_part(_generate(src).source)
    assert "tl::Blocked<3, 100, 32, 4>" in _generate(src).source and "tl_hoist" not in body


@pytest.mark.nvcc
def test_the_row_loads_are_two_a_thread(tmp_path):
    """In the whole-runs build (the copies' element paths compiled out): b's two loads, where
    there were 16."""
    sass, log = cubin_sass("#define TL_WHOLE_RUNS 1\n" + _generate(COLUMN_VECTOR).source, "sm_90a", tmp_path)
    assert len(re.findall(r"LDG\.E\.U16", sass)) == 2 and "0 bytes spill stores" in log, log
