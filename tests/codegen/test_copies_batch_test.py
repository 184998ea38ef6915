"""codegen/copies.py batch_test: a load batch takes its one basic block where its tiles' rows lie
inside their tensors (one test of each tile's origin) and its runs inside the columns
(g2f_whole of the tile seen alone: one test for copies of one tensor's columns, the same in
every iteration of a loop), the two halves joined by `&`; std.reduce's column loop in f16 at
(16384, 8192) on sm_90a keeps none of g2f_whole's 64-bit clamps of a tile's row origin.  And
tl::g2f_convert, the batch's conversions: a 16-bit float into a fragment of its own type is
itself, not through float and back (HADD2.F32, F2FP: ptxas keeps a NaN's payload)."""
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
from nvcc import cubin_sass  # noqa: E402


# two batched f16 copies into f16 fragments, copied out again: no arithmetic at all
PAIR = """
@kernel
def pair(a: f16[M, N], b: f16[M, N], c: f16[M, N], d: f16[M, N], BM: const = 16, BN: const = 128):
    with grid(cdiv(N, BN), cdiv(M, BM), threads=128) as (bx, by):
        fa = fragment(f16[BM, BN])
        fb = fragment(f16[BM, BN])
        copy(a[by * BM, bx * BN], fa)
        copy(b[by * BM, bx * BN], fb)
        copy(fa, c[by * BM, bx * BN])
        copy(fb, d[by * BM, bx * BN])
"""


def view(base, rows, row0, shape=(128, 32)):
    return GlobalView(base, "N", rows, "N", row0, "(bx * 32)", shape)


def test_tiles_of_one_tensor_share_the_columns_test_and_each_origin_is_tested():
    parts = [(view("x", "M", f"(t{k} * 128)"), "L") for k in range(2)]
    assert batch_test(parts) == (
        "(static_cast<long long>((t0 * 128)) >= 0 && static_cast<long long>((t0 * 128)) + 128 <= static_cast<long long>(M)"
        " && static_cast<long long>((t1 * 128)) >= 0 && static_cast<long long>((t1 * 128)) + 128 <= "
        "static_cast<long long>(M)) & (tl::g2f_whole<L>(x, N, 128, N, 0, (bx * 32)))")


def test_tensors_of_their_own_and_a_vector_without_rows():
    parts = [(view("x", "M", "r"), "L"), (view("w", "1", "0", (1, 32)), "W"), (view("b", "1", "0", (1, 32)), "W")]
    assert batch_test(parts) == (
        "(static_cast<long long>(r) >= 0 && static_cast<long long>(r) + 128 <= static_cast<long long>(M)) & "
        "(tl::g2f_whole<L>(x, N, 128, N, 0, (bx * 32)) && tl::g2f_whole<W>(w, N, 1, N, 0, (bx * 32)) && "
        "tl::g2f_whole<W>(b, N, 1, N, 0, (bx * 32)))")
    assert batch_test(parts[1:]) == "tl::g2f_whole<W>(w, N, 1, N, 0, (bx * 32)) && tl::g2f_whole<W>(b, N, 1, N, 0, (bx * 32))"


@pytest.mark.nvcc
def test_the_column_loop_keeps_no_clamp_of_a_tile_origin(tmp_path):
    m = tlc.load("std.reduce", target="cpu")
    p = m.sum_axis0.program(dict(T="f16"), "sm_90a", sizes=dict(M=16384, N=8192))
    source = DEFINE + generate_file(list(p.kernels), "sm_90a", sources=m.program.sources, source_name=m.program.path)
    sass, log = cubin_sass(source, "sm_90a", tmp_path)
    assert " 0 bytes spill stores" in log
    lines = [(int(a, 16), t) for a, t in re.findall(r"/\*([0-9a-f]{4})\*/\s+([^;]*);", sass)]
    back = [(int(b, 16), a) for a, t in lines for b in re.findall(r"BRA (?:!?U?P\d, )?0x([0-9a-f]+)", t) if int(b, 16) < a]
    head, end = back[0]  # the first loop: the steps whose tiles lie inside the tensor
    body = [t for a, t in lines if head <= a <= end]
    assert sum(t.startswith("LDG.E.128") for t in body) >= 8
    # up to the batch's branch (its slow path's copies clamp as before): none of TileBounds::clamp's
    # +-2^30 of a 64-bit origin, 4 tiles x 25 instructions before batch_test
    test = body[:next(i for i, t in enumerate(body) if "BRA" in t)]
    assert len(test) < 40 and not [t for t in test if "0x40000000" in t or "0xc0000000" in t], test


@pytest.mark.nvcc
def test_a_batch_of_16_bit_copies_into_their_own_type_converts_nothing(tmp_path):
    k = tlc.compile_source(PAIR, target="cpu").pair.scheduled({}, "sm_90a")
    source = generate_file([k], "sm_90a")
    assert "tl::g2f_convert(fa, tl_batch0);" in source
    sass, log = cubin_sass(DEFINE + source, "sm_90a", tmp_path)
    assert " 0 bytes spill stores" in log
    ops = re.findall(r"/\*[0-9a-f]{4}\*/\s+([^;]*);", sass)
    first = next(i for i, t in enumerate(ops) if t.startswith("LDG.E.128"))  # the batch's block: no predicate
    block = ops[first:next(i for i in range(first, len(ops)) if re.match(r"(BSYNC|BRA|EXIT|@)", ops[i]))]
    assert sum(t.startswith("LDG.E.128") for t in block) == 4, block  # 2 runs a thread, each copy
    assert not [t for t in block if re.match(r"(HADD2\.F32|F2FP)", t)], block  # 8 and 4 a vector before
