"""A clear_accum wgmma gemm of a ring's consumer body whose fragment the body clears more than
once (one partial-sum fragment for two gemms: std.gemm's matmul_f8_blockscaled at BN = 256, two
128-column halves) clears it by its first K step's scale-d 0, that instruction only writing the
registers (codegen/sm90.py RING_SCALE_D_CLEARS "reused", tl::gemm_wgmma_issue's CLEAR 2): no
instructions zero the registers ahead of the wgmma, and nvcc keeps no value of them alive up to
it, so that the scaled partial sums are added by one FFMA a register and fit the registers.
"all" does so for every such gemm (BN = 128's one clear a K step too; not the default: untimed
on the GPU)."""
import re
import sys
from pathlib import Path

import pytest

from nvcc import cubin_sass

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "stdlib"))  # the shared kits
from stdlib_kit import GEMM_PATH  # noqa: E402

ISSUE = ("tl::gemm_wgmma_issue<tl_matmul_f8_blockscaled_wgmma_n128_f8e4m3_clear, __nv_fp8_e4m3, 128, 128, 128, true, "
         "__nv_fp8_e4m3, 1, 1, 2>(")


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


def test_each_halfs_clear_is_its_gemms_first_k_step():
    consumers = _consumers({"BN": 256})
    assert "part[tl_r] = 0.0f" not in consumers
    assert consumers.count(ISSUE) == 2
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
    import tlc.codegen.sm90 as sm90
    monkeypatch.setattr(sm90, "RING_SCALE_D_CLEARS", rule)
    consumers = _consumers({"BN": bn})
    assert ("part[tl_r] = 0.0f" not in consumers) == zeroed
    assert (ISSUE in consumers) == zeroed


@pytest.mark.parametrize("rule", ["reused", "none"])
def test_two_halves_fit_the_consumers_registers(tmp_path, monkeypatch, rule):
    # 192 registers of partial sums and accumulators a thread: with the clears as instructions
    # ptxas kept the zeros in registers of their own and spilled (328 bytes a thread)
    import tlc.codegen.sm90 as sm90
    monkeypatch.setattr(sm90, "RING_SCALE_D_CLEARS", rule)
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
