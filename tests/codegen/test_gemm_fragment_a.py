"""gemm whose A operand is a fragment, as flash attention multiplies its cast scores by V
(tests/programs/attention_chain.tl): the register-A layouts against the PTX ISA's operand
layout, the layouts the scheduler gives the chain, the code each target generates (registers
straight to the tensor cores, or staged through shared memory), the interpreter against
NumPy, and nvcc builds without spills."""
import re
from pathlib import Path

import numpy as np
import pytest

import tlc
from kit_codegen import kernel_part
from nvcc import compile_device
from tlc.codegen import generate
from tlc.driver import check_file, check_source
from tlc.dtypes import BF16, F16
from tlc.schedule import schedule
from tlc.schedule.layout import MmaAccumulator
from tlc.schedule.operand_layout import mma_a, wgmma_a

CHAIN = Path(__file__).resolve().parents[1] / "programs" / "attention_chain.tl"

FRAGMENT_A_GEMM = (CHAIN.parent / "gemm_fragment_a.tl").read_text()


def ptx_a_element(lane: int, e: int) -> tuple[int, int]:
    """(row, column) in a 16 x 16 piece of A of the e-th 16-bit value lane `lane` passes to
    mma.m16n8k16 (the PTX ISA's figure for .f16/.bf16 A: a0, a1 hold rows g and g + 8 at
    columns 2t, 2t + 1; a2, a3 the same 8 columns on; g = lane / 4, t = lane % 4).  wgmma's
    register A (m64nNk16) is this per warp, warp w of the warpgroup holding rows 16w.. of 64."""
    g, t = divmod(lane, 4)
    return g + 8 * ((e // 2) % 2), 2 * t + e % 2 + 8 * (e // 4)


@pytest.mark.parametrize("name,shape,threads", [
    ("mma_a", (64, 64), 128), ("mma_a", (128, 32), 128), ("mma_a", (128, 128), 256),
    ("wgmma_a", (64, 64), 128), ("wgmma_a", (128, 64), 128), ("wgmma_a", (256, 32), 256)])
def test_register_a_layout_is_the_instruction_operand(name, shape, threads):
    """The 8 registers tl::a_from_registers packs for a band and a K step, from register
    (band * K / 8 + k / 8) * 4 on, are the instruction's A values for that band's rows, in the
    instruction's order: mma_a's band b of warp w is rows w * M / warps + 16 b (the rows
    gemm_mma_sm80_rs multiplies), wgmma_a's band b of warp w is rows 64 (g * BANDS + b) +
    16 (w % 4) for warpgroup g (gemm_wgmma_rs's m64 instructions)."""
    layout = {"mma_a": mma_a, "wgmma_a": wgmma_a}[name](shape, threads)
    m, k = shape
    warps = threads // 32
    bands = m // warps // 16
    for t in range(threads):
        warp, lane = divmod(t, 32)
        for band in range(bands):
            if name == "mma_a":
                row0 = warp * (m // warps) + 16 * band
            else:
                row0 = 64 * ((warp // 4) * bands + band) + 16 * (warp % 4)
            for step in range(k // 16):
                for e in range(8):
                    r, c = ptx_a_element(lane, e)
                    assert layout.owner((row0 + r, 16 * step + c)) == (t, (band * k // 8 + 2 * step) * 4 + e)
    assert layout.registers == bands * k // 8 * 4


def chain_kernel(arch: str, consts: dict):
    r = check_file(str(CHAIN))
    assert r.ok
    k = schedule(r.program, "attention_chain", consts, target=arch)
    return k, generate(k, arch, sources=r.sources)


@pytest.mark.parametrize("arch,bm,d,threads", [("sm_80", 64, 64, 128), ("sm_80", 128, 128, 256),
                                               ("sm_90a", 64, 128, 128), ("sm_90a", 128, 64, 128),
                                               ("sm_90a", 128, 128, 256)])
def test_the_chain_keeps_the_scores_in_registers(arch, bm, d, threads):
    """S's accumulator, its cast copy and O's accumulator take one register layout (one column
    of warps), so the cast moves nothing between threads and P goes to the tensor cores from
    the registers: no exchange, no staging."""
    k, g = chain_kernel(arch, {"BM": bm, "D": d, "THREADS": threads})
    frags = {b.name: b.layout for b in k.buffers if b.scope == "fragment"}
    expect = (wgmma_a if arch == "sm_90a" else mma_a)((bm, 64), threads)
    assert frags["acc_s"] == frags["acc_s_cast"] == expect
    assert isinstance(frags["acc_o"], MmaAccumulator) and frags["acc_o"].warps_n == 1
    body = kernel_part(g.source)
    primitive = "tl::gemm_wgmma_rs<" if arch == "sm_90a" else "tl::gemm_mma_sm80_rs<"
    assert body.count(primitive) == 1 and "exchange" not in body and "staged" not in body


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
@pytest.mark.parametrize("consts,shared_gemm", [({"BM": 16}, "tl::gemm_mma_sm80<half, 16, 64, 64, 1, 4"),
                                                ({"BK": 24}, "tl::gemm_simt<")])
def test_a_fragment_the_registers_cannot_feed_is_staged(arch, consts, shared_gemm):
    """16 rows over 4 warps, or K not whole steps of 16: A keeps another layout, is stored to a
    scratch tile after the planned shared memory, and the shared-memory gemm reads it there."""
    k, sources = _scheduled(FRAGMENT_A_GEMM, arch, consts)
    g = generate(k, arch, sources=sources)
    body = kernel_part(g.source)
    assert "staged through shared memory" in body and shared_gemm in body and "_rs<" not in body
    bm, bk = consts.get("BM", 64), consts.get("BK", 64)
    assert g.smem_bytes == k.smem_bytes + -(-(bm * bk * 2) // 128) * 128


def _scheduled(src, arch, consts):
    r = check_source(src, "t.tl")
    assert r.ok, r.diagnostics
    return schedule(r.program, "k", consts, target=arch), r.sources


def test_a_fragment_operand_type_checks_and_a_local_one_does_not(rendered):
    assert rendered(FRAGMENT_A_GEMM) == ""
    bad = FRAGMENT_A_GEMM.replace("Af = fragment(f16[BM, BK])", "Af = local(f16[BM, BK])")
    assert rendered(bad) == (
        "test.tl:14:18: error[E037]: gemm operand a must be a shared or fragment buffer, found local tensor f16[BM, BK]\n"
        "   |\n"
        "14 |             gemm(Af, Bs, acc)\n"
        "   |                  ^^")


def reference(Q, K, V, scale, dtype):
    f = lambda x: np.asarray(x, np.float32)  # noqa: E731
    return f(f(f(Q) @ f(K).T * np.float32(scale)).astype(dtype)) @ f(V)


@pytest.mark.parametrize("dtype,bm,d", [(F16, 64, 64), (BF16, 128, 128)])
def test_the_chain_on_the_interpreter(dtype, bm, d):
    """Ragged S and SK (neither a multiple of the tiles): rows past S are not written, and
    keys past SK load as zeros, whose zero scores meet zero rows of V."""
    mod = tlc.load(str(CHAIN), target="cpu")
    rng = np.random.default_rng(bm + d)
    S, SK = 77, 100
    Q, K, V = (rng.standard_normal((n, d)).astype(dtype.numpy()) for n in (S, SK, SK))
    O = np.full((S, d), np.nan, dtype.numpy())
    mod.attention_chain(Q, K, V, O, 0.125, D=d, BM=bm, THREADS=2 * bm)
    ref = reference(Q, K, V, 0.125, dtype.numpy())
    assert np.abs(O.astype(np.float32) - ref).max() <= {F16: 2e-3, BF16: 1e-2}[dtype] * np.abs(ref).max()


@pytest.mark.nvcc
@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
# the largest tile by default (the one that could spill); the others in the slow run
@pytest.mark.parametrize("dtype,bm,d,threads", [pytest.param(F16, 64, 64, 128, marks=pytest.mark.slow),
                                                (BF16, 128, 128, 256),
                                                pytest.param(F16, 128, 64, 128, marks=pytest.mark.slow)])
def test_the_chain_compiles_without_spills(arch, dtype, bm, d, threads, tmp_path):
    """-Werror; no local memory; on sm_90a no wgmma serialized by ptxas for registers written
    between them (its C7519 note: A is packed, and the accumulators' clear tied, before the
    fence), with one 64-row band per warpgroup or two."""
    _, g = chain_kernel(arch, {"T": dtype, "BM": bm, "D": d, "THREADS": threads})
    log = compile_device(g.source, arch, tmp_path)
    spills = re.findall(r"(\d+) bytes spill stores", log)
    assert spills and set(spills) == {"0"}, log
    assert not re.search(r"C75\d\d", log), log


@pytest.mark.nvcc
@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_a_staged_fragment_compiles(arch, tmp_path):
    k, sources = _scheduled(FRAGMENT_A_GEMM, arch, {"BM": 16})
    compile_device(generate(k, arch, sources=sources).source, arch, tmp_path)


FLASH = CHAIN.parent / "flash_attention.tl"


def softmax_attention(Q, K, V, scale):
    s = np.asarray(Q, np.float64) @ np.asarray(K, np.float64).T * scale
    p = np.exp(s - s.max(1, keepdims=True))
    return (p / p.sum(1, keepdims=True)) @ np.asarray(V, np.float64)


@pytest.mark.parametrize("dtype,bm,d", [(F16, 64, 64), (BF16, 128, 128)])
def test_flash_attention_on_the_interpreter(dtype, bm, d):
    """The online softmax over key tiles, the last one ragged and masked, against the softmax."""
    mod = tlc.load(str(FLASH), target="cpu")
    rng = np.random.default_rng(bm * d)
    S, SK = 70, 150
    Q, K, V = (rng.standard_normal((n, d)).astype(dtype.numpy()) for n in (S, SK, SK))
    O = np.full((S, d), np.nan, dtype.numpy())
    mod.flash_attention(Q, K, V, O, 1 / np.sqrt(d), D=d, BM=bm, THREADS=2 * bm)
    ref = softmax_attention(Q, K, V, 1 / np.sqrt(d))
    assert np.abs(O.astype(np.float64) - ref).max() <= {F16: 2e-3, BF16: 1e-2}[dtype] * np.abs(ref).max()


@pytest.mark.nvcc
@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
@pytest.mark.parametrize("dtype,bm,d", [pytest.param(F16, 64, 64, marks=pytest.mark.slow), (BF16, 128, 128)])
def test_flash_attention_compiles_without_spills(arch, dtype, bm, d, tmp_path):
    # at BM = D = 64 (one consumer warpgroup) ptxas injected a warpgroup.wait (C7517) on sm_90a
    # while the deferred gemm's first iteration was a branch of the loop (session 25's slow run):
    # the code generator peels that iteration for every deferred gemm now, not only ping-pong's
    r = check_file(str(FLASH))
    k = schedule(r.program, "flash_attention", {"T": dtype, "BM": bm, "D": d, "THREADS": 2 * bm}, target=arch)
    g = generate(k, arch, sources=r.sources)
    # (on sm_90a the ring's consumers issue it and wait where its result is read: _issue)
    assert ("tl::gemm_wgmma_rs" if arch == "sm_90a" else "tl::gemm_mma_sm80_rs<") in g.source
    log = compile_device(g.source, arch, tmp_path)
    spills = re.findall(r"(\d+) bytes spill stores", log)
    assert spills and set(spills) == {"0"} and not re.search(r"C75\d\d", log), log


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_a_fragment_b_operand_is_refused_at_the_gemm(arch, tmp_path):
    from click.testing import CliRunner

    from tlc import cli

    path = tmp_path / "t.tl"
    path.write_text(FRAGMENT_A_GEMM.replace("Bs = shared(f16[BK, 64])", "Bs = fragment(f16[BK, 64])"))
    r = CliRunner().invoke(cli.main, ["check", "--arch", arch, str(path)])
    assert r.exit_code == 1
    assert r.stderr == (
        f"{path}:14:13: error[E069]: the {arch} target: gemm with a fragment B operand is not supported by the "
        "CUDA target yet; copy the operand into shared memory\n"
        "   |\n"
        "14 |             gemm(Af, Bs, acc)\n"
        "   |             ^^^^^^^^^^^^^^^^^\n"
        "\n"
        f"error: 1 error in {path}\n")


TWO_PRODUCTS = """
@kernel
def k(A: f16[M, 64], B: f16[64, N], C: f32[M, N], D: f32[M, 128]):
    with grid(cdiv(M, 64), threads=128) as (bx):
        Af = fragment(f16[64, 64])
        Bs = shared(f16[64, 64])
        Ds = shared(f16[64, 128])
        c = fragment(f32[64, 64])
        d = fragment(f32[64, 128])
        copy(A[bx * 64, 0], Af)
        copy(B[0, 0], Bs)
        copy(B[0, 0], Ds)
        clear(c)
        clear(d)
        gemm(Af, Bs, c)
        gemm(Af, Ds, d)
        copy(c, C[bx * 64, 0])
        copy(d, D[bx * 64, 0])
"""


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_a_fragment_read_by_two_gemms_feeds_both_from_registers(arch):
    """The second gemm's accumulator takes the layout matching A's (regression: it took the
    default square warp tiles, and A was staged through shared memory for it)."""
    k, sources = _scheduled(TWO_PRODUCTS, arch, {})
    body = kernel_part(generate(k, arch, sources=sources).source)
    # on sm_90a the first is issued without a wait (gemm_wgmma_rs_issue): the second's covers both
    primitive = "tl::gemm_wgmma_rs" if arch == "sm_90a" else "tl::gemm_mma_sm80_rs<"
    assert body.count(primitive) == 2 and "staged" not in body


@pytest.mark.nvcc
@pytest.mark.parametrize("dtype,bm,d", [(F16, 64, 64), (BF16, 128, 128)])
def test_flash_attention_sass_takes_p_from_registers(dtype, bm, d, tmp_path):
    """On sm_90a both products are HGMMA, the second with its A operand a register (as
    FlashAttention 3), and nothing goes through local memory."""
    from nvcc import cubin_sass

    r = check_file(str(FLASH))
    k = schedule(r.program, "flash_attention", {"T": dtype, "BM": bm, "D": d, "THREADS": 2 * bm}, target="sm_90a")
    sass, _ = cubin_sass(generate(k, "sm_90a", sources=r.sources).source, "sm_90a", tmp_path)
    assert re.search(r"HGMMA\.64x\d+x16\.F32(\.BF16)? R\d+, R\d+, gdesc", sass), sass
    assert re.search(r"HGMMA\.64x\d+x16\.F32(\.BF16)? R\d+, gdesc", sass), sass
    assert not re.search(r"\b(LDL|STL)\b", sass)


def replica_rows(layout) -> dict:
    """(thread, slot) -> the row a row-replicated layout holds there, from its base's owners."""
    out = {}
    base = layout.base
    for i in range(base.shape[0]):
        for j in range(base.shape[1]):
            t, r = base.owner((i, j))
            assert out.setdefault((t, layout.slot(r)), i) == i
    return out


@pytest.mark.parametrize("rows,warps_m,warps_n,bands", [(64, 4, 1, False), (128, 4, 1, True), (64, 2, 2, False)])
def test_row_statistics_of_accumulators_of_other_widths_sit_alike(rows, warps_m, warps_n, bands):
    """A row statistic of the scores [BM, BN] is held where one of the output [BM, D] would be
    (same threads, same slot), so a loop over the output reads it at its own slot: no exchange."""
    from tlc.schedule.layout import Replicated, rows_alike

    scores, out = (Replicated(MmaAccumulator((rows, n), warps_m, warps_n, bands), (1,)) for n in (64, 128))
    assert rows_alike(scores, out.base) and replica_rows(scores) == replica_rows(out)
    other = MmaAccumulator((rows, 128), warps_m * warps_n, 1) if warps_n > 1 else MmaAccumulator((rows, 128), 2, 2)
    assert not rows_alike(scores, other) and replica_rows(scores) != replica_rows(Replicated(other, (1,)))


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_flash_attention_with_a_wider_head_needs_no_exchange(arch):
    """Head dim 128 over key tiles of 64: the row max, sum and rescale factors of the scores are
    read in the loops over O at O's slots: the max by the exponentials (on sm_90a twice: the
    deferred gemm's ring peels its first iteration), the rescale factors (on sm_90a twice: in
    the loop right before P @ V's issue and after it before the last one,
    DeferredGemm.before_issue), the reciprocals of the row sums (schedule/fast_math.py)."""
    r = check_file(str(FLASH))
    k = schedule(r.program, "flash_attention", {"D": 128}, target=arch)
    body = kernel_part(generate(k, arch, sources=r.sources).source)
    assert "exchange" not in body and body.count("::slot(tl_r)]") == (5 if arch == "sm_90a" else 3)
    assert body.count("rcp_l0[") >= 2  # declared, filled, read at O's slots
