"""A clear_accum wgmma gemm of a ring's consumer body whose fragment the body clears more than
once (one partial-sum fragment for two gemms: std.gemm's matmul_f8_blockscaled at BN = 256, two
128-column halves) clears it by its first K step's scale-d 0 (schedule/scale_d_clears.py
RING_SCALE_D_CLEARS "reused", Fill.scale_d, which codegen/sm90.py renders): no instructions zero
the registers ahead of the wgmma.  Where the body writes the fragment by nothing but its gemms (the partial sums scaled and added as values of their loops:
schedule/dead_stores.py), that instruction reads the registers the last gemm left
(RING_SCALE_D_TIED, tl::gemm_wgmma_issue's CLEAR 1), else it only writes them (CLEAR 2), so that
nvcc keeps no value of them alive up to it.  Either way the scaled partial sums are added by one
FFMA a register; with the tie they fit the registers also as the runtime builds the kernel
(TL_TMA_FLAGS), where the write-only form spilled.  "all" clears so every such gemm (BN = 128's
one clear a K step too; not the default: untimed on the GPU)."""
import re
import sys
from pathlib import Path

import pytest

from nvcc import cubin_sass

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "stdlib"))  # the shared kits
from stdlib_kit import GEMM_PATH  # noqa: E402

ISSUE = ("tl::gemm_wgmma_issue<tl_matmul_f8_blockscaled_wgmma_n128_f8e4m3_clear, __nv_fp8_e4m3, 128, 128, 128, true, "
         "__nv_fp8_e4m3, 1, 1, 2>(")
TIED = ISSUE.replace("1, 1, 2>(", "1, 1, true>(")


def _source(consts: dict) -> str:
    from tlc.codegen import generate
    from tlc.driver import check_file
    from tlc.schedule import schedule

    r = check_file(GEMM_PATH)
    kernel = schedule(r.program, "matmul_f8_blockscaled", consts, target="sm_90a")
    return generate(kernel, "sm_90a", sources=r.sources, line_directives=False).source


def _consumers(consts: dict) -> str:
    src = _source(consts)
    return src[src.index("tl::setmaxnreg_inc"):]


def test_each_halfs_clear_is_its_gemms_first_k_step(monkeypatch):
    import tlc.schedule.dead_stores as ds
    import tlc.schedule.scale_d_clears as sdc

    consumers = _consumers({"BN": 256})
    assert "part[tl_r] = 0.0f" not in consumers and "part[tl_r] = (" not in consumers
    assert consumers.count(TIED) == 2 and ISSUE not in consumers
    monkeypatch.setattr(sdc, "RING_SCALE_D_TIED", False)
    assert _consumers({"BN": 256}).count(ISSUE) == 2
    # with the partial sums stored back, the body writes part: the clear only writes the registers
    monkeypatch.setattr(sdc, "RING_SCALE_D_TIED", True)
    monkeypatch.setattr(ds, "DEAD_FRAGMENT_STORES", "none")
    consumers = _consumers({"BN": 256})
    assert "part[tl_r] = (" in consumers and consumers.count(ISSUE) == 2 and TIED not in consumers
    # the accumulators, cleared once a tile before the ring, stay cleared by instructions
    assert "acc[tl_r] = 0.0f" in consumers and "acc2[tl_r] = 0.0f" in consumers


def test_the_first_k_steps_instruction_only_writes_the_registers():
    src = _source({"BN": 256})
    zero = src[src.index("static __forceinline__ void zero("):]
    zero = zero[:zero.index("\n  }\n")]
    assert '"=f"(d[0])' in zero and '"+f"' not in zero and '"r"(0)' in zero


@pytest.mark.parametrize("rule, bn, zeroed", [("reused", 256, True), ("reused", 128, False), ("all", 128, True),
                                              ("none", 256, False), ("none", 128, False)])
def test_which_clears_the_rule_takes(monkeypatch, rule, bn, zeroed):
    # BN = 128 (the default): one clear of part a K step, an instruction unless "all"
    import tlc.schedule.scale_d_clears as sdc
    monkeypatch.setattr(sdc, "RING_SCALE_D_CLEARS", rule)
    consumers = _consumers({"BN": bn})
    assert ("part[tl_r] = 0.0f" not in consumers) == zeroed
    assert (ISSUE in consumers or TIED in consumers) == zeroed
    assert (TIED in consumers) == (zeroed and bn == 256)  # BN = 128: the loop writes part


@pytest.mark.parametrize("rule", ["reused", "none"])
def test_two_halves_fit_the_consumers_registers(tmp_path, monkeypatch, rule):
    # 192 registers of partial sums and accumulators a thread: with the clears as instructions
    # ptxas kept the zeros in registers of their own and spilled (328 bytes a thread)
    import tlc.schedule.scale_d_clears as sdc
    monkeypatch.setattr(sdc, "RING_SCALE_D_CLEARS", rule)
    sass, log = cubin_sass(_source({"BN": 256, "stages": 4}), "sm_90a", tmp_path)
    spills = re.search(r"(\d+) bytes spill stores", log)
    assert spills, log
    if rule == "none":
        assert int(spills.group(1)) > 0, log  # what the rule is for
        return
    assert int(spills.group(1)) == 0, log
    # a K step: two halves of 4 QGMMA.64x128x32, each half's 64 partial sums scaled and added by
    # one FFMA a register (an accumulating first step left FMUL + FADD pairs)
    assert len(re.findall(r"QGMMA\.64x128x32", sass)) == 8
    assert len(re.findall(r"\bFFMA\b", sass)) >= 128 and not re.findall(r"\bFADD\b", sass)


def _built(name: str, consts: dict) -> str:
    """std.gemm's `name` for sm_90a as the runtime compiles it (runtime.built_source: every
    tensor map encoded, TL_TMA_FLAGS, the other paths compiled out)."""
    from tlc.codegen import generate
    from tlc.driver import check_file
    from tlc.runtime import built_source
    from tlc.runtime.args import LaunchFacts
    from tlc.schedule import schedule

    r = check_file(GEMM_PATH)
    kernel = schedule(r.program, name, consts, target="sm_90a")
    generated = generate(kernel, "sm_90a", sources=r.sources, line_directives=False)
    return built_source(generated, LaunchFacts.of(kernel).asserts)


HALVES = [("matmul_f8_blockscaled", {"BN": 256}), ("matmul_f8_blockscaled", {"BN": 256, "stages": 4}),
          ("matmul_grouped_f8_blockscaled", {"BN": 256})]


@pytest.mark.parametrize("name, consts", HALVES)
def test_the_runtime_build_of_the_halves_fits_the_registers(tmp_path, name, consts):
    # both halves' products in one 64-register window (the tie), no spills, 8 QGMMA + 128 FFMA
    # a K step; the grouped (MoE) kernel's tile walk too
    source = _built(name, consts)
    assert "#define TL_TMA_FLAGS" in source.split("\n// Generated")[0]
    sass, log = cubin_sass(source, "sm_90a", tmp_path)
    assert "0 bytes spill stores" in log, log
    windows = re.findall(r"QGMMA\.64x128x32\.F32\.E4M3\.E4M3 (R\d+),", sass)
    assert len(windows) == 8 and len(set(windows)) == 1, windows
    assert len(re.findall(r"\bFFMA\b", sass)) >= 128 and not re.findall(r"\bFADD\b", sass)


@pytest.mark.parametrize("name, consts", [HALVES[0], HALVES[2]])
def test_the_write_only_clear_spilled_in_the_runtime_build(tmp_path, monkeypatch, name, consts):
    # what RING_SCALE_D_TIED is for: with CLEAR 2 ptxas put the halves' products in two windows
    # and moved the accumulators around them through local memory (nvcc 13.0: 204 bytes a thread,
    # the grouped kernel 284; NVRTC 13.5 the same)
    import tlc.schedule.scale_d_clears as sdc
    monkeypatch.setattr(sdc, "RING_SCALE_D_TIED", False)
    _, log = cubin_sass(_built(name, consts), "sm_90a", tmp_path)
    spills = re.search(r"(\d+) bytes spill stores", log)
    assert spills and int(spills.group(1)) > 0, log


@pytest.mark.parametrize("name", ["matmul_f8_blockscaled", "matmul_grouped_f8_blockscaled"])
def test_the_runtime_build_at_the_defaults_fits_the_registers(tmp_path, name):
    # BN = 128 (one gemm a K step: its clear an instruction ptxas folds, the store kept) as the
    # runtime compiles it: 4 QGMMA + 64 FFMA a K step, no local memory
    sass, log = cubin_sass(_built(name, {}), "sm_90a", tmp_path)
    assert "0 bytes spill stores" in log and "0 bytes spill loads" in log, log
    assert len(re.findall(r"QGMMA\.64x128x32", sass)) == 4 and len(re.findall(r"\bFFMA\b", sass)) >= 64


@pytest.mark.parametrize("rule, zeroed", [("reused", True), ("all", True), ("none", False)])
def test_products_issued_back_to_back_clear_by_scale_d(monkeypatch, rule, zeroed):
    # std.attention's flash_bwd (sm_90a, D = 128, config.json's tiles): each loop issues Q . K^T
    # and dO . V^T back to back, each clear_accum; "reused" clears both by their first K step's
    # scale-d 0, as the H200 timed the block-masked backward in session 28 (with "all"); cleared
    # by instructions, the second while the first product runs, ptxas waited for the scores (C7517)
    import tlc.schedule.scale_d_clears as sdc
    from tlc.runner import build

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "stdlib"))
    from attention_kit import ATTENTION_PATH

    monkeypatch.setattr(sdc, "RING_SCALE_D_CLEARS", rule)
    defines = ("D=128", "BM=128", "THREADS=256", "BN=128", "BQ=64", "KV_STAGES=3")
    src, _ = build(ATTENTION_PATH, kernels=("flash_bwd",), defines=defines, arch="sm_90a")
    for fragment in ("scores", "dprobs", "scores_t", "dprobs_t"):
        assert (f"{fragment}[tl_r] = 0.0f;" not in src) == zeroed, fragment
    assert len(re.findall(r"tl::gemm_wgmma_issue<tl_flash_bwd_grid\d_wgmma_n\d+_f16_clear, ", src)) == (4 if zeroed else 0)


def test_a_marked_clear_outside_a_consumer_body_is_an_error():
    # the code generator renders Fill.scale_d only where it issues the gemms of a ring's consumer
    # body; a clear marked anywhere else has no gemm issue to take it (never silently dropped)
    from dataclasses import replace

    from tlc import ir
    from tlc.codegen import generate
    from tlc.diagnostics import DiagnosticError
    from tlc.driver import check_file
    from tlc.schedule import schedule

    r = check_file(GEMM_PATH)
    kernel = schedule(r.program, "matmul", {}, target="sm_90a")
    body = tuple(replace(s, scale_d=2) if isinstance(s, ir.Fill) and s.buffer == "acc" else s for s in kernel.body)
    with pytest.raises(DiagnosticError) as e:
        generate(replace(kernel, body=body), "sm_90a", sources=r.sources, line_directives=False)
    assert ("error[E069]: the sm_90a target: the clear of 'acc' was scheduled as its gemm's scale-d 0, "
            "outside a ring's consumer body, where no gemm issue takes it\n") in str(e.value), str(e.value)
    assert "clear(acc)" in str(e.value)
