"""bench/f8bs_probe.tl (issue #18's probes of std.gemm's block-scaled f8 GEMM) on the cpu target
against NumPy, on a ragged shape (N = 260: the last tile partly outside; K = 384: three scale
blocks): the GPU times them (bench/f8bs_probe.py), their sums are checked here."""
from pathlib import Path

import numpy as np
import pytest

import tlc

PROBE = str(Path(__file__).resolve().parents[2] / "bench" / "f8bs_probe.tl")


@pytest.fixture(scope="module")
def case():
    import ml_dtypes

    rng = np.random.default_rng(5)
    M, N, K = 130, 260, 384
    f8 = ml_dtypes.float8_e4m3fn
    A = rng.standard_normal((M, K)).astype(f8)
    B = rng.standard_normal((N, K)).astype(f8)
    SA = (rng.random((M, 3)) + 0.5).astype(np.float32)
    SB = (rng.random((3, 3)) + 0.5).astype(np.float32)
    deq_a = A.astype(np.float64) * np.repeat(SA, 128, 1)
    deq_b = B.astype(np.float64) * np.repeat(np.repeat(SB, 128, 0)[:N], 128, 1)
    return A, B, SA, SB, deq_a @ deq_b.T, A.astype(np.float64) @ B.astype(np.float64).T


def _check(C, ref):
    assert np.isfinite(C.astype(np.float32)).all()
    assert np.abs(C.astype(np.float64) - ref).max() <= 1e-2 * np.abs(ref).max()


@pytest.mark.parametrize("kernel", ["bs_wide", "bs_tma", "bs_const", "bs_pf"])
def test_each_probe_computes_the_block_scaled_product(case, kernel):
    import ml_dtypes

    A, B, SA, SB, ref, plain = case
    mod = tlc.load(PROBE, target="cpu")
    C = np.full(ref.shape, np.nan, ml_dtypes.bfloat16)
    if kernel == "bs_wide":  # 128 x 192 tiles: tile 1 starts 64 columns into scale block 1
        mod.bs_wide(A, B, C, SA, SB, stages=2)
    elif kernel == "bs_tma":  # the scales transposed, SBT's rows padded to 16 bytes
        SBT = np.zeros((3, 4), np.float32)
        SBT[:, :3] = SB.T
        mod.bs_tma(A, B, C, np.ascontiguousarray(SA.T), SBT, stages=2)
    elif kernel == "bs_pf":  # the scales a K step ahead, the last K step's next past KB
        mod.bs_pf(A, B, C, SA, SB, stages=2)
    else:
        mod.bs_const(A, B, C, 0.5, 2.0, stages=2)
        ref = plain
    _check(C, ref)


def test_the_grouped_rows_groups():
    # bench/f8bs_probe.py --grouped: E ragged groups adding up to M rows, the second empty, some
    # past a 128-row tile's edge; and the queued script's shapes parse as E x M x N x K
    import json
    import re
    import sys

    sys.path.insert(0, str(Path(PROBE).parent))
    from f8bs_probe import GROUPED_CONFIGS, group_sizes

    for E, M in ((8, 8192), (4, 4096), (1, 5)):
        sizes = group_sizes(E, M)
        assert len(sizes) == E and sum(sizes) == M and min(sizes) >= 0
        assert E == 1 or sizes[1] == 0
    assert any(s % 128 for s in group_sizes(8, 8192))
    script = (Path(PROBE).parent / "queue" / "V_E_flips.sh").read_text()
    runs = re.findall(r"--grouped (\S+)", script)
    assert len(runs) == 2 and all(len(s.split("x")) == 4 for r in runs for s in r.split(","))
    assert {c.get("BN") for c in GROUPED_CONFIGS.values()} == {None, 256}
    configs = [json.loads(c) for c in re.findall(r"--configs '([^']*)'", script)]  # the grouped runs' rows
    assert "--no-store-pairs" in script and {c.get("BN") for c in configs[-1].values()} == {None, 128}


def test_probes_names_the_rows_it_keeps():
    # --probes: one probe a process in bench/queue/E_f8bs.sh (session 28's 8192^3 run faulted in one of them)
    import re
    import subprocess
    import sys

    script = str(Path(PROBE).with_suffix(".py"))
    res = subprocess.run([sys.executable, script, "--probes", "bs_const,bs_x"], capture_output=True, text=True)
    assert res.returncode == 2
    assert ("error: --probes: no probe named bs_x (the probes: f8_128, f8_192, bs_const, bs_tma, bs_wide, bs_pf)"
            in res.stderr)
    queued = (Path(PROBE).parent / "queue" / "E_f8bs.sh").read_text()
    sys.path.insert(0, str(Path(PROBE).parent))
    from f8bs_probe import PROBES

    assert re.search(r"for p in ([\w ]+); do", queued).group(1).split() == list(PROBES)  # a process each
    assert "--probes $p" in queued
