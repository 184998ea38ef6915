"""The interpreter runs a warp-specialized kernel as its IR says (tlc/interp/ring.py): the ring's
stages, the producer running ahead of the consumers as far as the barriers let it, the
persistent tile order and the cluster's multicast parts.  The IR the schedule pass records
matches NumPy; the same IR with one decision made wrong does not."""
from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest

import tlc
from tlc.interp import InterpError, run_kernel
from tlc.interp.numerics import np_dtype
from tlc.ir.walk import written_names
from tlc.interp.ring import PERSISTENT_BLOCKS, block_walk

ROOT = Path(__file__).resolve().parents[2]
SMALL = {"BM": 64, "BN": 64, "BK": 64, "THREADS": 128}


def _gemm(constants: dict, arch="sm_90a"):
    return tlc.load(str(ROOT / "examples" / "gemm.tl"), target="cpu").kernels["matmul"].scheduled(constants, arch)


def _matmul_error(kernel, M=200, N=320, K=200) -> float:
    """Largest error of the kernel's C against NumPy's A @ B (f16 inputs, f32 products); inf
    where the kernel left an element unwritten."""
    rng = np.random.default_rng(7)
    A = rng.standard_normal((M, K)).astype(np.float16)
    B = rng.standard_normal((K, N)).astype(np.float16)
    C = np.full((M, N), np.nan, np.float16)
    run_kernel(kernel, {"A": A, "B": B, "C": C})
    if np.isnan(C).any():
        return np.inf
    return float(np.abs(C.astype(np.float32) - A.astype(np.float32) @ B.astype(np.float32)).max())


def _with(kernel, **changes):
    return dataclasses.replace(kernel, warp_spec=dataclasses.replace(kernel.warp_spec, **changes))


def _loads(kernel, **changes):
    return tuple(dataclasses.replace(x, **changes) for x in kernel.warp_spec.loads)


@pytest.mark.parametrize("constants", [{}, SMALL], ids=["defaults", "64x64x64"])
def test_the_recorded_ring_matches_numpy(constants):
    kernel = _gemm(constants)
    ws = kernel.warp_spec
    assert ws.tile_order is not None and ws.tile_order.cluster == 2 and ws.stages == 3  # persistent, clustered
    assert _matmul_error(kernel) < 0.05


def test_stages_that_overlap_in_the_buffer_give_wrong_results():
    kernel = _gemm(SMALL)
    half = _with(kernel, loads=_loads(kernel, stage_elems=kernel.warp_spec.loads[0].stage_elems // 2))
    assert _matmul_error(half) > 1.0  # the producer, ahead, wrote over the stage being read
    one = _with(kernel, loads=_loads(kernel, stage_elems=0))
    assert _matmul_error(one) > 1.0


def test_a_ring_deeper_than_its_buffers_is_an_interpreter_error():
    kernel = _gemm(SMALL)
    with pytest.raises(InterpError, match=r"stage 3 of 'As' starts 12288 elements in, past the 3 stages of "
                                          r"12288 elements the shared memory plan gave it"):
        _matmul_error(_with(kernel, stages=4))


def test_multicasting_a_tile_that_depends_on_the_cluster_block_gives_wrong_results():
    # A's tile depends on y, which differs between the two blocks of a cluster: each block
    # would load half of its own rows into both
    kernel = _gemm(SMALL)
    assert [x.multicast for x in kernel.warp_spec.loads] == [False, True]
    assert _matmul_error(_with(kernel, loads=_loads(kernel, multicast=True))) > 1.0


def test_a_kernel_that_is_not_persistent_runs_one_tile_per_block(tmp_path):
    path = tmp_path / "gemm_with_a_shared_epilogue.tl"
    path.write_text((ROOT / "examples" / "gemm.tl").read_text().replace(
        "        copy(acc, C[by * BM, bx * BN])", "        fill(Bs, 1.0)\n        copy(acc, C[by * BM, bx * BN])"))
    kernel = tlc.load(str(path), target="cpu").kernels["matmul"].scheduled(SMALL, "sm_90a")
    assert kernel.warp_spec is not None and kernel.warp_spec.tile_order is None
    assert _matmul_error(kernel) < 0.05
    assert _matmul_error(_with(kernel, loads=_loads(kernel, stage_elems=0))) > 1.0


def test_every_tile_once_across_the_persistent_blocks():
    kernel = _gemm(SMALL)
    ws = kernel.warp_spec
    for extents in [(5, 4, 1), (1, 9, 1), (7, 1, 2), (3, 17, 1)]:
        for cluster in (1, 2):
            spec = dataclasses.replace(ws, tile_order=dataclasses.replace(ws.tile_order, cluster=cluster))
            blocks = PERSISTENT_BLOCKS * cluster
            got = [tile for b in range(blocks) for tile, valid, _, _ in block_walk(b, blocks, spec, extents) if valid]
            tx, ty, tz = extents
            assert sorted(got) == sorted((x, y, z) for x in range(tx) for y in range(ty) for z in range(tz))


# ---- std.gemm: each warp-specialized kernel against the same kernel's plain IR --------------

STD = ROOT / "stdlib" / "gemm.tl"
SIZES = {"M": 150, "N": 200, "K": 300, "BATCH": 2, "S": 2, "TOTAL_M": 150, "E": 3, "E1": 4}
OFFSETS = np.array([0, 40, 40, 150], np.int32)  # matmul_grouped's groups of rows (one empty)


def _std_kernels():
    mod = tlc.load(str(STD), target="cpu")
    out = []
    for name in sorted(mod.kernels):
        try:
            (kernel,) = mod.kernels[name].scheduled_grids({}, "sm_90a")
        except (tlc.TlcError, ValueError):
            continue
        if kernel.warp_spec is not None:
            out.append(pytest.param(name, id=name))
    return out


def _arguments(kernel, rng) -> dict:
    sizes = dict(SIZES)
    for p in kernel.params:  # block-scaled kernels: one scale per 128 of K (and of N)
        for d in p.shape:
            if isinstance(d, str) and d not in sizes:
                sizes[d] = {"KB": -(-sizes["K"] // 128), "NB": -(-sizes["N"] // 128)}[d]
    args = {}
    for p in kernel.params:
        if p.kind == "scalar":
            args[p.name] = 0.75 if p.dtype.is_float else 3
            continue
        if p.name == "offsets":
            args[p.name] = OFFSETS
            continue
        shape = tuple(sizes[d] if isinstance(d, str) else d for d in p.shape)
        if p.dtype.is_float:
            values = rng.standard_normal(shape).astype(np.float32)
        else:
            values = rng.integers(-4, 5, shape)
        args[p.name] = values.astype(np_dtype(p.dtype))
    return args


def _run(kernel, args) -> dict:
    copies = {k: v.copy() if isinstance(v, np.ndarray) else v for k, v in args.items()}
    run_kernel(kernel, copies)
    return copies


@pytest.mark.parametrize("name", _std_kernels())
def test_std_gemm_rings_match_the_plain_kernel(name):
    k = tlc.load(str(STD), target="cpu").kernels[name]
    (ring,) = k.scheduled_grids({}, "sm_90a")
    (plain,) = k.scheduled_grids({}, "sm_80")
    assert plain.warp_spec is None
    args = _arguments(ring, np.random.default_rng(3))
    want, got = _run(plain, args), _run(ring, args)
    (out,) = [p.name for p in ring.params if p.name in written_names(ring.body)]  # C, or split-K's partials P
    scale = float(np.abs(want[out].astype(np.float64)).max())
    assert np.abs(got[out].astype(np.float64) - want[out].astype(np.float64)).max() <= 0.02 * scale
    bad = _run(_with(ring, loads=_loads(ring, stage_elems=0)), args)
    assert np.abs(bad[out].astype(np.float64) - want[out].astype(np.float64)).max() > 0.1 * scale


def test_a_ring_whose_staged_tile_is_read_after_the_loop_differs(tmp_path, monkeypatch):
    # the record the pass refuses to make (test_warpspec_pass.py): the epilogue reads As, which
    # is the ring's first stage after the loop, and the producer is refilling it for the next tile
    from test_warpspec_pass import READS_A_STAGE_AFTER
    from tlc.schedule import warpspec

    path = tmp_path / "reads_a_stage_after.tl"
    path.write_text(READS_A_STAGE_AFTER)
    k = tlc.load(str(path), target="cpu").kernels["matmul"]
    plain = k.scheduled({}, "sm_80")
    monkeypatch.setattr(warpspec, "reads_staged", lambda stmts, staged: False)
    ring = k.scheduled({}, "sm_90a")
    assert ring.warp_spec is not None and ring.warp_spec.tile_order is not None
    rng = np.random.default_rng(5)
    # 8 tiles over 6 blocks, 3 iterations each: the last one's tile is in stage 2
    M, N, K = 512, 512, 192
    args = {"A": rng.standard_normal((M, K)).astype(np.float16), "B": rng.standard_normal((K, N)).astype(np.float16),
            "C": np.zeros((M, N), np.float16), "D": np.zeros((M, N), np.float16)}
    want, got = _run(plain, args), _run(ring, args)
    assert np.array_equal(want["C"], got["C"]) and not np.array_equal(want["D"], got["D"])
