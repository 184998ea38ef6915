"""tlc profile --ncu --source without a GPU (issue 14): Nsight Compute's source page (a sample
written in the form `ncu --page source --print-source cuda,sass --csv` prints: a file's rows,
its header, each source line's row and its instructions' rows; no recording from a GPU yet),
the PTX's inlining records, the samples charged to .tl lines, the text, the pinned `#line`
directives (nvcc: the line table names only the .tl lines of statements), and the messages.
The GPU run is tests/gpu/test_profile_gpu.py."""
import re
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from tlc import cli
from tlc.profiling.source import (Instruction, LineSamples, SourceView, format_source_view, inline_sites,
                                  parse_ncu_source, source_view)
from tlc.runtime.compile import pin_line_directives

ROOT = Path(__file__).resolve().parents[2]
GEMM = ROOT / "examples" / "gemm.tl"
CSV = (Path(__file__).parent / "data" / "ncu-source-gemm.csv").read_text()
TL, CU = "/work/proj/examples/gemm.tl", "/work/proj/matmul.cu"

# NVRTC's PTX with -lineinfo names files by number; `.loc FILE LINE COL, function_name F,
# inlined_at FILE LINE COL` places inlined code (here: matmul.cu:647 inside 572, inlined at
# gemm.tl:23; matmul.cu:216 inlined at two statements)
PTX = """
\t.file\t1 "matmul.cu"
\t.file\t2 "examples/gemm.tl"
\t.loc\t2 20 0
\t.loc\t1 216 72, function_name $L__info_string15, inlined_at 2 20 3
\t.loc\t1 216 72, function_name $L__info_string15, inlined_at 2 24 3
\t.loc\t1 572 74, function_name $L__info_string31, inlined_at 2 23 5
\t.loc\t1 647 7, function_name $L__info_string24, inlined_at 1 572 74
"""


def test_the_source_page_is_read_instruction_by_instruction():
    got = parse_ncu_source(CSV)
    assert got[:3] == [Instruction(0x7f3a12345600, CU, 30, 5.0), Instruction(0x7f3a12345700, CU, 216, 40.0),
                       Instruction(0x7f3a12345910, CU, 216, 15.0)]
    assert got[4] == Instruction(0x7f3a12345810, CU, 647, 1200.0)  # "1,200"
    assert [(i.file, i.line) for i in got[5:]] == [(TL, 20), (TL, 23), (TL, 24)]
    assert parse_ncu_source("no table\n==PROF== Disconnected\n") == []


def test_an_instruction_row_that_repeats_its_line_number():
    text = ('"File Path","k.tl"\n"Function Name","k"\n"Line No","Source","Address","Source","Warp Stall Sampling (All Samples)"\n'
            '"7","x = y","-","-","3"\n"7","","0x100","FADD R1, R2, R3","2"\n"","","0x110","STG.E [R4.64], R1","-"\n')
    assert parse_ncu_source(text) == [Instruction(0x100, "k.tl", 7, 2.0), Instruction(0x110, "k.tl", 7, 0.0)]


def test_inlined_lines_are_followed_out_to_the_tl_statements():
    assert inline_sites(PTX) == {("matmul.cu", 216): {("examples/gemm.tl", 20), ("examples/gemm.tl", 24)},
                                 ("matmul.cu", 572): {("examples/gemm.tl", 23)},
                                 ("matmul.cu", 647): {("examples/gemm.tl", 23)}}


def test_samples_land_on_the_tl_lines():
    view = source_view(parse_ncu_source(CSV), inline_sites(PTX))
    # 647 (the mma) is only ever inlined at line 23; 216 (a copy) at 20 and 24: each of its
    # instructions goes to the one whose own code came last before it
    assert view.lines == [LineSamples(TL, 20, 10.0, 40.0), LineSamples(TL, 23, 50.0, 1500.0),
                          LineSamples(TL, 24, 20.0, 15.0)]
    assert (view.elsewhere, view.total) == (5.0, 1640.0)


def test_without_inlining_records_template_code_is_on_no_line():
    view = source_view(parse_ncu_source(CSV), {})
    assert [ls.total for ls in view.lines] == [10.0, 50.0, 20.0] and view.elsewhere == 1560.0


def test_the_text():
    view = source_view(parse_ncu_source(CSV), inline_sites(PTX))
    assert format_source_view(view, read=lambda f: GEMM.read_text() if f == TL else None) == [
        "  source view: 1640 warp stall samples (Nsight Compute), by .tl line; (...): of tl:: template code inlined there",
        "    /work/proj/examples/gemm.tl",
        "           50   3.0%       (40)    20          for k in pipelined(cdiv(K, BK), stages=stages):",
        "                                   21              copy(A[by * BM, k * BK], As)",
        "                                   22              copy(B[k * BK, bx * BN], Bs)",
        "         1550  94.5%     (1500)    23              gemm(As, Bs, acc)",
        "           35   2.1%       (15)    24          copy(acc, C[by * BM, bx * BN])",
        "            5   0.3%  on no .tl line (the kernel's prologue, code the line table does not place)"]
    assert format_source_view(SourceView())[1] == ("    no samples: is the kernel too short for Nsight Compute's "
                                                   "sampling interval?")


def test_pinned_directives_repeat_until_the_function_closes():
    src = '\n'.join(["__global__ void k(int* p) {", "  int i = 0;", '#line 7 "a.tl"', "  #pragma unroll",
                     "  for (;;) {", "    p[i] = 1;", "  }", "}", "int host() { return 0; }"])
    assert pin_line_directives(src, "k.cu").split("\n") == [
        "__global__ void k(int* p) {", "  int i = 0;", '#line 7 "a.tl"', '#line 7 "a.tl"', "  #pragma unroll",
        '#line 7 "a.tl"', "  for (;;) {", '#line 7 "a.tl"', "    p[i] = 1;", '#line 7 "a.tl"', "  }",
        '#line 7 "a.tl"', "}", '#line 9 "k.cu"', "int host() { return 0; }"]


def tl_lines_in_ptx(tmp_path, source: str, arch: str) -> set:
    """The gemm.tl lines that the PTX's line table (nvcc -lineinfo) names, itself or as a call site."""
    from tlc.runtime.compile import find_nvcc

    cu, ptx = tmp_path / "k.cu", tmp_path / "k.ptx"
    cu.write_text(source)
    gencode = "-gencode=arch=compute_90a,code=compute_90a" if arch == "sm_90a" else f"-arch={arch}"
    subprocess.run([find_nvcc(), gencode, "-lineinfo", "-ptx", "-std=c++17", "-o", str(ptx), str(cu)], check=True,
                   capture_output=True)
    text = ptx.read_text()
    [tl] = [n for n, path in re.findall(r'\.file\s+(\d+)\s+"([^"]*)"', text) if path.endswith("gemm.tl")]
    return {int(n) for n in re.findall(rf"(?:\.loc|inlined_at)\s+{tl}\s+(\d+)", text)} - {0}


@pytest.mark.nvcc
@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_pinned_line_table_names_only_statement_lines(tmp_path, arch):
    """The kernel's code is charged to the .tl lines of its statements' `#line`s and to no other;
    unpinned, the lines below a statement that spans several lines of C take its code."""
    import tlc

    source = tlc.load(str(GEMM), target="cpu").matmul.cuda_source(arch=arch)
    statements = {int(n) for n in re.findall(r'^#line (\d+) "[^"]*gemm\.tl"', source, re.M)}
    pinned = tl_lines_in_ptx(tmp_path, pin_line_directives(source, "matmul.cu"), arch)
    assert pinned and pinned <= statements == {19, 20, 23, 24}


@pytest.mark.nvcc
@pytest.mark.slow
def test_unpinned_the_lines_below_a_statement_take_its_code(tmp_path):
    """What the pinning is for: the loop's code, many lines of C under `#line 20`, is charged
    to gemm.tl's lines 21, 22, 25... (lines that hold no such code, or no code at all)."""
    import tlc

    source = tlc.load(str(GEMM), target="cpu").matmul.cuda_source(arch="sm_80")
    assert tl_lines_in_ptx(tmp_path, source, "sm_80") - {19, 20, 23, 24}


def test_source_without_ncu_is_a_usage_error():
    r = CliRunner().invoke(cli.main, ["profile", str(GEMM), "-k", "matmul", "--source"])
    assert r.exit_code == 2
    assert r.output.endswith("Error: --source shows Nsight Compute's samples per .tl line: add --ncu\n")


def test_source_without_nsight_compute_says_so(monkeypatch):
    monkeypatch.setattr("tlc.runtime.compile.cuda_unavailable_reason", lambda: None)
    monkeypatch.setattr("tlc.profiling.gpu.find_ncu", lambda: None)
    r = CliRunner().invoke(cli.main, ["profile", str(GEMM), "-k", "matmul", "--ncu", "--source"])
    assert (r.exit_code, r.output) == (1, "error: --ncu: Nsight Compute (ncu) is not installed (not on PATH, nor in "
                                          "$CUDA_HOME/bin or /usr/local/cuda/bin); install it with the CUDA toolkit, "
                                          "or profile without --ncu\n")


def test_the_ptx_is_compiled_from_the_source_the_launch_ran(monkeypatch):
    """The runtime builds a TMA kernel for launches whose maps all encode (and one whose copies
    keep whole runs) with a `#define` line before the source, which moves every `.cu` line that
    Nsight Compute names by one: the profiler's PTX must compile that same text, or no
    template line meets its `.loc` and the samples land on no .tl line (the H200, session 18:
    2772 of 3840 samples of examples/gemm.tl's sm_90a matmul)."""
    import sys
    from types import SimpleNamespace

    sys.path.insert(0, str(ROOT / "tests" / "codegen"))
    from kit_codegen import generated_source
    from tlc.profiling import gpu
    from tlc.runtime import built_source
    from tlc.runtime import compile as c

    generated = generated_source(GEMM.read_text(), name="matmul", arch="sm_90a")
    assert generated.tensor_maps
    seen = []
    monkeypatch.setattr(c, "nvrtc_compile", lambda source, arch, name: seen.append(source) or b"// ptx")
    for generic in (False, True):
        compiled = SimpleNamespace(arch="sm_90a", name="matmul", generated=generated, assert_sites=(),
                                   launched_generic=generic)
        assert gpu.lineinfo_ptx(compiled) == "// ptx"
        assert seen[-1] == built_source(generated, (), generic=generic)
    head = seen[0][:len(seen[0]) - len(generated.source)]
    assert seen[0].endswith(generated.source) and "#define TL_TMA_FLAGS " in head and head.count("\n") >= 1
    assert seen[1] == generated.source
