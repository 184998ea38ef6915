"""The interpreter on what a TileLang port brings (tests/programs/porting_builtins.tl), against
NumPy on ragged sizes: bit casts (NumPy's view), clamp, if_then_else, infinity, max_value and
min_value, while loops (per index inside parallel loops, stopped when endless), the thread
index (one lane per thread), split-K's tile atomic_add, and use_swizzle's remapped grid."""
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

import tlc
from tlc.interp import machine
from tlc.interp.args import InterpError

PROGRAM = Path(__file__).resolve().parents[1] / "programs" / "porting_builtins.tl"


@pytest.fixture(scope="module")
def mod():
    return tlc.load(str(PROGRAM), target="cpu")


def test_reinterpret_keeps_the_bits(mod):
    n = 300
    rng = np.random.default_rng(1)
    x = rng.standard_normal(n).astype(np.float32)
    h = rng.standard_normal(n).astype(np.float16)
    b = rng.standard_normal(n).astype(ml_dtypes.bfloat16)
    q = np.arange(n, dtype=np.int64).astype(np.uint8)
    d = rng.standard_normal(n)
    outs = dict(xu=np.zeros(n, np.uint32), hu=np.zeros(n, np.uint16), bi=np.zeros(n, np.int16),
                qf=np.zeros(n, ml_dtypes.float8_e4m3fn), qi=np.zeros(n, np.int8), di=np.zeros(n, np.int64),
                neg=np.zeros(n, np.float32), hb=np.zeros(n, ml_dtypes.bfloat16))
    mod.bits(x, h, b, q, d, *outs.values())
    assert (outs["xu"] == x.view(np.uint32)).all()
    assert (outs["hu"] == h.view(np.uint16)).all()
    assert (outs["bi"] == b.view(np.int16)).all()
    assert (outs["qf"].view(np.uint8) == q).all()  # NaN patterns included: compared as bytes
    assert (outs["qi"] == q.view(np.int8)).all()
    assert (outs["di"] == d.view(np.int64)).all()
    assert (outs["neg"] == -x).all()
    assert (outs["hb"].view(np.uint16) == h.view(np.uint16)).all()


def test_f8_values_inside_expressions(mod):
    q = np.arange(256, dtype=np.int64).astype(np.uint8)
    y, z = np.zeros(256, np.float32), np.zeros(256, np.float32)
    mod.f8_inside(q, y, z)
    np.testing.assert_array_equal(y, q.view(ml_dtypes.float8_e4m3fn).astype(np.float32))
    np.testing.assert_array_equal(z, y.astype(ml_dtypes.float8_e5m2).astype(np.float32))


def test_tuple_assignment(mod):
    x = np.arange(-50, 100, dtype=np.int32)
    q, r = np.zeros_like(x), np.zeros_like(x)
    mod.unpack(x, q, r)
    assert (q == x // 7).all() and (r == x % 7).all()


def test_clamp_if_then_else_infinity_and_extremes(mod):
    n = 200
    x = np.linspace(-3, 3, n).astype(np.float32)
    y, z = np.zeros(n, np.float32), np.zeros(n, np.int32)
    mod.clamps(x, y, z, -0.5, 1.25)
    assert (y == np.where(x > 0, np.clip(x, -0.5, 1.25), np.maximum(-np.inf, x * 2))).all()
    assert (z == np.clip((x * np.float32(100)).astype(np.int32), -128, 7) + 255 + 1).all()


def test_while_loops_per_index_and_uniform(mod):
    x = np.arange(1, 131, dtype=np.int32)  # 130: the last block is ragged
    steps, total = np.zeros(130, np.int32), np.zeros(1, np.int32)
    mod.collatz(x, steps, total)

    def collatz(v):
        s = 0
        while v > 1:
            v, s = (v // 2 if v % 2 == 0 else 3 * v + 1), s + 1
        return s

    assert steps.tolist() == [collatz(int(v)) for v in x]
    assert total[0] == 10


def test_while_loops_in_device_functions_and_conditions_that_call_them(mod):
    x = np.arange(1, 101, dtype=np.int32)
    y, z = np.zeros_like(x), np.zeros_like(x)
    mod.device_while(x, y, z)

    def collatz(v):
        s = 0
        while v > 1:
            v, s = (v // 2 if v % 2 == 0 else 3 * v + 1), s + 1
        return s

    assert y.tolist() == [collatz(int(v)) for v in x]
    assert z.tolist() == [int(v).bit_length() - 1 for v in x]


def test_an_endless_while_stops_with_an_error(mod, monkeypatch):
    monkeypatch.setattr(machine, "WHILE_LIMIT", 5000)
    with pytest.raises(InterpError) as e:
        mod.endless(np.zeros(1, np.int32))
    line = next(i for i, text in enumerate(PROGRAM.read_text().splitlines(), 1) if "while k >= 0:" in text)
    assert str(e.value) == (f"kernel 'endless': a while loop at {PROGRAM}:{line} ran 5000 times without ending; "
                            "the interpreter stops it there (an endless loop?)")


def test_the_thread_index_runs_per_thread(mod):
    n = 150
    x = np.arange(n, dtype=np.float32)
    y, counts = np.zeros(n, np.float32), np.zeros(4, np.int32)
    mod.per_thread(x, y, counts)
    lane = np.arange(n) % 64
    assert (y == x * (lane % 4 + 1)).all()
    assert counts.tolist() == [int((lane % 4 == k).sum()) for k in range(4)]


def test_split_k_adds_each_part_atomically(mod):
    rng = np.random.default_rng(2)
    M, N, K = 70, 90, 200  # ragged in every dimension; 7 K tiles over 3 parts
    A = rng.standard_normal((M, K)).astype(np.float16)
    B = rng.standard_normal((K, N)).astype(np.float16)
    C = np.zeros((M, N), np.float32)
    mod.splitk(A, B, C)
    np.testing.assert_allclose(C, A.astype(np.float32) @ B.astype(np.float32), rtol=1e-4, atol=1e-3)
    C = np.full((M, N), 0.5, np.float32)  # added to, as atomics do
    mod.splitk_shared(A, B, C)
    np.testing.assert_allclose(C, 0.5 + A.astype(np.float32) @ B.astype(np.float32), rtol=1e-4, atol=1e-3)


def test_a_tile_atomic_into_a_region_with_single_indices(mod):
    rng = np.random.default_rng(5)
    B, S, H, D = 2, 40, 3, 50  # ragged in S and D
    O = rng.standard_normal((B, S, H, D)).astype(np.float32)
    X = rng.standard_normal((S, D)).astype(np.float32)
    expected = O + X[None, :, None, :]
    mod.bshd_accumulate(O, X)
    np.testing.assert_allclose(O, expected, rtol=1e-6)


def test_atomic_max_and_min_of_a_reduced_row(mod):
    A = np.random.default_rng(4).standard_normal((70, 256)).astype(np.float32)  # 70 rows: ragged
    hi, lo = np.full(70, -np.inf, np.float32), np.full(70, np.inf, np.float32)
    mod.row_extremes(A, hi, lo)
    assert (hi == A.max(axis=1)).all() and (lo == A.min(axis=1)).all()


def test_gemm_with_tilelangs_keywords(mod):
    rng = np.random.default_rng(6)
    M, N, K = 50, 70, 20  # one K tile, ragged
    A = rng.standard_normal((M, K)).astype(np.float16)
    B = rng.standard_normal((N, K)).astype(np.float16)
    C = np.zeros((M, N), np.float32)
    mod.gemm_keywords(A, B, C)  # the accumulator starts as NaN on the interpreter: clear_accum clears it
    np.testing.assert_allclose(C, A.astype(np.float32) @ B.astype(np.float32).T, rtol=1e-4, atol=1e-3)


def test_use_swizzle_remaps_every_block_once(mod):
    rng = np.random.default_rng(3)
    M, N, K = 150, 230, 40  # a 5 x 8 grid of tiles: panels of 3 rows, the last one of 2
    A = rng.standard_normal((M, K)).astype(np.float16)
    B = rng.standard_normal((K, N)).astype(np.float16)
    C, hits = np.zeros((M, N), np.float32), np.zeros((5, 8), np.int32)
    mod.swizzled_gemm(A, B, C, hits)
    assert (hits == 1).all()
    np.testing.assert_allclose(C, A.astype(np.float32) @ B.astype(np.float32), rtol=1e-4, atol=1e-3)
    hits, first = np.zeros((7, 5), np.int32), np.full((7, 5), -1, np.int32)
    mod.column_order(hits, first)
    assert (hits == 1).all() and (first == np.arange(35).reshape(7, 5)).all()


def test_use_swizzle_on_a_wide_gemm(mod):
    rng = np.random.default_rng(7)
    M, N, K = 300, 1400, 128  # 3 x 11 tiles: a panel of 10 rows of tiles and one of 1
    A = rng.standard_normal((M, K)).astype(np.float16)
    B = rng.standard_normal((K, N)).astype(np.float16)
    C = np.zeros((M, N), np.float16)
    mod.swizzled_wide_gemm(A, B, C)
    np.testing.assert_allclose(C.astype(np.float32), A.astype(np.float32) @ B.astype(np.float32), rtol=2e-2, atol=5e-2)


def test_pipelined_from_start_to_stop(mod):
    rng = np.random.default_rng(8)
    M, N, K = 70, 90, 200
    A = rng.standard_normal((M, K)).astype(np.float16)
    B = rng.standard_normal((K, N)).astype(np.float16)
    for k0, k1 in [(2, 5), (0, 7), (4, 4)]:  # K tiles 2..4; all, the last one ragged; none
        C = np.zeros((M, N), np.float32)
        mod.k_range_gemm(A, B, C, k0, k1)
        rows = slice(k0 * 32, k1 * 32)
        np.testing.assert_allclose(C, A[:, rows].astype(np.float32) @ B[rows].astype(np.float32), rtol=1e-4, atol=1e-3)


def test_an_inner_loop_reusing_an_outer_loops_index(mod):
    x = np.arange(100, dtype=np.float32)
    y, total = np.zeros_like(x), np.zeros(1, np.float32)
    mod.reused_index(x, y, total)
    assert (y == 2 * x).all() and total[0] == 2 * (0 + 1 + 2)
