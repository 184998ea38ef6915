"""narrow_fragments.py and recompute.py: an f32 fragment of 16-bit values held in 16 bits (issue
#17's plain rms_norm and layer_norm), only where no value read changes; the interpreter's
results with and without the pass are identical, bit for bit."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from tlc.interp import run_kernel
from tlc.ir import print_kernel

from kit import scheduled

PLAIN = Path(__file__).resolve().parents[2] / "bench" / "plain"

RMS = """
@kernel
def rms(x: T[M, N], w: T[N], y: U[M, N], T: dtype = f16, U: dtype = f16, BN: const = 2048):
    with grid(M, threads=128) as r:
        row = fragment(f32[1, BN])
        sq = fragment(f32[1, BN])
        weight = fragment(f32[BN])
        ss = fragment(f32[1])
        copy(x[r, 0], row)
        copy(w[0], weight)
        for i, j in parallel(1, BN):
            sq[i, j] = row[i, j] * row[i, j]
        reduce_sum(sq, ss, dim=1)
        inv = rsqrt(ss[0] / N + 1e-6)
        for i, j in parallel(1, BN):
            row[i, j] = row[i, j] * inv * weight[j]
        copy(row, y[r, 0])

@kernel
def shifted(x: f16[M, N], y: f16[M, N], BN: const = 2048):
    with grid(M, threads=128) as r:
        row = fragment(f32[1, BN])
        copy(x[r, 0], row)
        shift = 1.0
        for j in parallel(BN):
            row[0, j] = row[0, j] - shift
        shift = 2.0
        for j in parallel(BN):
            row[0, j] = row[0, j] * shift
        copy(row, y[r, 0])

@kernel
def clipped(x: f16[M, N], y: f16[M, N], BN: const = 2048):
    with grid(M, threads=128) as r:
        row = fragment(f32[1, BN])
        copy(x[r, 0], row)
        for j in parallel(BN):
            row[0, j] = where(j < N, max(row[0, j], -inf(f32)), 0.0)
        copy(row, y[r, 0])
"""


def held(kernel) -> dict:
    return {b.name: b.dtype.name for b in kernel.buffers if b.scope == "fragment"}


def plain(name: str, **constants):
    return scheduled((PLAIN / f"{name}.tl").read_text(), name, constants, target="sm_90a")


def test_rms_norms_row_and_weights_are_held_in_f16():
    k = plain("rms_norm")
    assert held(k) == {"row": "f16", "sq": "f32", "weight": "f16", "ss": "f32"}
    assert k.notes[0] == ("fragments held in 16 bits: row (f32 as f16), weight (f32 as f16): they only hold values "
                          "of that type, or values rounded to it when copied out, so their arithmetic in the declared "
                          "type is unchanged")
    text = print_kernel(k)
    assert "    row[i, j] = f16(f32(row[i, j]) * inv * f32(weight[j]))\n" in text
    assert k.min_blocks == 4  # 62 registers a thread at sm_90a (tests/plain builds it without spills)


def test_layer_norms_centring_is_recomputed_so_its_row_is_held_in_f16(monkeypatch):
    """as scheduled before its rows are pipelined (test_pipeline_rows.py: the same in the walk)"""
    import tlc.schedule

    monkeypatch.setattr(tlc.schedule, "pipelined_rows", lambda *args: None)
    k = plain("layer_norm")
    assert held(k) == {"row": "f16", "sq": "f32", "weight": "f16", "bias": "f16", "total": "f32", "squares": "f32"}
    assert k.notes[0].endswith("; row keeps the copied values, an element-wise update of them recomputed in the "
                               "loops that read it (recompute.py)")
    text = print_kernel(k)
    centred = "where(j < N, f32(row[u0, j]) - mean, 0.0)"
    assert f"    sq[u0, j] = {centred} * {centred}\n  reduce_sum sq" in text
    assert "    row[u1, j] = f16(where(j < N, f32(row[u1, j]) - mean, 0.0) * inv * f32(weight[j]) + f32(bias[j]))\n" in text
    assert k.min_blocks == 3


def test_bf16_values_stay_f32():
    """bf16's conversions spill at the blocks a row held in 16 bits would ask for (HELD)"""
    assert held(scheduled(RMS, "rms", {"T": "bf16", "U": "bf16"})) == \
        {"row": "f32", "sq": "f32", "weight": "f32", "ss": "f32"}


def test_a_result_copied_into_an_f32_tensor_keeps_its_row_in_f32():
    """the row's last values are f32 products, which an f32 output keeps; the weights are only
    ever f16 values, so they are held in f16 still"""
    assert held(scheduled(RMS, "rms", {"U": "f32"})) == {"row": "f32", "sq": "f32", "weight": "f16", "ss": "f32"}


def test_softmaxs_row_stays_f32():
    """its exponentials are summed after they are stored: rounding them would change the sum"""
    assert held(plain("softmax"))["row"] == "f32"


def test_an_update_reading_a_scalar_assigned_after_it_is_not_recomputed():
    k = scheduled(RMS, "shifted")
    assert held(k)["row"] == "f32" and not any(n.startswith("fragments held") for n in k.notes)


def test_a_thread_holding_one_run_keeps_f32():
    """rows of 1024 at 128 threads: 8 elements, one run, a thread, computed on in f32 whole"""
    assert held(scheduled(RMS, "rms", {"BN": 1024}))["row"] == "f32"


def test_exact_updates_keep_the_fragment_narrow():
    """where, max of the fragment's own values and constants f16 holds (-inf, 0) change no value's type"""
    assert held(scheduled(RMS, "clipped"))["row"] == "f16"


def _run(kernel, args: dict) -> dict:
    out = {k: v.copy() for k, v in args.items()}
    run_kernel(kernel, out)
    return out


@pytest.mark.parametrize("name, extra", [("rms_norm", ["w"]), ("layer_norm", ["w", "b"])])
def test_the_interpreters_result_is_the_same_bit_for_bit(name, extra, monkeypatch):
    rng = np.random.default_rng(1)
    M, N = 3, 300  # ragged: BN = 4096, 16 elements a thread (a thread holding one run keeps f32)
    args = {"x": (rng.standard_normal((M, N)) * 3 + 1).astype(np.float16),
            **{e: rng.standard_normal(N).astype(np.float16) for e in extra},
            "y": np.full((M, N), np.nan, np.float16)}
    narrowed = _run(plain(name, BN=4096), args)["y"]
    monkeypatch.setattr(sys.modules["tlc.schedule"], "narrow_fragments", lambda k: k)
    wide = plain(name, BN=4096)
    assert held(wide)["row"] == "f32"
    assert np.array_equal(narrowed, _run(wide, args)["y"]) and not np.isnan(narrowed).any()
