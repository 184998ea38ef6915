"""Every sm_90a rule of stdlib/config.json for the row and scan modules (std.reduce, nn,
nn_layers, nn_train, moe, quant) compiles without spills or a stack frame in the build the
runtime launches for aligned rows (TL_WHOLE_RUNS, runtime/whole_runs.py), and in the general
build (ragged rows) wherever it does so today: the constants a rule picks (BLOCKS 3 or 4 an SM,
BN 8192, 512 threads) are where registers run short, and the modules' own build tests compile
the defaults.  std.gemm's rules: test_gemm_configs.py; std.conv's and std.attention's: their
modules' tests.  Session 29's survey (every std kernel at sm_90a at its defaults and rules,
/work/notes/G.md) found the general builds below spilling, each a rule taken knowingly (the .tl
comments say so: its aligned rows are the common case) and each from copy_g2f's element-by-
element path of ragged runs (tl/layout.cuh; without it none spills)."""
import dataclasses
import pathlib
import re
import sys

import pytest

import tlc
from tlc import config_table
from tlc.codegen import generate_file
from tlc.dtypes import DTYPES

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "codegen"))  # the nvcc helper
from nvcc import compile_object  # noqa: E402

MODULES = ["reduce", "nn", "nn_layers", "nn_train", "moe", "quant"]
ARCH = "sm_90a"
# the general builds that spill today (nvcc 13.0; bytes of spill stores): quantize_per_token's
# f16 and bf16 rules (BN 8192 on 256 threads at 4 blocks: 1528 and 228), dequantize_per_channel's
# (BM 32 at 4 blocks: 36 each), log_softmax's f16 rule (4 blocks: 32)
GENERAL_SPILLS = {"quantize_per_token_rule0", "quantize_per_token_rule1", "dequantize_per_channel_rule0",
                  "dequantize_per_channel_rule1", "log_softmax_rule0"}


def rule_kernels(module: str) -> list:
    """Each kernel of std.`module` scheduled for ARCH at each of its ARCH rules' dtypes and
    constants, named apart (one file)."""
    mod = tlc.load(f"std.{module}", target="cpu")
    out = []
    for name, k in mod.kernels.items():
        for i, rule in enumerate(config_table.rules_for(k.fn.module_path, name)):
            if ARCH in rule.archs and (rule.constants or rule.dtypes):
                consts = {**{n: DTYPES[v] for n, v in rule.dtypes}, **dict(rule.constants)}
                out.append(dataclasses.replace(k.scheduled(consts, ARCH), name=f"{name}_rule{i}"))
    return out


@pytest.mark.nvcc
@pytest.mark.slow
@pytest.mark.parametrize("whole_runs", [True, False], ids=["whole_runs", "general"])
@pytest.mark.parametrize("module", MODULES)
def test_every_rule_builds_without_spills(module, whole_runs, tmp_path):
    kernels = rule_kernels(module)
    assert kernels, f"std.{module} has no {ARCH} rule"
    source = generate_file(kernels, ARCH, line_directives=False)
    log = compile_object(("#define TL_WHOLE_RUNS 1\n" if whole_runs else "") + source, ARCH, tmp_path)
    frames = re.findall(r"Function properties for (\w+)\n\s*(\d+) bytes stack frame, (\d+) bytes spill stores", log)
    entries = [(f, s, p) for f, s, p in frames if not f.startswith("_Z")]  # (device functions: assert_fail)
    assert len(entries) == len(kernels), log
    spilling = {f for f, s, p in entries if (s, p) != ("0", "0")}
    assert spilling <= (set() if whole_runs else GENERAL_SPILLS), log
