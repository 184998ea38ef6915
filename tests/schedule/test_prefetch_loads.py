"""schedule/prefetch_loads.py: a pipelined loop's per-iteration tensor loads (std.gemm's block
scales) read an iteration ahead where PREFETCH_RING_LOADS is on (off by default: not timed on
the GPU).  The IR shows it; the interpreter runs the sm_90a kernel, warp-specialized ring and
all, to the same bits as without; and the sm_90a SASS reads no scale loaded in the same K step."""
import importlib
import re
import sys
from pathlib import Path

import numpy as np
import pytest

from tlc import ir
from tlc.driver import check_file
from tlc.dtypes import F32
from tlc.interp import run_kernel
from tlc.ir.printer import print_kernel as format_kernel
from tlc.schedule import schedule

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "stdlib"))  # the shared kits
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "codegen"))
from precision_kit import cases  # noqa: E402
from stdlib_kit import GEMM_PATH  # noqa: E402

pl = importlib.import_module("tlc.schedule.prefetch_loads")


def _kernel(monkeypatch, on: bool, **consts) -> ir.Kernel:
    monkeypatch.setattr(pl, "PREFETCH_RING_LOADS", on)
    r = check_file(GEMM_PATH)
    return schedule(r.program, "matmul_f8_blockscaled", consts, target="sm_90a")


def test_the_ir_reads_the_scales_an_iteration_ahead(monkeypatch):
    k = _kernel(monkeypatch, True)
    text = format_kernel(k)
    assert "fragment tl_pf_SA: f32[128] layout=replicated(mma_acc(warps=8x1, warp_tile=16x128), dropped=[1])" in text
    assert "let tl_pf_SB: f32 = 0.0" in text
    loop = k.body[k.warp_spec.loop]
    body = [s for s in loop.body if not isinstance(s, ir.Sync)]
    # the ring's copies lead; then the first iteration's reads, the next iteration's B scale at
    # once, and the next rows' scales after the parallel loop that used this iteration's
    assert [type(s).__name__ for s in body[:6]] == ["Copy", "Copy", "If", "Assign", "Assign", "Fill"]
    lines = [x.strip() for x in text.splitlines()]
    i = lines.index("if k == 0:")
    assert lines[i + 1:i + 6] == ["tl_pf_SB = SB[bx * 128 // 128, 0]", "for i in parallel(128):",
                                  "tl_pf_SA[i] = SA[by * 128 + i, 0]", "sb = tl_pf_SB",
                                  "tl_pf_SB = SB[bx * 128 // 128, k + 1]"]
    assert "part[i, j] = part[i, j] * (tl_pf_SA[i] * s)" in lines
    j = lines.index("part[i, j] = part[i, j] * (tl_pf_SA[i] * s)")
    assert lines[j + 2:j + 4] == ["for i in parallel(128):", "tl_pf_SA[i] = SA[by * 128 + i, k + 1]"]
    # still the persistent, clustered ring it was
    assert k.warp_spec.tile_order is not None and k.warp_spec.tile_order.cluster == 2


def test_off_by_default_and_off_the_wgmma_targets(monkeypatch):
    assert pl.PREFETCH_RING_LOADS is False
    assert "tl_pf_" not in format_kernel(_kernel(monkeypatch, False))
    monkeypatch.setattr(pl, "PREFETCH_RING_LOADS", True)
    r = check_file(GEMM_PATH)
    assert "tl_pf_" not in format_kernel(schedule(r.program, "matmul_f8_blockscaled", {}, target="sm_80"))


def test_two_halves_share_the_rows_scales(monkeypatch):
    text = format_kernel(_kernel(monkeypatch, True, BN=256))
    assert text.count("fragment tl_pf_") == 1 and "let tl_pf_SB1: f32 = 0.0" in text
    assert text.count("tl_pf_SA[i] = SA[by * 128 + i, k + 1]") == 1


@pytest.mark.parametrize("bn", [128, 256])
def test_the_interpreter_runs_it_to_the_same_bits(monkeypatch, bn):
    # M, N ragged, K = 3 scale blocks and a part (the last K step's next index past KB)
    M, N, K = 130, 300, 400
    for name, args, _, ref, _ in cases(np.random.default_rng(4), M, N, K):
        if name != "matmul_f8_blockscaled" or args[2].dtype != np.float32:
            continue
        outs = []
        for on in (False, True):
            C = np.full((M, N), np.nan, np.float32)
            kernel = _kernel(monkeypatch, on, BN=bn, TC=F32)
            run_kernel(kernel, dict(A=args[0], B=args[1], C=C, SA=args[3], SB=args[4]))
            outs.append(C)
        assert np.array_equal(outs[0], outs[1]) and np.isfinite(outs[1]).all()
        assert np.abs(outs[1] - ref).max() <= 1e-3 * np.abs(ref).max()


@pytest.mark.slow  # nvcc builds of an off-by-default switch (untimed): CI's slow run
def test_no_scale_is_read_in_the_k_step_that_loads_it(monkeypatch, tmp_path):
    # sm_90a SASS: every register the promotion's FMULs read (SA * SB) was loaded a K step
    # earlier; without the rewrite they read the step's own loads, right after its last QGMMA
    from nvcc import cubin_sass
    from tlc.codegen import generate

    r = check_file(GEMM_PATH)
    for on in (False, True):
        monkeypatch.setattr(pl, "PREFETCH_RING_LOADS", on)
        k = schedule(r.program, "matmul_f8_blockscaled", {"stages": 4}, target="sm_90a")
        sass, log = cubin_sass(generate(k, "sm_90a", sources=r.sources, line_directives=False).source, "sm_90a",
                               tmp_path)
        assert "0 bytes spill stores" in log
        fresh = _scales_of_their_own_step(sass)
        assert bool(fresh) != on, (on, fresh)


def _scales_of_their_own_step(sass: str) -> list:
    """The FMULs of the first K step's body (from its full-barrier wait on) that read a register
    an LDG of that body loads before them, outside a block a branch skips (the first iteration's
    own reads)."""
    rows = [(int(m.group(1), 16), m.group(2)) for x in sass.splitlines()
            for m in [re.match(r"\s*/\*([0-9a-f]{4,})\*/\s+(.*?);", x)] if m]
    qg = [a for a, t in rows if "QGMMA" in t]
    top = max(a for a, t in rows if "TRYWAIT" in t and a < qg[0])
    step = [(a, t) for a, t in rows if top <= a <= qg[-1] + 0x400]
    skipped = set()
    for a, t in step:
        m = re.search(r"\bBRA (0x[0-9a-f]+)", t)
        if m and a < int(m.group(1), 16) <= qg[-1] + 0x400:
            skipped |= {b for b, _ in step if a < b < int(m.group(1), 16)}
    loaded = {}
    for a, t in step:
        m = re.search(r"LDG\.E\.CONSTANT (R\d+),", t)
        if m and a not in skipped:
            loaded[m.group(1)] = a
    return [t for a, t in step if re.search(r"\bFMUL\b", t)
            and any(loaded.get(r, a) < a for r in re.findall(r"R\d+", t)[1:])]
