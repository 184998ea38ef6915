"""codegen/unit_scale.py: a large f32 fragment scaled in place by a row vector (an online
softmax's `acc[i, j] *= rescale[i]`) is written under a warp vote, so that a warp whose factors
are all 1 skips the multiplies: std.attention's mla_decode (128 accumulator registers a thread)
on sm_90a, in C and in SASS (VOTE.ANY before the FMULs); the same values (x * 1.0f is x); and
nothing else is: a fragment under MIN_REGS a thread, a column vector, another fragment's values,
an out-of-place product."""
import re
from pathlib import Path

import pytest

from kit_codegen import generated_source, scheduled_source
from nvcc import cubin_sass
from tlc.codegen import generate
from tlc.codegen.unit_scale import MIN_REGS, unit_row_scale
from tlc.driver import check_file
from tlc.schedule import schedule_grids

ROOT = Path(__file__).resolve().parents[2]
MLA = {"DK": 576, "DV": 512, "PAGE": 64, "T": "bf16"}

SRC = """
@kernel
def scaled(x: f32[M, N], v: f32[M], y: f32[M, N], COLUMN: const = False, OTHER: const = False):
    with grid(1, threads=128) as bx:
        acc = fragment(f32[M, N])
        other = fragment(f32[M, N])
        w = fragment(f32[M])
        col = fragment(f32[N])
        copy(x, acc)
        copy(x, other)
        copy(v, w)
        for j in parallel(N):
            col[j] = 2.0
        for k in range(3):
            if COLUMN:
                for i, j in parallel(M, N):
                    acc[i, j] *= col[j]
            elif OTHER:
                for i, j in parallel(M, N):
                    acc[i, j] = other[i, j] * w[i]
            else:
                for i, j in parallel(M, N):
                    acc[i, j] = w[i] * acc[i, j]
        copy(acc, y)
"""

VOTE = "if (__any_sync(__activemask(), tl_any)) {"


def scaled_cuda(**constants) -> str:
    return generated_source(SRC, "scaled", arch="sm_90a", constants=constants).source


def test_mla_decode_rescales_its_accumulator_under_the_warp_vote():
    r = check_file(str(ROOT / "stdlib" / "attention.tl"))
    grid0 = schedule_grids(r.program, "mla_decode", MLA, target="sm_90a")[0]
    text = generate(grid0, "sm_90a", sources=r.sources).source
    body = text[text.index("__global__ void __launch_bounds__(384, 1) mla_decode_grid0"):]
    vote = body.index(VOTE)
    rescale = re.search(r"acc\[tl_r\] = \(acc\[tl_r\] \* rescale\[", body)
    assert rescale and vote < rescale.start()
    assert re.search(r"tl_any \|= \w+::valid\(threadIdx\.x, tl_r\) && rescale\[tl_r\] != 1\.0f;", body[:vote])
    assert body.count(VOTE) == 1  # only the rescale: not the scores' exp, not the final division


@pytest.mark.parametrize("m, n, voted", [(64, 256, True), (64, 64, False)])
def test_the_vote_needs_min_regs_a_thread(m, n, voted):
    assert m * n // 128 >= MIN_REGS if voted else m * n // 128 < MIN_REGS
    text = generated_source(SRC.replace("M, N", f"{m}, {n}").replace("(M)", f"({m})").replace("(N)", f"({n})")
                            .replace("[M]", f"[{m}]").replace("[N]", f"[{n}]"), "scaled", arch="sm_90a").source
    assert (VOTE in text) == voted


@pytest.mark.parametrize("what", ["COLUMN", "OTHER"])
def test_not_a_column_vector_nor_another_fragments_values(what):
    src = SRC.replace("M, N", "64, 256").replace("(M)", "(64)").replace("(N)", "(256)") \
        .replace("[M]", "[64]").replace("[N]", "[256]")
    k, _ = scheduled_source(src, "scaled", arch="sm_90a", constants={what: True})
    loops = [p for p in _parallels(k.body) if len(p.vars) == 2 and p.body and getattr(p.body[0], "name", "") == "acc"
             and not isinstance(p.body[0].value, type(None))]
    buffers = {b.name: b for b in k.buffers}
    assert loops and all(unit_row_scale(p, buffers, k.threads) is None for p in loops)
    assert VOTE not in generated_source(src, "scaled", arch="sm_90a", constants={what: True}).source


def _parallels(stmts):
    from tlc import ir
    for s in stmts:
        if isinstance(s, ir.Parallel):
            yield s
        for field in ("body", "then", "orelse", "else_"):
            inner = getattr(s, field, None)
            if isinstance(inner, (list, tuple)) and not isinstance(s, ir.Parallel):
                yield from _parallels(inner)


def test_sass_votes_before_the_multiplies(tmp_path):
    src = SRC.replace("M, N", "64, 256").replace("(M)", "(64)").replace("(N)", "(256)") \
        .replace("[M]", "[64]").replace("[N]", "[256]")
    sass, _ = cubin_sass(generated_source(src, "scaled", arch="sm_90a").source, "sm_90a", tmp_path)
    vote = sass.index("VOTE.ANY")
    assert len(re.findall(r"\bFMUL\b", sass[vote:])) >= MIN_REGS
