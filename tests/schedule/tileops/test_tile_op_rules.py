"""The scheduling numbers bench/fusion.py sweeps (`Rules`, `TileOp.with_rules`): every variant
computes what NumPy does on the interpreter, on rows that fit one tile (read once, softmax's
exponentials kept or recomputed) and rows that take several, and compiles with nvcc for sm_90a
with no spills."""
from __future__ import annotations

import pathlib
import re
import sys
from dataclasses import replace

import numpy as np
import pytest

from tileops_kit import assert_close, f32, module, rand, softmax
from tlc import ir
from tlc.ir.walk import statements
from tlc.schedule.tileops import Rules

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "codegen"))
from nvcc import compile_device  # noqa: E402

SRC = """
@tile_op
def smax(x: f16[M, N]) -> f16[M, N]:
    return softmax(x, axis=1)

@tile_op
def lse(x: f32[M, N]) -> f32[M, 1]:
    m = max(x, axis=1, keepdims=True)
    return m + log(sum(exp(x - m), axis=1, keepdims=True))

@tile_op
def scaled(x: f16[M, N], s: f32) -> f16[M, N]:
    return f16(softmax(x * s, axis=1) * sum(x, axis=1, keepdims=True))

@tile_op
def chain(x: f16[N], y: f16[N]) -> f16[N]:
    return f16(exp(x * y) - sqrt(abs(y)) + x)
"""

VARIANTS = [{}, {"row_elems_per_thread": 8}, {"row_elems_per_thread": 32}, {"row_keep_exp": False},
            {"row_block_elems": 8192}, {"ew_runs": 2}, {"ew_runs": 4, "ew_threads": 128}, {"min_blocks": 4},
            {"min_blocks": 3, "row_keep_exp": False}]
RNG = np.random.default_rng(21)


# the default rules in the default run, the variants under -m slow
@pytest.mark.parametrize("rules", [pytest.param(r, marks=[pytest.mark.slow] if r else []) for r in VARIANTS], ids=lambda r: ",".join(f"{k}={v}" for k, v in r.items()) or "default")
@pytest.mark.parametrize("cols", [300, 512, 9000])  # 512: one whole tile, unmasked
def test_variants_agree_with_numpy(rules, cols):
    mod = module(SRC)
    x = rand(RNG, (5, cols), np.float16)
    assert_close(mod.smax.with_rules(**rules)(x), softmax(f32(x), 1))
    z = rand(RNG, (5, cols))
    m = z.max(1, keepdims=True)
    assert_close(mod.lse.with_rules(**rules)(z), m + np.log(np.exp(z - m).sum(1, keepdims=True)))
    want = softmax(f32(x) * 0.5, 1) * f32(x).sum(1, keepdims=True)
    assert_close(mod.scaled.with_rules(**rules)(x, 0.5), want)
    a, b = rand(RNG, 3000, np.float16) * 0.5, rand(RNG, 3000, np.float16)
    assert_close(mod.chain.with_rules(**rules)(a, b), f32(np.exp(a * b)) - np.sqrt(np.abs(f32(b))) + f32(a))


def test_one_tile_softmax_reads_once_and_multiplies():
    """Rows that fit one tile: x copied once, exp computed once, each element multiplied by the
    reciprocal of its row's sum (no division per element); rows exactly one tile long (N == 8192)
    take the same path without the masks of the columns past N."""
    from tlc import ir
    from tlc.ir.walk import statements

    kernel = module(SRC).smax.program({}, "sm_90a", {"M": 16384, "N": 8192}).launches[0].kernel
    (branch,) = [s for s in kernel.body if isinstance(s, ir.If)]
    (exact,) = branch.then
    assert isinstance(exact, ir.If) and ir.printer.expr(exact.cond) == "N == 8192"
    for path in (exact.then, exact.orelse):
        copies = [s for s in statements(path) if isinstance(s, ir.Copy)]
        assert [(c.src.name, c.dst.name) for c in copies] == [("x", "x_tile"), ("out_tile", "out")]
    one_tile = ir.print_kernel(kernel).split("if tiles == 1:")[1].split("\n  else:")[0]
    unmasked, masked = one_tile.split("\n    else:")
    for text in (unmasked, masked):
        assert text.count("fast_exp2(") == 1  # 16-bit: the hardware exponential (tests/codegen/test_fast_exp.py)
        assert text.count(" / ") == 1 and "row_sum[i] = 1.0 / row_sum[i]" in text
    assert "< N" not in unmasked and masked.count("t * 8192 + j < N") == 1


def test_rules_must_be_powers_of_two():
    with pytest.raises(ValueError, match=r"^rule ew_runs must be a power of two, not 3$"):
        Rules(ew_runs=3)
    with pytest.raises(ValueError, match=r"^rule ew_threads must be 32 to 1024, not 2048$"):
        Rules(ew_threads=2048)
    with pytest.raises(ValueError, match=r"^rule min_blocks must be 0 \(the estimate\) to 32, not 33$"):
        Rules(min_blocks=33)


COLUMNS = """
@tile_op
def colsum(x: f32[M, N]) -> f32[N]:
    return sum(x, axis=0)
"""


@pytest.mark.parametrize("sizes, tiles", [
    ({"M": 16384, "N": 8192}, "64 columns per block, 128 per tile, threads=512"),     # 128 blocks, not 32
    ({"M": 1024, "N": 131072}, "256 columns per block, 32 per tile, threads=512"),    # 512 blocks already
    ({"M": 8, "N": 8192}, "64 columns per block, 8 per tile, threads=128"),           # a short tensor
    ({"M": 4096, "N": 100}, "32 columns per block, 256 per tile, threads=512"),       # fewer than 32 columns
    ({"M": 64, "N": 64}, "32 columns per block, 64 per tile, threads=128"),
])
def test_column_kernels_take_enough_blocks(sizes, tiles):
    (launch,) = module(COLUMNS).colsum.program({}, "sm_90a", sizes).launches
    assert launch.tiles == tiles


@pytest.mark.parametrize("rules", [{}, {"col_block_elems": 2048}, {"col_block_elems": 16384},
                                   {"col_elems_per_thread": 8}], ids=str)
def test_column_rules_agree_with_numpy(rules):
    x = rand(RNG, (300, 200))
    assert_close(module(COLUMNS).colsum.with_rules(**rules)(x), x.sum(axis=0))
    with pytest.raises(ValueError, match=r"^rule col_block_elems must be a power of two, not 3000$"):
        Rules(col_block_elems=3000)
    with pytest.raises(ValueError, match=r"^rule col_elems_per_thread must be a power of two, not 12$"):
        Rules(col_elems_per_thread=12)


def test_col_registers_max_keeps_more_tiles_a_step():
    """var_axis0's three running values an element do not fit four [128, 64] f16 tiles a step
    under the default cap of 100 registers: eight [64, 64] tiles, the same bytes in flight (16
    copies in its two loops); a cap of 200 keeps four [128, 64] (eight copies); two tiles a step
    at most take two [128, 64] (half the bytes in flight)."""
    import tlc

    mod = tlc.load("std.reduce", target="cpu")
    for rules, copies, rows in (({}, 16, 64), ({"col_registers_max": 200}, 8, 128), ({"col_tiles_per_step": 2}, 4, 128)):
        (launch,) = mod.var_axis0.with_rules(**rules).program({"T": "f16"}, "sm_90a", {"M": 16384, "N": 8192}).launches
        copied = [s for s in statements(launch.kernel.body) if isinstance(s, ir.Copy)]
        assert len(copied) == copies and {c.src.extents for c in copied} == {(rows, 64)}, rules
    with pytest.raises(ValueError, match=r"^rule col_registers_max must be a positive number of registers, not 0$"):
        Rules(col_registers_max=0)
    with pytest.raises(ValueError, match=r"^rule col_tiles_per_step must be a power of two, not 3$"):
        Rules(col_tiles_per_step=3)


def test_column_tiles_halve_their_rows_before_their_bytes_in_flight():
    """f32 (4-element runs): sum_axis0 fits two [128, 64] tiles a step (8 runs in flight);
    var_axis0's running values do not, so four [64, 64] (8 runs) rather than one [128, 64]
    (4); eight [64, 64] would be 16 runs in flight (COL_RUNS_IN_FLIGHT 8), never tried."""
    import tlc

    mod = tlc.load("std.reduce", target="cpu")
    for name, copies, rows in (("sum_axis0", 4, 128), ("var_axis0", 8, 64)):
        (launch,) = getattr(mod, name).program({"T": "f32"}, "sm_90a", {"M": 16384, "N": 8192}).launches
        copied = [s for s in statements(launch.kernel.body) if isinstance(s, ir.Copy)]
        assert len(copied) == copies and {c.src.extents for c in copied} == {(rows, 64)}, name


def test_col_elems_per_thread_gives_the_threads_of_a_column_tile():
    (launch,) = module(COLUMNS).colsum.with_rules(col_elems_per_thread=8).program(
        {}, "sm_90a", {"M": 16384, "N": 8192}).launches
    assert launch.tiles == "64 columns per block, 128 per tile, threads=1024"


def test_min_blocks_asks_ptxas_for_more_blocks_per_sm():
    from tlc.codegen import generate_file

    mod = module(SRC)
    for rules, want in (({}, "__launch_bounds__(256, 4)"), ({"min_blocks": 2}, "__launch_bounds__(256, 2)")):
        prog = mod.smax.with_rules(**rules).program({}, "sm_90a", {"M": 16384, "N": 8192})
        assert want in generate_file(prog.kernels, "sm_90a", sources=mod.program.sources, source_name="ops.tl")


@pytest.mark.slow
def test_the_swept_kernels_compile_without_spills(tmp_path):
    from tlc.codegen import generate_file

    mod = module(SRC)
    kernels = []
    for k, rules in enumerate(VARIANTS):
        for name, sizes in (("smax", {"M": 16384, "N": 8192}), ("chain", {"N": 1 << 28})):
            prog = getattr(mod, name).with_rules(**rules).program({}, "sm_90a", sizes)
            kernels.extend(replace(x, name=f"v{k}_{x.name}") for x in prog.kernels)
    log = compile_device(generate_file(kernels, "sm_90a", sources=mod.program.sources, source_name="ops.tl"),
                         "sm_90a", tmp_path)
    assert set(re.findall(r"(\d+) bytes spill stores", log)) == {"0"}, log


# (tile op, sizes) -> blocks per SM that rules.row_blocks_per_sm picks from the row's registers;
# ptxas -v on sm_90a fits each without spilling (one more block spills, except where noted)
ROW_BLOCKS = [
    ("smax", {"M": 16384, "N": 8192}, 256, 4),  # 16 + 32 + 16 + 4, minus the 16 not live at once: 64 registers
    ("smax", {"M": 16384, "N": 16384}, 256, 3),  # no one-tile path: 68 + 12, 80 registers
    ("lse", {"M": 16384, "N": 8192}, 256, 3),  # an f32 row read by two passes: 78 registers
    ("lse", {"M": 16384, "N": 16384}, 256, 2),  # its f32 tile counted twice: 3 spill at 80
    ("smax", {"M": 16384, "N": 1024}, 128, 10),  # two rows a block: 48 registers (7 by the old estimate)
]


@pytest.mark.parametrize("name,sizes,threads,blocks", ROW_BLOCKS, ids=lambda v: str(v))
def test_row_blocks_per_sm_follow_the_registers_the_row_needs(name, sizes, threads, blocks):
    prog = getattr(module(SRC), name).program({}, "sm_90a", sizes)
    (kernel,) = prog.kernels
    assert (kernel.threads, kernel.min_blocks) == (threads, blocks)


@pytest.mark.slow  # an nvcc build (7 s of the default run)
def test_row_blocks_per_sm_compile_without_spills(tmp_path):
    from tlc.codegen import generate_file

    mod = module(SRC)
    kernels = [replace(k, name=f"r{i}_{k.name}") for i, (name, sizes, _, _) in enumerate(ROW_BLOCKS)
               for k in getattr(mod, name).program({}, "sm_90a", sizes).kernels]
    log = compile_device(generate_file(kernels, "sm_90a", sources=mod.program.sources, source_name="ops.tl"),
                         "sm_90a", tmp_path)
    assert set(re.findall(r"(\d+) bytes spill stores", log)) == {"0"}, log


REPEATED = """
@tile_op
def lse_rows(x: f16[M, N]) -> f16[M]:
    xf = f32(x)
    return f16(log(sum(exp(xf - max(xf, axis=1, keepdims=True)), axis=1)) + max(xf, axis=1))
"""


@pytest.mark.parametrize("cols", [300, 512, 9000])  # 512: one whole tile, unmasked  # one tile, and the tiled loops
def test_a_reduction_written_twice_is_computed_once(cols):
    """std.reduce's logsumexp writes max(xf) with and without keepdims: one statistic, read twice
    (one reduction each of max and sum on each path, not two of max), and the same result."""
    op = module(REPEATED).lse_rows
    (launch,) = op.program({}, "sm_90a", {"M": 5, "N": cols}).launches
    kinds = sorted(s.kind for s in statements(launch.kernel.body) if isinstance(s, ir.Reduce))
    # rows of one tile: its own two paths (N the tile's length, unmasked, and shorter) and the
    # tiled loops', each one max and one sum (was two max)
    assert kinds == (["max"] * 3 + ["sum"] * 3 if cols <= 8192 else ["max", "sum"]), kinds
    x = rand(RNG, (5, cols), np.float16)
    xf = x.astype(np.float64)
    want = np.log(np.exp(xf - xf.max(axis=1, keepdims=True)).sum(axis=1)) + xf.max(axis=1)
    assert_close(op(x), want)
