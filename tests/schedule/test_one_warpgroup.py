"""schedule/one_warpgroup.py: a narrow product of 64 rows whose result reaches the consumer
warpgroups through shared memory (MLA decode's scores, copied into P for O += P @ V) is laid on
the first warpgroup alone, where the warpgroups split the wider product by columns; elsewhere
the layouts are as before.  The statements over its fragments run on that warpgroup's threads
(the code generator's guard), and a loop over the split accumulator that reads one of its row
statistics exchanges it through shared memory."""
from __future__ import annotations

from kit import scheduled

from tlc import ir
from tlc.codegen import generate
from tlc.schedule.layout import wgmma_accumulator
from tlc.schedule.one_warpgroup import owner_threads, single_accumulator

# a page of scores (64 x N) and an output of 64 x D, as mla_decode's loop without the paging: the
# values are the keys' tile itself (K's columns, as MLA's latent rows), one staged buffer
SRC = """
@kernel
def scores_then_pv(Q: bf16[M, D], K: bf16[S, D], O: bf16[M, D], N: const = 64, D: const = 256,
                   THREADS: const = 256):
    with grid(cdiv(M, 64), threads=THREADS) as (bx,):
        q = shared(bf16[64, D])
        k = shared(bf16[N, D])
        probs = shared(bf16[64, N])
        s = fragment(f32[64, N])
        acc = fragment(f32[64, D])
        mx = fragment(f32[64])
        copy(Q[bx * 64, 0], q)
        clear(acc)
        for kb in pipelined(cdiv(S, N), num_stages=2):
            copy(K[kb * N, 0], k)
            gemm(q, k, s, trans_b=True, clear_accum=True)
            reduce_max(s, mx, dim=1)
            for i, j in parallel(64, N):
                s[i, j] = exp(s[i, j] - mx[i])
            copy(s, probs)
            for i, j in parallel(64, D):
                acc[i, j] *= mx[i]
            gemm(probs, k, acc)
        copy(acc, O[bx * 64, 0])
"""


def _buffers(k: ir.Kernel) -> dict:
    return {b.name: b for b in k.buffers}


def test_the_scores_take_one_warpgroup_and_their_statistics_follow():
    k = scheduled(SRC, "scores_then_pv", {}, target="sm_90a")
    b = _buffers(k)
    assert b["s"].layout == single_accumulator((64, 64))
    assert owner_threads(b["s"].layout, 256) == owner_threads(b["mx"].layout, 256) == 128
    assert b["acc"].layout == wgmma_accumulator((64, 256), 256) and b["acc"].layout.wgmma_columns
    # the rescale reads mx in another layout: an exchange, met at the consumers' barrier
    loop = k.body[k.warp_spec.loop]
    ex = [i for i, x in enumerate(loop.body) if isinstance(x, ir.Parallel) and x.exchange]
    assert len(ex) == 1 and loop.body[ex[0]].exchange == (("mx", False),)
    assert k.warp_spec.consumer_barrier and [i for i, _ in k.warp_spec.exchanges] == ex
    # the kept sync before P's store: warpgroup 1 writes nothing before the exchange, it arrives
    store = next(i for i, x in enumerate(loop.body) if isinstance(x, ir.Copy) and x.dst.name == "probs")
    assert k.warp_spec.kept_syncs == (store - 1,) and k.warp_spec.arrivals == ((store - 1, 128),)


def test_the_generated_consumers_guard_warpgroup_zeros_statements():
    k = scheduled(SRC, "scores_then_pv", {}, target="sm_90a")
    src = generate(k, "sm_90a").source
    body = src[src.index("tl::setmaxnreg_inc"):]
    # the scores' product issued by warpgroup 0 alone, m64n64 (one warpgroup's instruction)
    assert "if (threadIdx.x < 128) tl::gemm_wgmma_issue<tl_scores_then_pv_wgmma_n64_bf16" in body
    assert body.count("if (threadIdx.x < 128) {  // fragments of threads 0..127 alone") >= 3
    # mx written by its holders into scratch after the ring's barriers, both warpgroups then read it
    assert "if (threadIdx.x < 128)\n" in body and "tl::exchange_f2s<" in body
    assert "tl::bar_sync_named(5, 256);" in body and "__syncthreads();  // reductions'" not in body
    assert "if (threadIdx.x < 128) tl::bar_sync_named(8, 256);" in body and "else tl::bar_arrive_named(8, 256);" in body


def test_uniform_guards_test_a_warp_index_broadcast_from_lane_0(monkeypatch):
    # codegen/sm80.py UNIFORM_GUARDS: warpgroup 0's statements, its product's issue and the
    # handover's sync test `tl_warp`, the warp's index as its lane 0 holds it (uniform in the warp
    # as ptxas sees it), declared once at the kernel's top
    import tlc.codegen.sm80 as sm80
    monkeypatch.setattr(sm80, "UNIFORM_GUARDS", True)
    src = generate(scheduled(SRC, "scores_then_pv", {}, target="sm_90a"), "sm_90a").source
    assert src.count("const int tl_warp = __shfl_sync(0xffffffffu, static_cast<int>(threadIdx.x) / 32, 0);") == 1
    body = src[src.index("tl::setmaxnreg_inc"):]
    assert "if (tl_warp < 4) {  // fragments of threads 0..127 alone" in body
    assert "if (tl_warp < 4) tl::gemm_wgmma_issue<tl_scores_then_pv_wgmma_n64_bf16" in body
    assert "if (tl_warp < 4) tl::bar_sync_named(8, 256);" in body and "if (tl_warp < 4)\n" in body
    assert "threadIdx.x < 128" not in body


def test_the_layouts_stay_where_the_rule_does_not_hold():
    # sm_80 (no wgmma), one warpgroup (nothing to split), and a product as wide as the split's
    # parts (128 columns: 64 each, the rate of shared memory already)
    for constants, target in (({}, "sm_80"), ({"THREADS": 128}, "sm_90a"),
                              ({"N": 128}, "sm_90a")):
        k = scheduled(SRC, "scores_then_pv", constants, target=target)
        s = _buffers(k)["s"]
        assert owner_threads(s.layout, k.threads) == k.threads, (constants, target, s.layout)
