"""schedule/column_blocks.py: a column reduction over enough blocks (narrow_column_blocks) and
its threads combining once after the loop (defer_column_combine), as --emit ir shows them, on
the interpreter against NumPy and against the same kernel scheduled without the pass, and in
one nvcc build of every kernel here for sm_80 and sm_90a."""
from __future__ import annotations

import re
import sys
from pathlib import Path

import numpy as np
import pytest

import tlc
import tlc.schedule
from tlc import ir
from tlc.dtypes import I32
from tlc.codegen import generate_file
from tlc.interp import run_kernel

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "codegen"))  # nvcc.py, the shared compile helper
from nvcc import BUILD_ARCHS, compile_object  # noqa: E402

SUM = """
@kernel
def colsum(x: f32[M, N], out: f32[N], BM: const = 8, BN: const = 128):
    with grid(cdiv(N, BN), threads=128) as bx:
        tile = fragment(f32[BM, BN])
        acc = fragment(f32[BN])
        clear(acc)
        for t in range(cdiv(M, BM)):
            copy(x[t * BM, bx * BN], tile)
            reduce_sum(tile, acc, dim=0, clear=False)
        copy(acc, out[bx * BN])
"""

# a max over f16: 64 columns (128 bytes) a block, rows not grown (a row past the tensor reads 0,
# which is no identity of max)
MAX = """
@kernel
def colmax(x: f16[M, N], out: f32[N], BM: const = 8, BN: const = 256):
    with grid(cdiv(N, BN), threads=128) as bx:
        tile = fragment(f32[BM, BN])
        acc = fragment(f32[BN])
        fill(acc, -inf(f32))
        for t in range(cdiv(M, BM)):
            copy(x[t * BM, bx * BN], tile)
            reduce_max(tile, acc, dim=0, clear=False)
        copy(acc, out[bx * BN])
"""

# the loop stops a tile short of the tensor: narrowed, but its tiles keep their rows
SHORT = SUM.replace("def colsum(", "def short(").replace("range(cdiv(M, BM))", "range(cdiv(M, BM) - 1)")

# bx read outside `bx * BN` (a per-block scale): left as written
OTHER = SUM.replace("def colsum(", "def scaled(").replace(
    "        copy(acc, out[bx * BN])", "        for j in parallel(BN):\n            acc[j] = acc[j] * f32(bx + 1)\n"
    "        copy(acc, out[bx * BN])")

# a filled tile summed along with the copied one (a row count): its rows past the tensor are 1,
# so its tiles keep their rows
COUNT = """
@kernel
def count(x: f32[M, N], out: f32[N], BM: const = 8, BN: const = 128):
    with grid(cdiv(N, BN), threads=128) as bx:
        tile = fragment(f32[BM, BN])
        ones = fragment(f32[BM, BN])
        acc = fragment(f32[BN])
        clear(acc)
        fill(ones, 1.0)
        for t in range(cdiv(M, BM)):
            copy(x[t * BM, bx * BN], tile)
            reduce_sum(tile, acc, dim=0, clear=False)
            reduce_sum(ones, acc, dim=0, clear=False)
        copy(acc, out[bx * BN])
"""

# the whole tiles, then the rest, into one accumulator (a tile op's column loop, split by
# tileops/rows.py): one partial for both loops, combined once after the second
LOOP = ("        for {v} in range({r}):\n            copy(x[{v} * BM, bx * BN], tile)\n"
        "            reduce_sum(tile, acc, dim=0, clear=False)\n")
TWO = SUM.replace("def colsum(", "def two(").replace("BN: const = 128", "BN: const = 32").replace(
    LOOP.format(v="t", r="cdiv(M, BM)"), LOOP.format(v="t", r="M // BM") + LOOP.format(v="u", r="M // BM, cdiv(M, BM)"))
assert TWO.count("for ") == 2

SOURCES = {"colsum": SUM, "colmax": MAX, "short": SHORT, "scaled": OTHER, "count": COUNT, "two": TWO}


def scheduled(name, arch="sm_80", **constants):
    return getattr(tlc.compile_source(SOURCES[name], target="cpu"), name).scheduled(constants, arch)


def unsplit(name, monkeypatch, **constants):
    """The kernel as scheduled without the pass (the program's own blocks and tiles)."""
    monkeypatch.setattr(tlc.schedule, "split_column_blocks", lambda k: k)
    return scheduled(name, **constants)


def run(kernel, x, n):
    out = np.full(n, np.nan, np.float32)
    run_kernel(kernel, {"x": x, "out": out})
    return out


def test_a_column_sum_takes_a_line_of_columns_a_block_and_the_rows_to_keep_its_tile():
    text = tlc.compile_source(SUM, target="cpu").colsum.ir()
    assert "  grid (bx) in (((N - 1) // 128 + 1) * 4) threads=128\n" in text
    assert "  fragment tile: f32[32, 32] layout=blocked(vec=4, threads=128)\n" in text
    assert ("  fill acc_part = 0.0\n  for t in range(0, ((M - 1) // 8 + 1 - 1) // 4 + 1, 1):\n"
            "    copy x[t * 32, bx * 32]<32, 32> -> tile\n    for acc_part_i, acc_part_j in parallel(32, 32):\n"
            "      acc_part[acc_part_i, acc_part_j] = acc_part[acc_part_i, acc_part_j] + tile[acc_part_i, acc_part_j]\n"
            "  reduce_sum acc_part -> acc dim=0 accumulate\n  copy acc -> out[bx * 32]<32>\n") in text
    assert ("# note: column blocks: each block's 128 columns split over 4 blocks of 32 (a 128-byte line of each "
            "row), and 4 times the rows per tile (32: a sum's rows past the tensor read as 0), so that 4 times "
            "the blocks share the rows' reading; each column is still reduced by one block") in text
    assert ("# note: reduce_sum tile -> acc (line 10): its 32 columns cannot each be one thread's at 128 threads, "
            "so each thread combines its elements of every tile in acc_part and the threads combine once, after "
            "the loop") in text


@pytest.mark.parametrize("m, n", [(1, 1), (37, 300), (64, 128), (131, 33)])
def test_a_column_sum_runs_as_numpy_says(m, n):
    x = np.random.default_rng(m * n).standard_normal((m, n)).astype(np.float32)
    np.testing.assert_allclose(run(scheduled("colsum"), x, n), x.sum(axis=0), rtol=1e-5, atol=1e-5)


def test_a_column_max_is_narrowed_but_keeps_its_rows(monkeypatch):
    k = scheduled("colmax")
    assert k.grid[0] == ir.BinOp("*", unsplit("colmax", monkeypatch).grid[0], ir.Const(4, I32), I32)
    assert k.buffer("tile").shape == (8, 64) and k.buffer("acc_part").shape == (8, 64)
    part = next(s for s in k.body if isinstance(s, ir.Fill) and s.buffer == "acc_part")
    assert part.value.value == float("-inf")
    x = -np.abs(np.random.default_rng(5).standard_normal((45, 200))).astype(np.float16)  # ragged: zeros join in
    assert np.array_equal(run(k, x, 200), run(unsplit("colmax", monkeypatch), x, 200))
    x = x[:40]  # whole tiles: the maxima of the columns alone
    np.testing.assert_array_equal(run(k, x, 200), x.astype(np.float32).max(axis=0))


def test_a_loop_short_of_the_tensor_keeps_its_rows(monkeypatch):
    k = scheduled("short")
    assert k.buffer("tile").shape == (8, 32) and len(k.notes) >= 2 and "times the rows" not in k.notes[0]
    x = np.random.default_rng(7).standard_normal((50, 140)).astype(np.float32)
    np.testing.assert_allclose(run(k, x, 140), run(unsplit("short", monkeypatch), x, 140), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(run(k, x, 140), x[:48].sum(axis=0), rtol=1e-5, atol=1e-5)  # 6 tiles of 8


def test_a_filled_tile_keeps_its_rows(monkeypatch):
    k = scheduled("count")
    assert k.buffer("tile").shape == (8, 32) and k.buffer("ones").shape == (8, 32)
    x = np.random.default_rng(9).standard_normal((45, 130)).astype(np.float32)
    np.testing.assert_allclose(run(k, x, 130), x.sum(axis=0) + 48, rtol=1e-5, atol=1e-5)  # 6 tiles of 8 ones
    np.testing.assert_allclose(run(k, x, 130), run(unsplit("count", monkeypatch), x, 130), rtol=1e-5, atol=1e-5)


def test_two_loops_in_a_row_into_one_accumulator_share_one_partial():
    k = scheduled("two")
    assert [b.name for b in k.buffers if b.name.endswith("_part")] == ["acc_part"]
    kinds = [type(s).__name__ for s in k.body]
    assert kinds[-5:] == ["Fill", "For", "For", "Reduce", "Copy"], kinds
    assert sum(n.startswith("reduce_sum tile -> acc") for n in k.notes) == 1
    for m in (3, 40, 45):  # the second loop only, the first only, both
        x = np.random.default_rng(m).standard_normal((m, 70)).astype(np.float32)
        np.testing.assert_allclose(run(k, x, 70), x.sum(axis=0), rtol=1e-5, atol=1e-5)


def test_a_block_index_read_elsewhere_leaves_the_kernel_as_written():
    """No narrowing; its tile gives each thread whole columns (128 at 128 threads), so the
    reduction stays in the loop, in each thread's registers, and no partial is added."""
    for arch in ("sm_80", "sm_90a"):
        k = scheduled("scaled", arch)
        assert k.buffer("tile").shape == (8, 128) and not any(n.startswith("column blocks") for n in k.notes)
        loop = next(s for s in k.body if isinstance(s, ir.For))
        assert any(isinstance(s, ir.Reduce) for s in loop.body)
        assert not any(b.name.endswith("_part") for b in k.buffers)


@pytest.mark.nvcc
@pytest.mark.parametrize("arch", BUILD_ARCHS)
def test_the_column_kernels_build_for_each_target(arch, tmp_path):
    """One module of every kernel here and bench/plain_ops.tl's sum(x, axis=0) at 16384 x 8192,
    as a call schedules them (nvcc -c, warnings as errors), without spills."""
    ops = tlc.load(str(Path(__file__).resolve().parents[2] / "bench" / "plain_ops.tl"), target="cpu")
    (launch,) = ops.column_sums_op.program({}, arch, sizes={"M": 16384, "N": 8192}).launches
    kernels = [scheduled(name, arch) for name in SOURCES] + [launch.kernel]
    log = compile_object(generate_file(kernels, arch), arch, tmp_path)
    spills = re.findall(r"(\d+) bytes spill stores, (\d+) bytes spill loads", log)
    assert len(spills) >= len(kernels) and all(pair == ("0", "0") for pair in spills), log
