"""fast_math.py: exp as fast_exp2, log as fast_log2, a loop-invariant division as a product with its reciprocal
and any other division as fast_div where the values stored end at 16-bit precision (issue #17's
plain softmax, issue #13's element-wise math), and the precise forms everywhere else."""
from __future__ import annotations

import re
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

import tlc
from tlc.ir import print_kernel
from tlc.schedule.fast_math import precise_names

from kit import scheduled
from test_layout_infer import SOFTMAX_ROW

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "codegen"))  # nvcc.py, the shared compile helper
from nvcc import BUILD_ARCHS, compile_device  # noqa: E402

PLAIN = Path(__file__).resolve().parents[2] / "bench" / "plain"

# test_layout_infer's plain softmax (rows of 8192 at 256 threads), its output's type a parameter
ROWS = SOFTMAX_ROW.replace("y: f16[M, N], BN", "y: U[M, N], U: dtype = f16, BN") + """
@kernel
def steps(x: f16[M, N], y: f16[M, N], BN: const = 512):
    with grid(M, threads=128) as r:
        row = fragment(f32[1, BN])
        copy(x[r, 0], row)
        for j in parallel(BN):
            row[0, j] = where(exp(row[0, j]) > 2.0, 1.0, 0.0) + row[0, j] / (row[0, j] + 4.0)
        copy(row, y[r, 0])

@kernel
def ratio(x: f16[M, N], y: U[M, N], U: dtype = f16, BN: const = 512):
    with grid(M, threads=128) as r:
        row = fragment(f32[1, BN])
        copy(x[r, 0], row)
        for j in parallel(BN):
            row[0, j] = sqrt(row[0, j] * row[0, j] + 1.0) / (row[0, j] * row[0, j] + 4.0)
        copy(row, y[r, 0])
"""


def test_the_plain_softmax_takes_the_fast_forms():
    k = scheduled((PLAIN / "softmax.tl").read_text(), "softmax", target="sm_90a")
    assert k.notes[0] == ("fast math: 1 exp as fast_exp2 and 1 division by a loop-invariant as a product with its "
                          "reciprocal, where the values stored (row) end at 16-bit precision")
    text = print_kernel(k)
    assert "    row[u1, j] = fast_exp2((row[u1, j] - row_max[u1]) * 1.4426950408889634)\n" in text
    assert "  let rcp0: f32 = 1.0 / row_sum[0]\n  for u2, j in parallel(1, 8192):\n    row[u2, j] = row[u2, j] * rcp0\n" in text


def test_an_f32_output_keeps_the_precise_forms():
    k = scheduled(ROWS, "softmax", {"U": "f32"})
    assert not any(n.startswith("fast math") for n in k.notes)
    text = print_kernel(k)
    assert "row[u0, j] = exp(row[u0, j] - mx[u0])" in text and "row[u1, j] = row[u1, j] / sm[u1]" in text
    assert {"row", "sm", "mx", "y"} <= precise_names(k)


def test_a_condition_keeps_the_precise_forms():
    """exp's value decides a comparison (which needs every bit), and the row it reads is what
    the division divides"""
    k = scheduled(ROWS, "steps")
    assert not any(n.startswith("fast math") for n in k.notes)
    assert "where(exp(row[u0, j]) > 2.0, 1.0, 0.0) + row[u0, j] / (row[u0, j] + 4.0)" in print_kernel(k)


def test_a_varying_divisor_and_a_root_take_the_hardware_forms():
    """Each element's own divisor: div.full.f32 (2 ulp, no branch) where the quotient ends at
    f16, the IEEE division where it ends at f32; the root likewise (sqrt.approx.f32)."""
    k = scheduled(ROWS, "ratio")
    assert k.notes[0] == ("fast math: 1 division as fast_div and 1 sqrt as fast_sqrt, where the values stored (row) "
                          "end at 16-bit precision")
    assert "row[u0, j] = fast_div(fast_sqrt(row[u0, j] * row[u0, j] + 1.0), row[u0, j] * row[u0, j] + 4.0)" \
        in print_kernel(k)
    k = scheduled(ROWS, "ratio", {"U": "f32"})
    assert not any(n.startswith("fast math") for n in k.notes)
    assert "row[u0, j] = sqrt(row[u0, j] * row[u0, j] + 1.0) / (row[u0, j] * row[u0, j] + 4.0)" in print_kernel(k)


def test_a_divisor_of_f16_takes_the_reciprocal_form():
    """std.broadcast's div of f16: f32(a) / f32(b) of two f16 values divides by an f16 divisor
    (never subnormal, at most 65504): fast_div_near, a times MUFU.RCP's reciprocal, where
    div.full.f32 scales a divisor past 2^126 (two FSETPs and four FMULs an element); a quotient
    of f32 values keeps fast_div (the test above), one of bf16 too (its divisor may pass 2^126)."""
    bc = tlc.load("std.broadcast", target="cpu")
    text = print_kernel(bc.div.scheduled({"T": "f16"}, "sm_90a"))
    assert text.count("fast_div_near(") == 2 and "fast_div(" not in text
    text = print_kernel(bc.div.scheduled({"T": "bf16"}, "sm_90a"))
    assert text.count("fast_div(") == 2 and "fast_div_near(" not in text


def test_a_quotient_that_reaches_an_8_bit_float_keeps_the_ieee_division():
    """Into f8 the root is still fast_sqrt, but the division stays IEEE: a quotient of
    low-precision values often lies exactly halfway between two f8 values, which only the IEEE
    division rounds to even (the fp8 cast port failed on the H200 with fast_div)."""
    k = scheduled(ROWS, "ratio", {"U": "f8e4m3"})
    assert k.notes[0] == "fast math: 1 sqrt as fast_sqrt, where the values stored (row) end at 16-bit precision"
    assert "row[u0, j] = fast_sqrt(row[u0, j] * row[u0, j] + 1.0) / (row[u0, j] * row[u0, j] + 4.0)" \
        in print_kernel(k)
    assert "row" in precise_names(k, min_bits=16) and "row" not in precise_names(k)


def test_an_element_wise_tile_op_of_f16_takes_the_fast_forms():
    """std.elementwise's mish of f16: its exponential and its quotient the fast forms (the tile
    ops' kernels take the pass too); of f32 the precise ones."""
    ew = tlc.load("std.elementwise", target="cpu")
    k = ew.mish.program({"T": "f16"}, "sm_90a").launches[0].kernel
    assert ("fast math: 1 exp as fast_exp2 and 1 division as fast_div, where the values stored "
            "(n_0, out_tile) end at 16-bit precision") in k.notes
    k = ew.mish.program({"T": "f32"}, "sm_90a").launches[0].kernel
    assert not any(n.startswith("fast math") for n in k.notes)


def test_a_tanh_rounded_to_16_bits_at_once_is_the_hardware_one():
    """std.elementwise's tanh of f16 stores f16(tanh(x)): fast_tanh (2^-16 relative, under half
    an f16 ulp); an f32 tanh computed on, as 1 - t^2 would be, stays precise (tanhshrink's x - t
    cancels where t is near x)."""
    ew = tlc.load("std.elementwise", target="cpu")
    text = print_kernel(ew.tanh.program({"T": "f16"}, "sm_90a").launches[0].kernel)
    assert "out_tile[i] = f16(fast_tanh(f32(x_tile[i])))" in text and "1 tanh as fast_tanh" in text
    text = print_kernel(ew.tanhshrink.program({"T": "f16"}, "sm_90a").launches[0].kernel)
    assert "fast_tanh" not in text and "f32(x_tile[i]) - tanh(f32(x_tile[i]))" in text
    assert "fast_tanh" not in print_kernel(ew.tanh.program({"T": "f32"}, "sm_90a").launches[0].kernel)


def test_sin_and_cos_of_16_bit_results_take_the_short_forms():
    """sin and cos stored as f16 or bf16 are tl::fast_sin and fast_cos (one polynomial after a
    reduction by pi, no branch: 14 and 15 instructions an element, sinf's 25); of an f16 argument
    the _near forms, without the check for |x| < 2^17 (f16 ends at 65504); bf16's reaches 3e38 and
    keeps it; an f32 result keeps CUDA's sinf and cosf."""
    ew = tlc.load("std.elementwise", target="cpu")
    for fn in ("sin", "cos"):
        text = print_kernel(getattr(ew, fn).program({"T": "f16"}, "sm_90a").launches[0].kernel)
        assert f"out_tile[i] = f16(fast_{fn}_near(f32(x_tile[i])))" in text and f"1 {fn} as fast_{fn}" in text
        text = print_kernel(getattr(ew, fn).program({"T": "bf16"}, "sm_90a").launches[0].kernel)
        assert f"out_tile[i] = bf16(fast_{fn}(f32(x_tile[i])))" in text
        text = print_kernel(getattr(ew, fn).program({"T": "f32"}, "sm_90a").launches[0].kernel)
        assert f"fast_{fn}" not in text and f"{fn}(x_tile[i])" in text


def test_logarithms_of_16_bit_results_are_the_hardware_ones():
    """std.elementwise's log2 and softplus of f16: fast_log2 and fast_log1p (lg2.approx away from
    1, a polynomial near it: tl/types.cuh, tests/codegen/test_fast_log.py); of f32 the precise
    ones."""
    ew = tlc.load("std.elementwise", target="cpu")
    k = ew.log2.program({"T": "f16"}, "sm_90a").launches[0].kernel
    assert "fast math: 1 log as fast_log2, where the values stored (out_tile) end at 16-bit precision" in k.notes
    assert "out_tile[i] = f16(fast_log2(f32(x_tile[i])))" in print_kernel(k)
    text = print_kernel(ew.softplus.program({"T": "f16"}, "sm_90a").launches[0].kernel)
    assert "1 exp as fast_exp2 and 1 log1p as fast_log1p, where" in text
    assert "fast_log1p(fast_exp2(-abs(softplus_f32_0_x) * 1.4426950408889634))" in text
    text = print_kernel(ew.pow.program({"T": "bf16"}, "sm_90a").launches[0].kernel)
    assert "1 pow as fast_pow (its special cases on a rare branch), where" in text
    assert "out_tile[i] = bf16(fast_pow_rare(f32(a_tile[i]), f32(b_tile[i])))" in text
    k = ew.log1p.program({"T": "f32"}, "sm_90a").launches[0].kernel
    assert not any(n.startswith("fast math") for n in k.notes) and "out_tile[i] = log1p(x_tile[i])" in print_kernel(k)


RARE_POW = """
@tile_op
def pow_rare_branch(a: T[M, N], b: T[M, N], T: dtype = f32) -> T[M, N]:
    return T(pow(f32(a), f32(b)))
"""


def test_pow_takes_its_special_cases_on_a_rare_branch_where_asked(monkeypatch, tmp_path):
    """fast_math.RARE_POW_SPECIALS (on by default since the H200 timed it, session 28): pow of
    16-bit values as fast_pow_rare / fast_pow_near_rare, the same values (tests/codegen/
    test_fast_log.py's special pairs), the special cases behind one branch an element that a
    positive base with a numeric product never takes; off, the selects' fast_pow_near; the
    interpreter agrees with NumPy."""
    import tlc.schedule.fast_math as fm

    assert fm.RARE_POW_SPECIALS is True
    monkeypatch.setattr(fm, "RARE_POW_SPECIALS", False)
    mod = tlc.compile_source(RARE_POW, target="cpu", path=str(tmp_path / "selects.tl"))
    text = print_kernel(mod.pow_rare_branch.program({"T": "f16"}, "sm_90a").launches[0].kernel)
    assert "1 pow as fast_pow, where" in text and "out_tile[i] = f16(fast_pow_near(f32(a_tile[i]), f32(b_tile[i])))" in text
    monkeypatch.setattr(fm, "RARE_POW_SPECIALS", True)
    mod = tlc.compile_source(RARE_POW, target="cpu", path=str(tmp_path / "rare.tl"))
    text = print_kernel(mod.pow_rare_branch.program({"T": "f16"}, "sm_90a").launches[0].kernel)
    assert "1 pow as fast_pow (its special cases on a rare branch), where" in text
    assert "out_tile[i] = f16(fast_pow_near_rare(f32(a_tile[i]), f32(b_tile[i])))" in text
    text = print_kernel(mod.pow_rare_branch.program({"T": "bf16"}, "sm_90a").launches[0].kernel)
    assert "bf16(fast_pow_rare(f32(a_tile[i]), f32(b_tile[i])))" in text
    a = np.array([[2.0, -2.0, 0.0, 1.5, -0.5, 3.0]], np.float16)
    b = np.array([[3.0, 3.0, 0.0, -2.0, 0.5, 0.5]], np.float16)
    with np.errstate(invalid="ignore"):
        want = np.power(a.astype(np.float64), b.astype(np.float64)).astype(np.float16)
    got = np.asarray(tlc.compile_source(RARE_POW, target="interp", path=str(tmp_path / "rare_i.tl")).pow_rare_branch(a, b))
    assert np.array_equal(got, want, equal_nan=True)


def test_the_interpreter_and_the_cpu_target_divide_and_take_roots_exactly():
    rng = np.random.default_rng(3)
    x = (rng.standard_normal((2, 512)) * 4).astype(np.float16)
    x32 = x.astype(np.float32)
    want = np.sqrt(x32 ** 2 + 1) / (x32 ** 2 + 4)
    for target in ("cpu", "interp"):
        y = np.full_like(x, np.nan)
        tlc.compile_source(ROWS, target=target).ratio(x, y, BN=512)
        assert np.array_equal(y, want.astype(np.float16)), target


def test_divisions_in_a_loop_run_once_a_thread_are_not_made_reciprocals():
    """std.nn's layer_norm divides in parallel(1) loops: one division a thread either way, and
    each reciprocal a scalar more against its blocks per SM"""
    k = tlc.load("std.nn", target="cpu").layer_norm.scheduled({}, "sm_90a")
    assert "rcp" not in print_kernel(k) and k.min_blocks == 2


def test_a_division_by_a_row_vectors_element_takes_one_reciprocal_a_row():
    """flash attention's epilogue, acc[i, j] / row_sum[i]: a fragment of the rows' reciprocals
    in row_sum's layout, filled by a loop over the rows before, where each of a thread's 64
    divisions was div.full.f32 around a branch (5% of flash_fwd's time on the H200)."""
    from tlc.ir.printer import print_kernel as text_of
    k = tlc.load("std.attention", target="cpu").kernels["flash_fwd"].scheduled({"D": 128}, "sm_90a")
    assert k.notes[-1] == ("fast math: 1 division by a loop-invariant as a product with its reciprocal, where the "
                           "values stored (acc) end at 16-bit precision")
    rcp = k.buffer("rcp_row_sum0")
    assert rcp.scope == "fragment" and rcp.layout == k.buffer("row_sum").layout and rcp.shape == (128,)
    text = text_of(k)
    assert ("  for i in parallel(128):\n    rcp_row_sum0[i] = 1.0 / row_sum[i]\n  for i, j in parallel(128, 128):\n"
            "    acc[i, j] = where(row_sum[i] > 0.0, acc[i, j] * rcp_row_sum0[i], 0.0)\n") in text


def test_the_interpreter_matches_numpy():
    rng = np.random.default_rng(2)
    x = (rng.standard_normal((3, 512)) * 4).astype(np.float16)  # (no mask: N = BN)
    y = np.full_like(x, np.nan)
    mod = tlc.compile_source(ROWS, target="cpu")
    mod.softmax(x, y, BN=512)
    e = np.exp(x.astype(np.float64) - x.max(axis=1, keepdims=True))
    assert np.abs(y - e / e.sum(axis=1, keepdims=True)).max() < 1e-3


@pytest.mark.nvcc
@pytest.mark.parametrize("arch", BUILD_ARCHS)
def test_the_fast_forms_and_narrow_fragments_build(arch, tmp_path):
    """One module: fast_exp2 and a hoisted reciprocal (softmax), an exponential kept precise by a
    comparison (steps), fast_div and fast_sqrt (ratio), rows held in f16 and kept f32 for bf16 (rms), a recomputed update (the plain
    layer_norm, rows of 4096); no spills."""
    from tlc.codegen import generate_file

    from test_narrow_fragments import RMS, plain

    kernels = [scheduled(ROWS, "softmax", target=arch), scheduled(ROWS, "steps", target=arch),
               scheduled(ROWS, "ratio", target=arch),
               scheduled(RMS, "rms", {"T": "bf16", "U": "bf16"}, target=arch), scheduled(RMS, "clipped", target=arch),
               replace(plain("layer_norm", BN=4096), name="layer_norm_4096")]
    assert "fast_exp2" in print_kernel(kernels[0]) and kernels[5].buffer("row").dtype.name == "f16"
    log = compile_device(generate_file(kernels, arch), arch, tmp_path)
    spills = re.findall(r"(\d+) bytes spill stores, (\d+) bytes spill loads", log)
    assert len(spills) == len(kernels) and set(spills) == {("0", "0")}, log
