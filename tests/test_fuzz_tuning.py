"""scripts/fuzz --mode tuning (tests/fuzz/tuning.py): a kernel at its defaults against the same
kernel at other tile, thread and stage constants, on the same inputs.  The oracle must find a
kernel whose result depends on its tiles (std.reduce prod's tree before 2026-12-05 dropped the
last column of an odd width), pass one whose result does not, and count a variant the compiler
refuses as an answer; a run of fixed seeds (slow) finds nothing."""
from __future__ import annotations

import numpy as np
import pytest

import tlc
from fuzz import tuning
from fuzz.oracles import Worker

# std.reduce prod_axis1 as it was: each step halves `half`, so BN = 48 reaches a width of 3
# and multiplies column 1 into 0, leaving column 2 out
HALVING_TREE = """
@kernel
def prod_axis1(x: f32[M, N], y: f32[M], BM: const = 4, BN: const = 256, THREADS: const = 128):
    with grid(cdiv(M, BM), threads=THREADS) as bx:
        t = fragment(f32[BM, BN])
        acc = fragment(f32[BM, BN])
        tree = shared(f32[BM, BN])
        out = fragment(f32[BM])
        fill(acc, 1)
        for k in range(cdiv(N, BN)):
            copy(x[bx * BM, k * BN], t)
            for i, j in parallel(BM, BN):
                if k * BN + j < N:
                    acc[i, j] = acc[i, j] * t[i, j]
        copy(acc, tree)
        half = BN // 2
        while half > 0:
            for i, j in parallel(BM, BN // 2):
                if j < half:
                    tree[i, j] = tree[i, j] * tree[i, j + half]
            half = half // 2
        for i in parallel(BM):
            out[i] = tree[i, 0]
        copy(out, y[bx * BM])
"""


def _case(path, kernel: str, variant: dict, sizes: dict, target: str = "cpu") -> tuning.Case:
    return tuning.Case(str(path), kernel, {}, variant, sizes, target, seed=3)


def test_a_tree_that_drops_a_column_of_an_odd_tile_is_a_mismatch(tmp_path):
    path = tmp_path / "tree.tl"
    path.write_text(HALVING_TREE)
    status, detail = tuning.run(_case(path, "prod_axis1", {"BN": 48}, {"M": 5, "N": 17}))
    assert status == "mismatch" and detail.startswith("tree.tl prod_axis1 {} variant {'BN': 48} on cpu"), detail
    assert tuning.run(_case(path, "prod_axis1", {"BN": 64}, {"M": 5, "N": 17})) == ("ok", "")


def test_std_prod_is_the_same_at_any_tile():
    path = tuning.ROOT / "stdlib" / "reduce.tl"
    for bn in (48, 6, 3):
        assert tuning.run(_case(path, "prod_axis1", {"BN": bn}, {"M": 5, "N": 17})) == ("ok", "")


def test_a_variant_the_compiler_refuses_is_an_answer():
    path = tuning.ROOT / "examples" / "softmax.tl"
    status, detail = tuning.run(_case(path, "softmax", {"BN": 1 << 20}, {"M": 3, "N": 5}))
    assert status == "variant-diag" and "error[E153]" in detail, detail


def test_a_seed_names_one_case():
    assert tuning.case(11) == tuning.case(11)
    assert any(tuning.case(s) for s in range(20)), "no seed drew a kernel with a tuning constant"


@pytest.mark.slow
def test_fixed_seeds_find_nothing():
    worker = Worker()
    try:
        bad = []
        for seed in range(40):
            o = worker.run_confirmed("", 60.0, tuning=seed)
            if o.failed or o.status == "interp-diag":
                bad.append(f"seed {seed}: {o.status} {o.detail[-1500:]}")
    finally:
        worker.close()
    assert not bad, f"{len(bad)} of 40 cases failed; the first:\n{bad[0]}"


@pytest.mark.slow
def test_a_worker_runs_the_cpu_target_after_its_parent_did():
    """The worker's child is spawned: a forked one inherited GNU libgomp's thread pool without
    its threads once this process had run a cpu-target kernel, and waited for them at its first
    OpenMP region until the wall limit, then again at the retry (CI's slow run hung there: the
    seeds above on the xdist worker that had run tests/targets' cpu table)."""
    mod = tlc.load(str(tuning.ROOT / "examples" / "vector_add.tl"), target="cpp")
    x, out = np.arange(4096, dtype=np.float32), np.zeros(4096, np.float32)
    mod.vector_add(x, x, out, 2.0)  # an OpenMP region in this process
    assert np.array_equal(out, 3 * x)
    seed = next(s for s in range(40) if tuning.case(s) is not None and tuning.case(s).target == "cpp")
    worker = Worker()
    try:
        o = worker.run("", 60.0, wall=60, tuning=seed)
    finally:
        worker.close()
    assert (o.status, o.detail) == ("ok", "")
