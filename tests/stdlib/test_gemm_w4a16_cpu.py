"""std.gemm's weight-only GEMMs: int4 (w4a16): repack_int4 against its NumPy layout, exactly, and
matmul_w4a16 (decode), its split-K and matmul_w4a16_prefill on the interpreter against NumPy's
dequantize-then-matmul on ragged shapes (w4a16_kit.SHAPES says which); int8 and f8 with
per-channel scales (w8a16) likewise; compiled by nvcc for sm_90a and sm_80: the tensor-core
instructions, the int4 weight's nibbles read a 32-bit word at a time, no local memory."""
import re

import numpy as np
import pytest

import tlc
from precision_kit import count, sass
from stdlib_kit import GEMM_PATH
from w4a16_kit import (BF16, GEMV_SHAPES, SHAPES, W4A16_KERNELS, W8A16_KERNELS, case, check, check_shape, dequantized,
                       plain_int4, repack, splitk, w8_case)


@pytest.fixture(scope="module")
def mod():
    return tlc.load(GEMM_PATH, target="cpu")


def test_the_kernels_are_there(mod):
    assert set(W4A16_KERNELS + W8A16_KERNELS) <= set(mod.kernels)


@pytest.mark.parametrize("N,K", [(3, 1), (5, 33), (40, 129), (33, 300)])
def test_repack_is_the_documented_layout(mod, N, K):
    q = plain_int4(np.random.default_rng(K), N, K, 32)[0]
    W4 = np.full((N, 4 * -(-K // 32)), 0xDEADBEEF, np.uint32)
    mod.repack_int4(q, W4, RN=16, RW=8, THREADS=64)  # several blocks each way, ragged
    assert np.array_equal(W4, repack(q, K))


def test_repack_places_each_element_where_the_kernels_read_it():
    # element j of a 32-block: word (j % 8) // 2, bits 4 * (j // 8) + 16 * (j % 2): a pair of
    # columns 2t + 8p, 2t + 8p + 1 is the word >> 4p masked with 0x000F000F
    rng = np.random.default_rng(0)
    q, _, _, nib = plain_int4(rng, 3, 96, 32)
    W4 = repack(q, 96)
    for j in range(96):
        word = W4[:, j // 32 * 4 + j % 8 // 2]
        assert np.array_equal((word >> (4 * (j % 32 // 8) + 16 * (j % 2))) & 15, nib[:, j]), j
        pair = (word >> (4 * (j % 32 // 8))) & 0x000F000F
        assert np.array_equal(pair >> (16 * (j % 2)) & 0xFFFF, nib[:, j]), j


@pytest.mark.parametrize("M,N,K,G,decode,prefill", SHAPES)
def test_against_numpy(mod, M, N, K, G, decode, prefill):
    check_shape(mod, M, N, K, G, decode, prefill)


@pytest.mark.parametrize("M,N,K,G,decode,S", [(1, 70, 384, 128, {}, 2), (17, 100, 1000, 128, {}, 3),
                                               (5, 64, 129, 32, {"BK": 32}, 4), (3, 50, 700, 64, {"BK": 256}, 2),
                                               (1, 70, 2100, 128, {"BM": 8, "BK": 512, "stages": 2}, 4),
                                               (13, 70, 1100, 128, {"BM": 16, "BK": 512, "stages": 2}, 2),
                                               (40, 70, 700, 128, {"BM": 64, "BK": 256, "stages": 2}, 2)])
def test_splitk_against_numpy(mod, M, N, K, G, decode, S):
    # S parts of whole K steps: 3 steps in 2 parts, 8 in 3 (the last part short), 5 in 4, 5 in 4
    # of 2 (the last part empty: bench/lowbit.py's M = 1 tensor-core variant); config.json's
    # sm_90a tiles at M = 9 .. 16 (3 steps of 512 in 2 parts) and 33 .. 64 (3 of 256)
    A, W4, scales, zeros, _, ref, tol, _ = case(np.random.default_rng(S), M, N, K, G)
    check("matmul_w4a16_splitk", splitk(mod, A, W4, scales, zeros, S, G=G, **decode), ref, tol)


# config.json's sm_90a split-K tiles by M (H200, N = K = 8192 g128, bench/results/
# w4a16_decode-h200-twentythird.txt: split-K 2 on 2 stages 26.7 us at M = 16, 35.4 at M = 64,
# where matmul_w4a16 takes 30.1 and 40.2); sm_80 (not timed) keeps its rules
@pytest.mark.parametrize("arch,M,want", [("sm_90a", 1, {"BM": 8, "BK": 512, "stages": 2}),
                                         ("sm_90a", 16, {"BM": 16, "BK": 512, "stages": 2}),
                                         ("sm_90a", 20, {"BM": 32, "stages": 6}),
                                         ("sm_90a", 64, {"BM": 64, "BK": 256, "stages": 2}),
                                         ("sm_80", 16, {"BM": 16, "stages": 6}), ("sm_80", 64, {"BM": 64, "stages": 5})])
def test_the_table_picks_the_splitk_tiles_by_m(mod, arch, M, want):
    values = {"A": np.zeros((M, 256), np.float16), "W4": np.zeros((64, 32), np.uint32),
              "P": np.zeros((2, M, 64), np.float32)}
    assert mod.kernels["matmul_w4a16_splitk"].with_recorded(values, {}, arch) == want


# config.json's matmul_w4a16 tiles by M: on sm_90a at M <= 16 the TMA ring (grid(dequant_ring=TMA);
# H200, N = K = 8192 g128, bench/results/q_D2_w4a16_tma_ring-h200-twentyeighth.txt: M = 1 24.2 us
# on 6 stages of 256 against 36.4 on the cp.async ring, M = 16 25.1 on 4 stages of 512 against
# 30.6); M = 17 .. 64 (untimed through the ring) and sm_80 keep the cp.async ring's tiles
@pytest.mark.parametrize("arch,M,want", [("sm_90a", 1, {"BM": 8, "BK": 256, "stages": 6, "TMA": True}),
                                         ("sm_90a", 16, {"BM": 16, "BK": 512, "stages": 4, "TMA": True}),
                                         ("sm_90a", 20, {"BM": 32, "BK": 256, "stages": 3}),
                                         ("sm_80", 1, {"BM": 8, "BK": 256, "stages": 3}),
                                         ("sm_80", 16, {"BM": 16, "BK": 512, "stages": 2})])
def test_the_table_picks_the_decode_tiles_and_ring_by_m(mod, arch, M, want):
    values = {"A": np.zeros((M, 256), np.float16), "W4": np.zeros((64, 32), np.uint32), "C": np.zeros((M, 64), np.float16)}
    assert mod.kernels["matmul_w4a16"].with_recorded(values, {}, arch) == want


@pytest.mark.parametrize("M,N,K,G,consts", GEMV_SHAPES)
def test_gemv_against_numpy(mod, M, N, K, G, consts):
    A, W4, scales, zeros, C, ref, tol, _ = case(np.random.default_rng(M * N + K), M, N, K, G)
    mod.matmul_w4a16_gemv(A, W4, scales, zeros, C, G=G, **consts)
    check("matmul_w4a16_gemv", C, ref, tol)


@pytest.mark.parametrize("dtype,ts", [(BF16, np.float32), (np.float16, np.float16), (BF16, BF16)])
def test_gemv_other_dtypes(mod, dtype, ts):
    A, W4, scales, zeros, C, ref, tol, _ = case(np.random.default_rng(8), 1, 40, 272, 128, dtype, ts)
    mod.matmul_w4a16_gemv(A, W4, scales, zeros, C, BN=8, BKW=32, THREADS=32)
    check(f"matmul_w4a16_gemv {dtype} {ts}", C, ref, tol)


def test_gemv_groups_that_do_not_fit_a_k_step_are_refused(mod):
    from tlc.device_assert import DeviceAssertError

    A, W4, scales, zeros, C, _, _, _ = case(np.random.default_rng(2), 1, 16, 256, 32)
    with pytest.raises(DeviceAssertError, match="matmul_w4a16_gemv: G = 32, BKW = 128: G must be a multiple of 32, "
                                                "the K step's groups fit an aligned 16"):
        mod.matmul_w4a16_gemv(A, W4, scales, zeros, C, G=32)  # 32 groups a K step of 1024


@pytest.mark.parametrize("dtype,ts", [(BF16, np.float32), (np.float16, np.float16), (BF16, BF16)])
def test_other_dtypes(mod, dtype, ts):
    # bf16 activations; scales in the activations' dtype
    rng = np.random.default_rng(7)
    for name in ("matmul_w4a16", "matmul_w4a16_prefill"):
        A, W4, scales, zeros, C, ref, tol, _ = case(rng, 9, 80, 272, 128, dtype, ts)
        getattr(mod, name)(A, W4, scales, zeros, C)
        check(f"{name} {dtype} {ts}", C, ref, tol)


def test_zero_points_and_extreme_nibbles(mod):
    # every nibble 15 against zero point 0 and every nibble 0 against 15: the largest weights
    # of either sign, exactly representable
    N, K, G = 64, 256, 128
    q = np.full((N, K // 2), 0xFF, np.uint8)
    q[N // 2:] = 0
    zeros = np.zeros((N, K // G), np.uint8)
    zeros[N // 2:] = 15
    scales = np.full((N, K // G), 0.5, np.float32)
    A = np.ones((1, K), np.float16)
    for name in ("matmul_w4a16", "matmul_w4a16_prefill", "matmul_w4a16_gemv"):
        C = np.full((1, N), np.nan, np.float16)
        getattr(mod, name)(A, repack(q, K), scales, zeros, C)
        assert (C[0, :N // 2] == 7.5 * K).all() and (C[0, N // 2:] == -7.5 * K).all(), name


def test_a_k_step_across_groups_is_refused(mod):
    # a step must hold whole groups, among an aligned 8 (the shared scales' row), or lie in one
    from tlc.device_assert import DeviceAssertError

    A, W4, scales, zeros, C, _, _, _ = case(np.random.default_rng(1), 3, 64, 288, 96)
    with pytest.raises(DeviceAssertError, match="matmul_w4a16: G = 96, BK = 128: BK must divide G, "
                                                "or be G times a divisor of 8"):
        mod.matmul_w4a16(A, W4, scales, zeros, C, G=96)
    A, W4, scales, zeros, C, _, _, _ = case(np.random.default_rng(1), 3, 64, 512, 32)
    with pytest.raises(DeviceAssertError, match="matmul_w4a16: G = 32, BK = 512: BK must divide G"):
        mod.matmul_w4a16(A, W4, scales, zeros, C, G=32, BK=512)


@pytest.mark.parametrize("M,N,K,q,dtype", [(1, 70, 300, "i8", np.float16), (17, 100, 129, "f8e4m3", np.float16),
                                             (64, 64, 256, "i8", BF16), (5, 130, 520, "f8e5m2", BF16)])
def test_w8a16_against_numpy(mod, M, N, K, q, dtype):
    rng = np.random.default_rng(M + K)
    for name, consts in (("matmul_w8a16", {"BM": 64} if M > 16 else {}), ("matmul_w8a16_prefill", {})):
        A, W, scales, C, ref, tol = w8_case(rng, M, N, K, q, dtype)
        getattr(mod, name)(A, W, scales, C, **consts)
        check(f"{name} {q}", C, ref, tol)


# (kernel, constants, arch, the tensor-core instruction, how many a K step takes)
SASS_CASES = [
    ("matmul_w4a16", {}, "sm_90a", "HGMMA.64x16x16.F32", 8),  # W's 64 rows from registers, A's 16 from shared
    ("matmul_w4a16", {"T": "bf16"}, "sm_90a", "HGMMA.64x16x16.F32.BF16", 8),
    ("matmul_w4a16", {"BM": 64}, "sm_90a", "HGMMA.64x64x16.F32", 8),
    ("matmul_w4a16_splitk", {}, "sm_90a", "HGMMA.64x16x16.F32", 8),
    ("matmul_w4a16_prefill", {}, "sm_90a", "HGMMA.64x128x16.F32", 4),
    ("matmul_w4a16", {}, "sm_80", "HMMA.16816.F32", 16),
    ("matmul_w4a16_prefill", {}, "sm_80", "HMMA.16816.F32", 64),
    ("matmul_w8a16", {}, "sm_90a", "HGMMA.64x16x16.F32", 8),
    ("matmul_w8a16", {"TQ": "f8e4m3", "T": "bf16"}, "sm_90a", "HGMMA.64x16x16.F32.BF16", 8),
    ("matmul_w8a16_prefill", {}, "sm_90a", "HGMMA.64x128x16.F32", 4),
    ("matmul_w8a16", {"TQ": "f8e4m3"}, "sm_80", "HMMA.16816.F32", 16),
]


def _sass(name, consts, arch, tmp_path):
    """(instruction counts, ptxas log, SASS text) of `name` generated for `arch`."""
    from nvcc import cubin_sass
    from tlc.codegen import generate
    from tlc.driver import check_file
    from tlc.dtypes import DTYPES
    from tlc.schedule import schedule

    consts = {k: DTYPES[v] if isinstance(v, str) else v for k, v in consts.items()}
    r = check_file(GEMM_PATH)
    source = generate(schedule(r.program, name, consts, target=arch), arch, sources=r.sources).source
    counts, log = sass(source, arch, tmp_path)
    return counts, log, cubin_sass(source, arch, tmp_path)[0]


# the int4 decode and prefill kernels at their defaults for sm_90a in the default run (the README
# command's time); split-K, w8a16, the other tiles and sm_80 under -m slow, which CI runs
@pytest.mark.parametrize("name,consts,arch,instruction,n",
                         [pytest.param(*c, marks=[pytest.mark.slow] if c[2] == "sm_80" or c[1] or c[0] not in
                                       ("matmul_w4a16", "matmul_w4a16_prefill") else [])
                          for c in SASS_CASES])
def test_tensor_cores_and_no_local_memory(name, consts, arch, instruction, n, tmp_path):
    counts, log, _ = _sass(name, consts, arch, tmp_path)
    got = counts.get(instruction, 0)
    assert got and got % n == 0, {k: v for k, v in counts.items() if "MMA" in k}
    assert count(counts, "LDL") == 0 and count(counts, "STL") == 0, log
    assert "0 bytes spill stores" in log


def test_the_decode_kernel_reads_a_word_per_eight_nibbles(tmp_path):
    # BN x BK = 64 x 128 nibbles a K step over 128 threads: 64 a thread, in 8 words: one 32-bit
    # shared load each (both elements of a pair and the four pairs of a word share it; before
    # the codegen knew the columns never negative, 64 loads); the scale and zero point of the
    # 2 rows a thread holds from shared memory, where the pipeline's copies put them (2 LDS,
    # 2 LDS.U8: no global load waited for in the K loop), and the weights in f16 arithmetic,
    # a register pair's subtraction and multiplication one HADD2 and one HMUL2 (64 weights: 32
    # HMUL2; in f32 they had been 64 FADD, 64 FMUL and 32 F2FP roundings)
    _, _, text = _sass("matmul_w4a16", {}, "sm_90a", tmp_path)
    words = re.findall(r"\bLDS(?:\.32)? R\d+, \[", text)  # not the scheduler's `@!PT LDS RZ, [RZ]`
    assert len(words) == 8 + 2, words
    assert len(re.findall(r"\bLDS\.U8 R\d+, \[", text)) == 2
    assert len(re.findall(r"\bHMUL2 ", text)) == 32
    assert "FMUL " not in text
    # a pair's two columns are the halves of one word (repack_int4), read as the pair
    # (codegen/half_pairs.py): no PRMT putting two extracted halves together again (38 in the
    # kernel computed element by element, 6 now, none in the K loop's dequantization)
    assert len(re.findall(r"\bPRMT ", text)) <= 8


@pytest.mark.parametrize("N,K,G,dtype,ts", [(9, 300, 128, np.float16, np.float32), (17, 129, 32, BF16, np.float32),
                                             (8, 520, 64, np.float16, np.float16), (3, 33, 32, BF16, BF16)])
def test_dequantize_is_the_weight_the_kernels_compute_with(mod, N, K, G, dtype, ts):
    # exactly: T((nibble - zero) * T(scale)), every element, ragged N and K (odd: a last half
    # byte), several blocks each way
    q, scales, zeros, nib = plain_int4(np.random.default_rng(N + K), N, K, G, ts)
    W = np.full((N, K), np.nan, dtype)
    mod.dequantize_w4a16(repack(q, K), scales, zeros, W, G=G, RN=4, RB=2, THREADS=32)
    want = dequantized(nib, scales, zeros, G, dtype)
    assert np.array_equal(W.view(np.uint16), want.view(np.uint16))


@pytest.mark.parametrize("arch", ["sm_90a", pytest.param("sm_80", marks=pytest.mark.slow)])
def test_the_gemv_makes_f32_weights_from_their_bits(arch, tmp_path):
    # a K step of the defaults (BN x BKW = 16 x 128 words over 128 threads): a thread's 4 runs of
    # a 32-element block, 128 weights: an FFMA and an FADD each (nibble - zero); no I2F but a
    # run's zero point's; the nibbles masked where they lie (one shift a word for its top three,
    # where a shift a nibble took 112 SHF.R.U32 a K step); the words 16 bytes a load (a thread's
    # 4 runs, 16 words, in a row), the activations as f32 16 bytes a load; no local memory
    counts, log, _ = _sass("matmul_w4a16_gemv", {}, arch, tmp_path)
    assert count(counts, "FFMA") >= 4 * 32 and count(counts, "FADD") >= 4 * 32, counts
    assert count(counts, "I2F") <= 4, counts
    assert count(counts, "SHF.R.U32") <= 48, counts
    assert count(counts, "LDS.128") >= 4 + 4 * 8, counts
    assert count(counts, "LDL") == 0 and count(counts, "STL") == 0, log
    assert "0 bytes spill stores" in log


def test_the_gemv_asks_for_its_blocks_an_sm(mod):
    # BLOCKS: __launch_bounds__'s minimum blocks an SM (64 registers at 4 blocks of 256 threads,
    # where ptxas alone took 151, one block an SM); 0, the default, leaves ptxas its choice
    src = mod.matmul_w4a16_gemv.cuda_source("sm_90a", BKW=256, THREADS=256, stages=2, BLOCKS=4)
    assert "__launch_bounds__(256, 4)" in src
    assert "__launch_bounds__(128) " in mod.matmul_w4a16_gemv.cuda_source("sm_90a")


def test_dequantize_refuses_groups_within_a_word(mod):
    from tlc.device_assert import DeviceAssertError

    q, scales, zeros, _ = plain_int4(np.random.default_rng(3), 4, 64, 16)
    W = np.zeros((4, 64), np.float16)
    with pytest.raises(DeviceAssertError, match=r"dequantize_w4a16: G = 16: G must be a multiple of 32 \(a word's group\)"):
        mod.dequantize_w4a16(repack(q, 64), scales, zeros, W, G=16)
