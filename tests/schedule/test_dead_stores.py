"""schedule/dead_stores.py: a parallel loop's store to a fragment that only its own iteration
reads before the fragment is cleared again becomes a value of the iteration (std.gemm's
block-scaled f8 kernels at BN = 256, two halves' products summed in one partial-sum fragment).
The IR shows it; the default kernels are unchanged ("shared": only fragments two or more gemms
of the loop accumulate into); the interpreter runs the rewritten kernels to the same bits; the
stores that something else reads stay."""
import importlib
import sys
from pathlib import Path

import numpy as np
import pytest

from tlc.driver import check_file
from tlc.dtypes import F32
from tlc.interp import run_kernel
from tlc.ir.printer import print_kernel as format_kernel
from tlc.schedule import schedule

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "stdlib"))  # the shared kits
from gemm_shapes_kit import grouped_f8_case  # noqa: E402
from precision_kit import cases  # noqa: E402
from stdlib_kit import GEMM_PATH  # noqa: E402

ds = importlib.import_module("tlc.schedule.dead_stores")


def _text(monkeypatch, rule, name="matmul_f8_blockscaled", target="sm_90a", **consts) -> str:
    monkeypatch.setattr(ds, "DEAD_FRAGMENT_STORES", rule)
    r = check_file(GEMM_PATH)
    return format_kernel(schedule(r.program, name, consts, target=target))


@pytest.mark.parametrize("name, row", [("matmul_f8_blockscaled", "by * 128 + i"),
                                       ("matmul_grouped_f8_blockscaled", "row0 + i")])
def test_the_halves_partial_sums_are_values_of_their_loops(monkeypatch, name, row):
    lines = [x.strip() for x in _text(monkeypatch, "shared", name, BN=256).splitlines()]
    i = lines.index(f"let tl_part: f32 = part[i, j] * (SA[{row}, k] * s)")
    assert lines[i + 1] == "acc[i, j] = acc[i, j] + tl_part"
    j = lines.index(f"let tl_part1: f32 = part[i, j] * (SA[{row}, k] * sb2)")
    assert lines[j + 1] == "acc2[i, j] = acc2[i, j] + tl_part1"
    assert not any(x.startswith("part[i, j] =") for x in lines)
    # (the clear its gemm's, reading the registers: schedule/scale_d_clears.py)
    assert lines[j - 3:j - 1] == ["fill part = 0.0 (by its gemm's scale-d 0, reading the registers)",
                                  "gemm part += As @ Ws2.T" if "grouped" in name
                                  else "gemm part += As @ Bs2.T"]


@pytest.mark.parametrize("target", ["sm_90a", "sm_80"])
def test_one_gemm_a_fragment_keeps_its_store_unless_all(monkeypatch, target):
    # BN = 128 (the default): part is one gemm's, its code unchanged; "all" rewrites it too
    assert "part[i, j] = part[i, j] * (SA[by * 128 + i, k] * s)" in _text(monkeypatch, "shared", target=target)
    assert "let tl_part: f32 = part[i, j] * (SA[by * 128 + i, k] * s)" in _text(monkeypatch, "all", target=target)
    assert "tl_part" not in _text(monkeypatch, "none", BN=256, target=target)


def test_the_default_rule():
    assert ds.DEAD_FRAGMENT_STORES == "shared"


KERNELS = """
@kernel
def read_after(A: f32[M, K], B: f32[N, K], C: f32[M, N], S: f32[M, N]):
    with grid(1, 1, threads=128) as (bx, by):
        As = shared(f32[64, 16])
        Bs = shared(f32[64, 16])
        part = fragment(f32[64, 64])
        acc = fragment(f32[64, 64])
        clear(acc)
        for k in range(cdiv(K, 16)):
            copy(A[0, k * 16], As)
            copy(B[0, k * 16], Bs)
            clear(part)
            gemm(As, Bs, part, trans_b=True)
            for i, j in parallel(64, 64):
                part[i, j] = part[i, j] * 2.0
                acc[i, j] += part[i, j]
            clear(part)
            gemm(As, Bs, part, trans_b=True)
            for i, j in parallel(64, 64):
                part[i, j] = part[i, j] * 3.0
                acc[i, j] += part[i, j]
        copy(acc, C[0, 0])
        copy(part, S[0, 0])

@kernel
def read_next(A: f32[M, K], B: f32[N, K], C: f32[M, N]):
    with grid(1, 1, threads=128) as (bx, by):
        As = shared(f32[64, 16])
        Bs = shared(f32[64, 16])
        part = fragment(f32[64, 64])
        acc = fragment(f32[64, 64])
        clear(acc)
        for k in range(cdiv(K, 16)):
            copy(A[0, k * 16], As)
            copy(B[0, k * 16], Bs)
            clear(part)
            gemm(As, Bs, part, trans_b=True)
            for i, j in parallel(64, 64):
                part[i, j] = part[i, j] * 2.0
                acc[i, j] += part[i, j]
            for i, j in parallel(64, 64):
                acc[i, j] += part[i, j]
            clear(part)
            gemm(As, Bs, part, trans_b=True)
            for i, j in parallel(64, 64):
                part[i, j] = part[i, j] * 3.0
                acc[i, j] += part[i, j ^ 1]
        copy(acc, C[0, 0])
"""


def _small(tmp_path, name, target="sm_80"):
    path = tmp_path / "dead.tl"
    path.write_text(KERNELS)
    r = check_file(str(path))
    return schedule(r.program, name, {}, target=target)


def test_a_store_read_past_its_loop_stays(tmp_path):
    # read_after: part is copied out after the loop (the last iteration's second store is read),
    # and the first store is dead (the next statement touching part clears it)
    lines = [x.strip() for x in format_kernel(_small(tmp_path, "read_after")).splitlines()]
    assert "let tl_part: f32 = part[i, j] * 2.0" in lines and "acc[i, j] = acc[i, j] + tl_part" in lines
    assert "part[i, j] = part[i, j] * 3.0" in lines
    # read_next: the first store is read by the next loop, the second at another iteration's index
    lines = [x.strip() for x in format_kernel(_small(tmp_path, "read_next")).splitlines()]
    assert "part[i, j] = part[i, j] * 2.0" in lines and "part[i, j] = part[i, j] * 3.0" in lines
    assert not any("tl_part" in x for x in lines)


def test_the_small_kernels_run_alike(tmp_path, monkeypatch):
    rng = np.random.default_rng(3)
    A, B = rng.standard_normal((64, 40)).astype(np.float32), rng.standard_normal((64, 40)).astype(np.float32)
    outs = []
    for rule in ("none", "shared"):
        monkeypatch.setattr(ds, "DEAD_FRAGMENT_STORES", rule)
        C, S = np.full((64, 64), np.nan, np.float32), np.full((64, 64), np.nan, np.float32)
        run_kernel(_small(tmp_path, "read_after"), dict(A=A, B=B, C=C, S=S))
        outs.append((C, S))
    ref = 5 * (A.astype(np.float64) @ B.T)  # each K step's product 2x, then 3x
    assert np.array_equal(outs[0][0], outs[1][0]) and np.array_equal(outs[0][1], outs[1][1])
    assert np.abs(outs[1][0] - ref).max() <= 1e-4 * np.abs(ref).max()
    assert np.abs(outs[1][1] - 3 * (A[:, 32:].astype(np.float64) @ B[:, 32:].T)).max() <= 1e-4 * np.abs(ref).max()


@pytest.mark.parametrize("stages", [3, 4])
def test_the_interpreter_runs_the_halves_to_the_same_bits(monkeypatch, stages):
    # sm_90a's warp-specialized ring in the interpreter; M, N ragged (the last tile's second half
    # partly outside), K = 3 scale blocks and a part
    M, N, K = 130, 300, 400
    r = check_file(GEMM_PATH)
    for name, args, _, ref, _ in cases(np.random.default_rng(4), M, N, K):
        if name != "matmul_f8_blockscaled" or args[2].dtype != np.float32:
            continue
        outs = []
        for rule in ("none", "shared"):
            monkeypatch.setattr(ds, "DEAD_FRAGMENT_STORES", rule)
            kernel = schedule(r.program, name, dict(BN=256, stages=stages, TC=F32), target="sm_90a")
            assert ("tl_part" in format_kernel(kernel)) == (rule == "shared")
            C = np.full((M, N), np.nan, np.float32)
            run_kernel(kernel, dict(A=args[0], B=args[1], C=C, SA=args[3], SB=args[4]))
            outs.append(C)
        assert np.array_equal(outs[0], outs[1]) and np.isfinite(outs[1]).all()
        assert np.abs(outs[1] - ref).max() <= 1e-3 * np.abs(ref).max()


def test_the_interpreter_runs_the_grouped_halves_to_the_same_bits(monkeypatch):
    # ragged groups (empty ones first, between and last; one across a tile's edge), N = 300
    A, W, offsets, SA, SB, ref = grouped_f8_case(np.random.default_rng(13), [0, 70, 130, 0, 5], N=300)
    r = check_file(GEMM_PATH)
    outs = []
    for rule in ("none", "shared"):
        monkeypatch.setattr(ds, "DEAD_FRAGMENT_STORES", rule)
        kernel = schedule(r.program, "matmul_grouped_f8_blockscaled", dict(BN=256, TC=F32), target="sm_90a")
        C = np.full(ref.shape, np.nan, np.float32)
        run_kernel(kernel, dict(A=A, W=W, offsets=offsets, C=C, SA=SA, SB=SB))
        outs.append(C)
    assert np.array_equal(outs[0], outs[1]) and np.isfinite(outs[1]).all()
    assert np.abs(outs[1] - ref).max() <= 1e-3 * np.abs(ref).max()
