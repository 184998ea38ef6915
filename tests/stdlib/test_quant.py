"""std.quant against NumPy, one table (quant_kit.OPS): every operator on the interpreter at
ragged shapes (odd N, last groups and blocks cut short) for each input dtype, each quantized
dtype, dynamic and static scales, with NaN, infinities and an all-zero row in the inputs; round
trips and the error-feedback compressor over 100 steps; the module compiled by nvcc (sm_90a;
sm_80 in the slow run); the registry and the reference page.  tests/gpu/test_quant_gpu.py runs
the table on the GPU at larger shapes with the default tiles, and against PyTorch."""
from __future__ import annotations

import zlib

import numpy as np
import pytest

import tlc
from module_checks import (assert_builds_without_spills, assert_reference_page_is_current,
                           defs_without_a_doc_comment)
from op_registry import check_or_record
from op_tolerances import NUMPY
from quant_kit import (OPS, QTYPES, QUANT_PATH, expand, inputs, qmax, ref_compress, tiles, unpack)


@pytest.fixture(scope="module")
def mod():
    return tlc.load(QUANT_PATH, target="cpu")


def test_the_module_holds_every_operator_of_the_table(mod):
    assert {op.name for op in OPS} == set(mod.kernels)


def test_every_operator_has_a_doc_comment():
    """The line under each def is a comment saying what it computes (the reference page reads it)."""
    assert defs_without_a_doc_comment(QUANT_PATH) == []


PASSED: dict[str, set] = {}  # operator -> the dtypes whose rows passed in this run


@pytest.mark.parametrize("op,dtype", [pytest.param(op, d, id=f"{op.name}-{d}") for op in OPS for d in op.dtypes])
def test_against_numpy(mod, op, dtype):
    for shape, consts in tiles(op.name):
        op.check(mod, np.random.default_rng(zlib.crc32(op.name.encode()) + shape[0]), dtype, shape, consts)
    PASSED.setdefault(op.name, set()).add(dtype)


def test_registry():
    """stdlib/tested.json lists exactly the operators of this table, each of whose rows (every
    dtype) passed in this run (TLC_RECORD_TESTED=1 rewrites it; tests/stdlib/op_registry.py)."""
    table = {op.name: set(op.dtypes) for op in OPS}
    check_or_record("std.quant", table, {k: v for k, v in PASSED.items() if v == table.get(k)}, __file__)


@pytest.mark.parametrize("q", QTYPES)
def test_round_trip_error_is_half_a_step_and_saturation_clamps(mod, q):
    """dequantize(quantize(x)) per token: within half a quantization step of x (i8), or half an
    f8 unit of |x| / scale (f8), rounded to f16 once more; a static scale too small saturates
    every large value to QMAX (or the format's least value), and NaN gives 0 (i8) or NaN (f8)."""
    M, N = 6, 257
    x = inputs(np.random.default_rng(1), M, N, "f16", specials=False)
    qv, s, y = np.zeros((M, N), NUMPY[q]), np.zeros(M, np.float32), np.zeros((M, N), np.float16)
    mod.quantize_per_token(x, qv, s, Q=q, BN=128, THREADS=32)
    mod.dequantize_per_token(qv, s, y, Q=q, BN=128, THREADS=32)
    x64, y64, s64 = x.astype(np.float64), y.astype(np.float64), s.astype(np.float64)[:, None]
    step = s64 * (1.0 if q == "i8" else 2.0 ** -{"f8e4m3": 3, "f8e5m2": 2}[q] * np.maximum(np.abs(x64) / np.maximum(s64, 1e-300), 2.0 ** {"f8e4m3": -6, "f8e5m2": -14}[q]))
    assert (np.abs(y64 - x64) <= step / 2 + np.abs(x64) * 2.0 ** -11 + 1e-30).all()
    assert (np.abs(qv.astype(np.float64)) <= float(qmax(q))).all()
    # a static scale a quarter of the dynamic one: the quarter of the values past QMAX saturate
    x[0, :4] = [np.nan, np.inf, -np.inf, 0]
    small = s / 4
    mod.quantize_per_token(x, qv, small, Q=q, DYNAMIC=False, BN=128, THREADS=32)
    m = float(qmax(q))
    got = qv.astype(np.float64)
    big = np.abs(x.astype(np.float64) / small[:, None].astype(np.float64)) > m + 1
    low = -128.0 if q == "i8" else -m  # i8 saturates to its own range, -128 to 127
    assert big.sum() > 50 and (got[big] == np.where(x[big] > 0, m, low)).all()
    assert got[0, 1] == m and got[0, 2] == low and got[0, 3] == 0
    assert (got[0, 0] == 0) if q == "i8" else np.isnan(got[0, 0])


def test_error_feedback_stays_bounded_over_100_steps(mod):
    """compress_int4 then dequantize_int4 (the decompressor), 100 steps of gradients whose size
    drifts by 10x: each step's error is at most half a step of its group (|err| <= scale / 2),
    and the decompressed sum equals the gradients' sum minus the last error (nothing lost), up
    to f32 rounding; without the feedback the sums part as a random walk, several times
    farther (RMS)."""
    M, N, G = 5, 301, 32
    rng = np.random.default_rng(7)
    err = np.zeros((M, N), np.float32)
    total_g, total_d, total_plain = (np.zeros((M, N)) for _ in range(3))
    for step in range(100):
        g = (rng.standard_normal((M, N)) * 10.0 ** (step / 100)).astype(np.float32)
        q, s = np.zeros((M, (N + 1) // 2), np.uint8), np.zeros((M, -(-N // G)), np.float32)
        mod.compress_int4(g, err, q, s, G=G, BM=4, THREADS=32)
        d = np.zeros((M, N), np.float32)
        mod.dequantize_int4(q, s, d, G=G, BM=4, THREADS=32, T="f32")
        assert (np.abs(err) <= expand(s, 1, G, M, N) / 2 * (1 + 2 ** -20)).all(), step
        total_g += g
        total_d += d
        plain_q, plain_s, _ = ref_compress(g, np.zeros_like(err), G)
        total_plain += unpack(plain_q, N, True) * expand(plain_s, 1, G, M, N)
    drift = np.abs(total_g - total_d - err.astype(np.float64)).max()
    assert drift <= 1e-5 * np.abs(total_g).max(), drift
    rms = lambda a: float(np.sqrt(np.mean(np.square(a))))  # noqa: E731
    assert rms(total_g - total_plain) > 4 * rms(err), (rms(total_g - total_plain), rms(err))


@pytest.mark.nvcc
@pytest.mark.parametrize("arch,dtype,q", [pytest.param(a, d, q, marks=m) for a, d, q, m in
                                          (("sm_80", "f16", "f8e5m2", pytest.mark.slow),
                                           ("sm_80", "f32", "i8", pytest.mark.slow), ("sm_90a", "bf16", "i8", pytest.mark.slow),
                                           ("sm_90a", "f16", "f8e4m3", ()))])
def test_builds_with_nvcc(arch, dtype, q, tmp_path):
    """Every operator of the module, for one input dtype and quantized dtype (sm_80's f8 in
    software, the f32 column maxima's registers), compiles without warnings or spills."""
    assert_builds_without_spills(QUANT_PATH, arch, dtype, tmp_path, defines=(f"Q={q}",))


def test_the_reference_page_is_generated_from_the_sources():
    """docs/stdlib/quant.md is what scripts/stdlib-docs writes (rerun it after editing the .tl)."""
    assert_reference_page_is_current(QUANT_PATH)


# config.json's sm_90a rules (H200, bench/results/quant_rows-h200-twentythird.txt): one tile of
# 8192 on 256 threads at 4 blocks an SM for quantize_per_token (0.91 of copy where the .tl's
# two tiles of 4096 give 0.75), 32 rows a block for dequantize_per_channel (0.93, 0.83), f16 and
# bf16; f32, other widths and sm_80 (none timed) keep the .tl's tiles
TOKEN_8192 = {"BN": 8192, "THREADS": 256, "BLOCKS": 4}


@pytest.mark.parametrize("name,arch,T,N,want", [
    ("quantize_per_token", "sm_90a", "f16", 8192, TOKEN_8192), ("quantize_per_token", "sm_90a", "bf16", 4097, TOKEN_8192),
    ("quantize_per_token", "sm_90a", "f16", 4096, {}), ("quantize_per_token", "sm_90a", "f16", 8193, {}),
    ("quantize_per_token", "sm_90a", "f32", 8192, {}), ("quantize_per_token", "sm_80", "f16", 8192, {}),
    ("dequantize_per_channel", "sm_90a", "f16", 8192, {"BM": 32}), ("dequantize_per_channel", "sm_90a", "bf16", 300, {"BM": 32}),
    ("dequantize_per_channel", "sm_90a", "f32", 8192, {}), ("dequantize_per_channel", "sm_80", "f16", 8192, {})])
def test_the_table_picks_the_measured_tiles(mod, name, arch, T, N, want):
    x = np.zeros((4, N), np.float16)  # the shapes bind M and N; the dtype comes from T
    values = {"x": x, "q": x} if name == "quantize_per_token" else {"q": x, "y": x}
    assert mod.kernels[name].with_recorded(values, {"T": T}, arch) == {**want, "T": T}


@pytest.mark.parametrize("dtype", ["f16", "bf16"])
def test_the_table_tiles_compute_what_numpy_does(mod, dtype):
    """The rules' tiles on the interpreter: a row of 4097..8192 one tile (5001: ragged, odd), and
    32 rows a block over 37 rows (the second block cut short)."""
    op = {o.name: o for o in OPS}
    rng = np.random.default_rng(18)
    op["quantize_per_token"].check(mod, rng, dtype, (3, 5001), TOKEN_8192)
    op["dequantize_per_channel"].check(mod, rng, dtype, (37, 301), {"BM": 32})


@pytest.mark.nvcc
@pytest.mark.parametrize("dtype,q", [("f16", "i8"), pytest.param("bf16", "f8e4m3", marks=pytest.mark.slow)])
def test_the_table_tiles_build_without_spills_for_whole_runs(mod, dtype, q, tmp_path):
    """The rules' tiles on sm_90a in the build for whole runs (the runtime's first; a ragged row
    takes the general build, which spills at these tiles: why they are rules, not the .tl's)."""
    import re
    import sys
    from pathlib import Path

    from tlc.runtime.whole_runs import DEFINE

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "codegen"))
    from nvcc import compile_device

    for name, consts in (("quantize_per_token", TOKEN_8192), ("dequantize_per_channel", {"BM": 32})):
        source = mod.kernels[name].cuda_source("sm_90a", T=dtype, Q=q, **consts)
        log = compile_device(DEFINE + source, "sm_90a", tmp_path, name)
        assert re.findall(r"(\d+) bytes spill stores", log) == ["0"], log


@pytest.mark.parametrize("kernel", ["quantize_mx", "dequantize_mx"])
def test_mx_tiles_not_a_multiple_of_32_fail_the_assert(mod, kernel):
    """BN = 48 (not a multiple of the 32-element blocks) left q's columns 32..47 of each tile
    unwritten, silently (scripts/fuzz --mode tuning, seed 27401837); the constants' assert is
    left out where it holds, so the defaults' code is unchanged."""
    import ml_dtypes

    from tlc.device_assert import DeviceAssertError

    x = np.ones((3, 64), np.float32)
    q, s = np.zeros((3, 64), ml_dtypes.float8_e4m3fn), np.zeros((3, 2), np.uint8)
    args = (x, q, s) if kernel == "quantize_mx" else (q, s, x)
    with pytest.raises(DeviceAssertError) as e:
        getattr(mod, kernel)(*args, T="f32", BN=48)
    line = 522 if kernel == "quantize_mx" else 553
    assert str(e.value) == (f"{QUANT_PATH}:{line}:9: device_assert failed: {kernel}: BN = 48 is not a multiple of 32 "
                            "(block (0, 0, 0), thread 0)")
