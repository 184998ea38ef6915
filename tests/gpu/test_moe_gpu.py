"""std.moe on the GPU: tests/stdlib/test_moe.py's table (every operator and dtype) at larger
ragged shapes with the default tiles (256 experts a tile, 2048 ids a chunk; for E <= 64 the
sm_90a config table's 64 experts and 32 tokens a tile), and a routing step
against PyTorch (softmax, topk, a stable sort by expert)."""
import pathlib
import sys
import zlib

import numpy as np
import pytest

import tlc

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "stdlib"))  # the table
from moe_kit import MOE_PATH, OPS, align_capacity, logits  # noqa: E402

pytestmark = pytest.mark.gpu

# (M tokens, E experts, K, D): Mixtral's 8 experts top-2, DeepSeek-V3's 256 top-8, a ragged 61
SHAPES = {"topk": [(1000, 8, 2, 0), (333, 256, 8, 0), (77, 61, 5, 0)],
          "ids": [(4097, 64, 8, 0), (3, 256, 8, 0)],
          "rows": [(515, 16, 4, 2000), (7, 8, 2, 4096)]}


@pytest.fixture(scope="module")
def mod():
    return tlc.load(MOE_PATH, target="cuda")


@pytest.mark.parametrize("op,dtype", [pytest.param(op, d, id=f"{op.name}-{d}") for op in OPS for d in op.dtypes])
def test_against_numpy(mod, op, dtype):
    kind = "topk" if op.name.startswith("topk") else "rows" if "permute" in op.name else "ids"
    for shape in SHAPES[kind]:
        op.check(mod, np.random.default_rng(zlib.crc32(op.name.encode()) + shape[0]), dtype, shape, {})


@pytest.mark.parametrize("name", ["expert_histogram", "moe_permute", "moe_unpermute"])
def test_with_the_untimed_decisions_on(name, monkeypatch, tmp_path):
    """schedule/atomic_groups.py (expert_histogram's bins grouped by address in a warp) and
    l2_policy.py (moe_permute's and moe_unpermute's gathered rows loaded with an L2 evict_last
    policy), off by default until timed: the table's checks with each on, compiled into a cache
    of their own (the cache key does not hold the passes' switches)."""
    from tlc.schedule import atomic_groups, l2_policy

    monkeypatch.setattr(atomic_groups, "GROUP_ATOMICS", True)
    monkeypatch.setattr(l2_policy, "KEEP_GATHERED_ROWS", True)
    monkeypatch.setenv("TLC_CACHE_DIR", str(tmp_path))
    on = tlc.load(MOE_PATH, target="cuda")
    k = on.kernels[name].scheduled({}, "sm_90a")
    assert "grouped by address" in str(k.notes) or "L2 evict_last" in str(k.notes)
    op = next(o for o in OPS if o.name == name)
    kind = "rows" if "permute" in name else "ids"
    for dtype in op.dtypes:
        for shape in SHAPES[kind]:
            op.check(on, np.random.default_rng(zlib.crc32(name.encode()) + shape[0]), dtype, shape, {})


def test_a_launcher_whose_sizes_decide_its_assert_reads_no_record(monkeypatch):
    """runtime/host_asserts.py (HOST_DECIDED_ASSERTS, on by default since session 28): expert_histogram's
    `E <= BE` decided on the host when a launcher binds its arguments; where it holds, no launch
    waits to read the assert record (the counts still right), where it fails every launch still
    reads it and raises."""
    import cupy as cp

    from tlc.device_assert import DeviceAssertError
    from tlc.runtime import host_asserts, launch

    assert host_asserts.HOST_DECIDED_ASSERTS is True
    reads, read = [], launch.CompiledKernel.check_asserts
    monkeypatch.setattr(launch.CompiledKernel, "check_asserts", lambda self: (reads.append(1), read(self))[1])
    mod = tlc.load(MOE_PATH, target="cuda")
    ids = cp.asarray(np.random.default_rng(0).integers(0, 64, 10000).astype(np.int32))
    counts = cp.zeros(64, cp.int32)
    run = mod.expert_histogram.launcher(ids, counts)
    run()
    run()
    assert not reads and np.array_equal(cp.asnumpy(counts), 2 * np.bincount(cp.asnumpy(ids), minlength=64))
    with pytest.raises(DeviceAssertError, match="expert_histogram: E = 300 experts"):  # E > BE = 256
        mod.expert_histogram.launcher(ids, cp.zeros(300, cp.int32))()
    assert reads


@pytest.mark.parametrize("n", [10000, 10001])  # runs whole (the whole-runs build), and not (the generic one)
def test_a_kernel_with_asserts_in_its_whole_runs_build(n, monkeypatch, tmp_path):
    """host_asserts.WHOLE_RUNS_WITH_ASSERTS (off until timed): expert_histogram keeps the
    TL_WHOLE_RUNS build though it asserts; a launch that needs the generic build runs that, and
    a failing assert in either build is still read (CompiledKernel.check_asserts reads both
    modules' records).  Its own cache: the key holds the built source, which the switch changes."""
    import cupy as cp

    from tlc.device_assert import DeviceAssertError
    from tlc.runtime import host_asserts

    monkeypatch.setattr(host_asserts, "WHOLE_RUNS_WITH_ASSERTS", True)
    monkeypatch.setenv("TLC_CACHE_DIR", str(tmp_path))
    on = tlc.load(MOE_PATH, target="cuda")
    ids = cp.asarray(np.random.default_rng(n).integers(0, 64, n).astype(np.int32))
    counts = cp.zeros(64, cp.int32)
    on.expert_histogram(ids, counts)
    assert np.array_equal(cp.asnumpy(counts), np.bincount(cp.asnumpy(ids), minlength=64))
    with pytest.raises(DeviceAssertError, match="expert_histogram: E = 300 experts"):
        on.expert_histogram(ids, cp.zeros(300, cp.int32))


def test_routing_against_pytorch(mod):
    """topk_softmax and moe_align_block_size against torch.softmax, torch.topk and a stable
    torch.sort of the expert ids, on the GPU's tensors."""
    import torch

    M, E, K, BLOCK = 2048, 64, 6, 64
    x = torch.from_numpy(logits(np.random.default_rng(5), M, E, "f32")).cuda()
    w, ids = torch.empty(M, K, device="cuda"), torch.empty(M, K, dtype=torch.int32, device="cuda")
    mod.topk_softmax(x, ids, w)
    ref = torch.softmax(x.double(), -1)
    want_ids = torch.sort(-x, dim=1, stable=True).indices[:, :K]
    assert torch.equal(ids.long(), want_ids)
    torch.testing.assert_close(w.double(), ref.gather(1, want_ids), rtol=1e-6, atol=1e-7)
    P, NB = align_capacity(M * K, E, BLOCK)
    sorted_ids = torch.empty(P, dtype=torch.int32, device="cuda")
    block_expert = torch.empty(NB, dtype=torch.int32, device="cuda")
    positions = torch.empty(M * K, dtype=torch.int32, device="cuda")
    offsets = torch.empty(E + 1, dtype=torch.int32, device="cuda")
    mod.moe_align_block_size(ids.view(-1), sorted_ids, block_expert, positions, offsets)
    order = torch.sort(ids.view(-1), stable=True).indices
    total = int(offsets[-1])
    real = sorted_ids[:total][sorted_ids[:total] < M * K]
    assert torch.equal(real.long(), order)
    assert torch.equal(sorted_ids[positions.long()].long(), torch.arange(M * K, device="cuda"))
    padded = (torch.bincount(ids.view(-1), minlength=E) + BLOCK - 1) // BLOCK * BLOCK
    assert torch.equal(offsets.long(), torch.cat([padded.new_zeros(1), padded.cumsum(0)]))


def test_a_moe_layer_against_pytorch(mod):
    """Routing, std.gemm's matmul_grouped over the aligned rows and the weighted sum back, in
    f16, against the layer in PyTorch (each token's experts' h @ W[e].T, weighted by its gates)."""
    import torch

    gemm = tlc.load("std.gemm", target="cuda")
    M, E, K, D, N, BLOCK = 300, 16, 2, 256, 384, 128
    g = torch.Generator(device="cuda").manual_seed(0)
    x = torch.randn(M, E, device="cuda", generator=g)
    h = torch.randn(M, D, device="cuda", generator=g).half()
    W = (torch.randn(E, N, D, device="cuda", generator=g) / 16).half()
    w, ids = torch.empty(M, K, device="cuda"), torch.empty(M, K, dtype=torch.int32, device="cuda")
    mod.topk_softmax(x, ids, w, RENORMALIZE=True)
    P, NB = align_capacity(M * K, E, BLOCK)
    sorted_ids, block_expert = (torch.empty(n, dtype=torch.int32, device="cuda") for n in (P, NB))
    positions = torch.empty(M * K, dtype=torch.int32, device="cuda")
    offsets = torch.empty(E + 1, dtype=torch.int32, device="cuda")
    mod.moe_align_block_size(ids.view(-1), sorted_ids, block_expert, positions, offsets, BLOCK=BLOCK)
    routed = torch.empty(P, D, dtype=torch.half, device="cuda")
    mod.moe_permute(h, sorted_ids, routed, K)
    expert_out = torch.zeros(P, N, dtype=torch.half, device="cuda")
    gemm.matmul_grouped(routed, W, offsets, expert_out)
    out = torch.empty(M, N, dtype=torch.half, device="cuda")
    mod.moe_unpermute(expert_out, positions.view(M, K), w, out)
    want = sum(w[:, k:k + 1].double() * torch.einsum("md,mnd->mn", h.double(), W[ids[:, k].long()].double())
               for k in range(K))
    torch.testing.assert_close(out.double(), want, rtol=4e-3, atol=4e-3 * float(want.abs().max()))
