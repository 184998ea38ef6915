"""codegen/copies.py flat_origin: a fragment's copy of a vector's tile (a 1-D tensor, or a tensor an
element-wise tile op views flat) from a column the known ranges prove never negative is
tl::copy_g2f_flat / copy_f2g_flat / g2f_whole_flat (layout.cuh), whose whole-runs build tests each
run's first column against the vector's size, one 64-bit compare, where TileBounds clamped the
origin to 32 bits and tested both ends of every run: std.elementwise's f16 abs at one run a thread
(sm_90a, the TL_WHOLE_RUNS build) 78 -> 49 SASS instructions, its load 11 instructions after the
block index is read (38 before).  An origin that may be negative keeps the general copies."""
from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

import tlc
from tlc.codegen import generate_file
from tlc.codegen.copies import GlobalView, batch_test
from tlc.runtime.whole_runs import DEFINE

sys.path.insert(0, str(Path(__file__).resolve().parent))  # nvcc.py, the shared compile helper
from kit_codegen import generated_source  # noqa: E402
from nvcc import cubin_sass  # noqa: E402

SHIFT = """
@kernel
def k(x: f16[N], y: f16[N], BLOCK: const = 1024):
    with grid(cdiv(N, BLOCK), threads=128) as bx:
        t = fragment(f16[BLOCK])
        copy(x[(bx - 1) * BLOCK], t)
        copy(t, y[bx * BLOCK])
"""


def elementwise_abs(runs: int) -> str:
    ew = tlc.load("std.elementwise", target="cpu")
    prog = ew.abs.with_rules(ew_runs=runs).program({"T": "f16"}, "sm_90a", {"M": 16384, "N": 8192})
    return generate_file(list(prog.kernels), "sm_90a", line_directives=False, sources=ew.program.sources,
                         source_name=ew.program.path)


def kernel_part(source: str) -> str:
    return source[source.index('extern "C" __global__'):]


def test_an_elementwise_tile_ops_copies_are_flat():
    body = kernel_part(elementwise_abs(1))
    assert "tl::copy_g2f_flat<tl_abs__layout_0>(x_tile, x, NUMEL, (tl::cvt<long long>(bx) * 1024LL));" in body
    assert "tl::copy_f2g_flat<tl_abs__layout_0>(out, out_tile, NUMEL, (tl::cvt<long long>(bx) * 1024LL));" in body
    assert "tl::copy_g2f<" not in body and "tl::copy_f2g<" not in body


def test_an_origin_that_may_be_negative_keeps_the_general_copy():
    body = kernel_part(generated_source(SHIFT, arch="sm_90a").source)
    assert "tl::copy_g2f<tl_k_layout_0>(t, x, N, 1, N, 0, ((bx - 1) * 1024));" in body
    assert "tl::copy_f2g_flat<tl_k_layout_0>(y, t, N, (bx * 1024));" in body


def test_a_batch_tests_a_flat_part_by_its_columns_alone():
    a, b = (GlobalView(name, "N", "1", "N", "0", "(bx * 2048)", (1, 2048)) for name in "ab")
    assert batch_test([(a, "L", True), (b, "L", True)]) == \
        "tl::g2f_whole_flat<L>(a, N, (bx * 2048)) && tl::g2f_whole_flat<L>(b, N, (bx * 2048))"
    assert batch_test([(a, "L", False)]) == "tl::g2f_whole<L>(a, N, 1, N, 0, (bx * 2048))"


@pytest.mark.nvcc
def test_the_whole_runs_abs_loads_right_after_the_block_index(tmp_path):
    sass, log = cubin_sass(DEFINE + elementwise_abs(1), "sm_90a", tmp_path)
    assert " 0 bytes spill stores" in log
    code = [t for t in re.findall(r"/\*[0-9a-f]{4}\*/\s+([^;]*);", sass) if not t.startswith("NOP")]
    start = next(i for i, t in enumerate(code) if "SR_CTAID.X" in t)
    load = next(i for i, t in enumerate(code) if "LDG.E" in t)
    assert load - start <= 12, code[start:load + 1]
    assert not [t for t in code if "0x40000000" in t or "0xc0000000" in t]  # no TileBounds clamp
    assert len(code) <= 52, len(code)


@pytest.mark.nvcc
def test_three_flat_copies_of_one_run_issue_their_loads_together(tmp_path):
    """std.elementwise's where at one run a thread, no load batch (batch_loads.MIN_RUNS): in the
    whole-runs build cond's 8-byte load and a's and b's 16-byte ones are predicated on one test
    and issued one after another, no branch between them and the selects."""
    ew = tlc.load("std.elementwise", target="cpu")
    prog = ew.where.with_rules(ew_runs=1).program({"T": "f16"}, "sm_90a", {"M": 16384, "N": 8192})
    assert not any("load batch" in n for n in prog.kernels[0].notes)
    source = generate_file(list(prog.kernels), "sm_90a", line_directives=False, sources=ew.program.sources,
                           source_name=ew.program.path)
    sass, log = cubin_sass(DEFINE + source, "sm_90a", tmp_path)
    assert " 0 bytes spill stores" in log
    code = [t for t in re.findall(r"/\*[0-9a-f]{4}\*/\s+([^;]*);", sass) if not t.startswith("NOP")]
    loads = [i for i, t in enumerate(code) if "LDG.E" in t]
    store = next(i for i, t in enumerate(code) if "STG.E" in t)
    assert len(loads) == 3 and loads[-1] - loads[0] <= 6 and loads[-1] < store, code
    assert not [t for t in code[loads[0]:store] if re.search(r"\b(BRA|BSSY|BSYNC)\b", t)], code
