"""tl::copy_g2s's issue forms behind codegen/copies.py's options (templates/tl/copy.cuh, #18),
off by default (session 28's H200 timed them slower, bench/results/q_D2_w4a16_tma_ring-h200-twentyeighth.txt): ROUND_STEPS, a copy of
packed weights (Copy.packed, schedule/packed_tiles.py) wholly inside its tensor whose rounds are whole rows (or a row whole rounds) through
copy_g2s_rounds, each thread's source one pointer stepped a round and its destination a constant
offset; CLIP_ROWS_MAX, a tile of 2 to that many rows whose columns are inside and rows are not (a
decode step's activations) through copy_g2s_clipped.  Measured on std.gemm's
matmul_w4a16_splitk at its M = 1 tiles (BM = 8, K steps of 512, 2 stages), whose K step copies a
64 x 64-word weight tile (8 vectors a thread) and an 8-row activation tile."""
import re

import pytest

from tlc import package_data
from tlc.codegen import copies

GEMM_PATH = str(package_data.stdlib().joinpath("gemm.tl"))
SPLITK_M1 = {"BM": 8, "BK": 512, "stages": 2}


@pytest.fixture
def forms(monkeypatch):
    """The experiment's settings: both forms on, tiles of up to 8 rows clipped."""
    monkeypatch.setattr(copies, "ROUND_STEPS", True)
    monkeypatch.setattr(copies, "CLIP_ROWS_MAX", 8)


def _source(name: str, consts: dict, arch: str = "sm_90a") -> str:
    from tlc.codegen import generate
    from tlc.driver import check_file
    from tlc.dtypes import DTYPES
    from tlc.schedule import schedule

    r = check_file(GEMM_PATH)
    consts = {"T": DTYPES["f16"], "TS": DTYPES["f32"], **consts}
    return generate(schedule(r.program, name, consts, target=arch), arch, sources=r.sources).source


def test_both_forms_are_off_by_default():
    assert copies.ROUND_STEPS is False and copies.CLIP_ROWS_MAX == 0
    assert not any(copies.clip_rows(r) for r in (1, 2, 8, 16))
    assert copies.copy_g2s_flags(8) == ""
    src = _source("matmul_w4a16_splitk", SPLITK_M1)
    assert "tl::copy_g2s<half, 8, 512, 128, 0, 128, true>((As + " in src  # the template's defaults
    assert "tl::copy_g2s<unsigned int, 64, 64, 128, 4, 0, true>((Wq + " in src


def test_clip_rows_is_for_tiles_of_two_to_clip_rows_max_rows(forms):
    assert [copies.clip_rows(r) for r in (1, 2, 8, 9, 16, 64)] == [False, True, True, False, False, False]
    # ROUND_STEPS: copies of packed weights only
    assert copies.copy_g2s_flags(8) == ", false, true" and copies.copy_g2s_flags(64) == ""
    assert copies.copy_g2s_flags(8, packed=True) == ", true, true" and copies.copy_g2s_flags(64, packed=True) == ", true"


def test_the_activations_tile_is_clipped_and_the_weights_step_their_rounds(forms):
    src = _source("matmul_w4a16_splitk", SPLITK_M1)
    assert "tl::copy_g2s<half, 8, 512, 128, 0, 128, true, false, true>((As + " in src  # A: 8 rows
    assert "tl::copy_g2s<unsigned int, 64, 64, 128, 4, 0, true, true>((Wq + " in src  # W: 64 rows, packed
    # the scales and zero points are no packed words: the template's defaults
    assert "tl::copy_g2s<float, 64, 8, 128, 0, 0, true>((Ss + " in src
    assert "tl::copy_g2s<unsigned char, 64, 16, 128, 0, 0, true>((Zs + " in src
    # the gemv's 16-row weight tile never leaves the tensor at the bench's N: not clipped (its
    # registers: 96 without, 154 with, three blocks an SM where the defaults fit four)
    gemv = _source("matmul_w4a16_gemv", {})
    assert "tl::copy_g2s<unsigned int, 16, 128, 128, 4, 0, true, true>((Wq + " in gemv


_PLAIN_LDGSTS = re.compile(r"LDGSTS\.E\.BYPASS\.128 \[R\d+(\+0x[0-9a-f]+)?\], desc\[UR\d+\]\[R\d+\.64(\+-?0x[0-9a-f]+)?\] ;")
_BLOCK_END = re.compile(r"\b(BRA|BSYNC|EXIT|BAR\.SYNC|LDGDEPBAR)\b")


def _eight_vector_blocks(sass: str) -> list:
    """The lengths of the SASS's straight runs (cut after each branch, barrier and commit) that
    issue 8 unpredicated 16-byte cp.async: the weight tile's, a thread's 8 vectors."""
    runs, cur = [], []
    for line in sass.splitlines():
        if re.match(r"\s+/\*[0-9a-f]{4,}\*/", line):
            cur.append(line)
            if _BLOCK_END.search(line):
                runs.append(cur)
                cur = []
    return [len(r) for r in runs + [cur] if sum(bool(_PLAIN_LDGSTS.search(x)) for x in r) == 8]


@pytest.mark.slow  # nvcc builds of an off switch (untimed): CI's slow run, the README's run stays under 5 minutes
@pytest.mark.nvcc
@pytest.mark.parametrize("stepped", [False, True])
def test_a_weight_vector_costs_a_few_instructions_with_round_steps(stepped, monkeypatch, tmp_path):
    """The weight tile's 8 cp.async a thread (the prologue's and the K loop's), nvcc 13.0
    sm_90a: 47 and 65 instructions with ROUND_STEPS, 198 and 167 without (a 64-bit multiply and
    signed divisions a vector: ~22, bench/w4a16_stream_probe.tl's count)."""
    from nvcc import cubin_sass

    monkeypatch.setattr(copies, "ROUND_STEPS", stepped)
    sass, log = cubin_sass(_source("matmul_w4a16_splitk", SPLITK_M1), "sm_90a", tmp_path)
    assert "0 bytes spill stores" in log
    runs = _eight_vector_blocks(sass)
    assert len(runs) == 2, runs
    assert all(n <= 9 * 8 for n in runs) if stepped else all(n >= 18 * 8 for n in runs), runs


# Tiles of each kind the forms meet, copied through a cp.async ring: a round of whole rows (f16
# 2 x 1024 on 128 threads: a row a round), a row of whole rounds (f16 4 x 2048: two rounds a row),
# rows of one vector (u8 6 x 16), neither (f16 8 x 24: three vectors a row on 128 threads, the
# plain form), a swizzled gemm operand (f16 8 x 64 into a gemm) and a tall tile (64 x 64 u32)
SHAPES = """\
@kernel
def tiles(A: f16[R, 1024], B: f16[R, 2048], C: u8[R, 16], D: f16[R, 24], W: u32[N, 64], X: f16[R, K],
          Y: f16[N, K], O: f32[R, 4], P: f32[N, R]):
    with grid(1, threads=128) as (bx,):
        a = shared(f16[2, 1024])
        b = shared(f16[4, 2048])
        c = shared(u8[6, 16])
        d = shared(f16[8, 24])
        w = shared(u32[64, 64])
        x = shared(f16[8, 64])
        y = shared(f16[64, 64])
        acc = fragment(f32[64, 8])
        clear(acc)
        for k in pipelined(4, stages=2):
            copy(A[k, 0], a)
            copy(B[k, 0], b)
            copy(C[k, 0], c)
            copy(D[k, 0], d)
            copy(W[k * 64, 0], w)
            copy(X[0, k * 64], x)
            copy(Y[0, k * 64], y)
            for i in parallel(2):
                O[i, 0] = f32(a[i, 7]) + f32(b[i, 2047]) + f32(c[i, 3]) + f32(d[i, 23]) + f32(w[i, 5])
            gemm(y, x, acc, trans_b=True)
        copy(acc, P[0, 0])
"""


@pytest.mark.slow  # nvcc builds of an off switch (untimed): CI's slow run, the README's run stays under 5 minutes
@pytest.mark.nvcc
@pytest.mark.parametrize("arch", ["sm_90a", "sm_80"])
def test_every_kind_of_tile_builds_with_the_forms_on(arch, forms, monkeypatch, tmp_path):
    from nvcc import compile_object
    from tlc import ir
    from tlc.api import compile_source
    from tlc.schedule import packed_tiles

    # the template's forms on every kind of tile: each copy taken as packed weights' (only w4a16's
    # weight tiles are: tests/schedule/test_packed_tiles.py)
    monkeypatch.setattr(packed_tiles, "packed_tiles",
                        lambda kernel, loop: {s.dst.name for s in loop.body if isinstance(s, ir.Copy)})

    src = compile_source(SHAPES).tiles.generated({}, arch).source
    for tile, rest in (("half, 2, 1024", "0, true, true, true"), ("half, 4, 2048", "0, true, true, true"),
                       ("unsigned char, 6, 16", "0, true, true, true"), ("half, 8, 24", "0, true, true, true"),
                       ("half, 8, 64", "128, true, true, true"), ("unsigned int, 64, 64", "0, true, true"),
                       ("half, 64, 64", "128, true, true")):  # (the pad: the shared plan's)
        assert re.search(rf"tl::copy_g2s<{tile}, 128, \d+, {rest}>\(", src), tile
    log = compile_object(src, arch, tmp_path)  # warnings as errors
    assert "0 bytes spill stores" in log
