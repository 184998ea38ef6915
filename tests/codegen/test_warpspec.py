"""The sm_90a warp-specialized pipeline: which loops get it, the block and the tensor maps it
asks of the launch, and the machine code it compiles to (TMA, wgmma, register reallocation,
no local memory)."""
import re
from pathlib import Path

import pytest

from tlc.codegen import generate, launcher_tensor_map, primitives
from tlc.codegen.warpspec import TensorMapSpec, consumer_registers
from tlc.driver import check_file
from tlc.dtypes import F16, F32
from tlc.ir.printer import print_kernel
from tlc.runtime.tensormap import map_geometry
from tlc.schedule import schedule
from kit_codegen import generated, generated_source, kernel_part, scheduled_source
from nvcc import cubin_sass, run_host


def _generate(src: str, name: str, arch="sm_90a", **constants):
    return generated_source(src, name, arch, constants)


def test_the_gemm_loop_gets_a_producer_warpgroup_and_two_tensor_maps():
    g = generated("gemm", "matmul", "sm_90a")
    assert g.threads == 256 + 128
    assert "__launch_bounds__(384, 1)" in g.source
    # A and B are loaded through maps; C is stored through one (the epilogue, below)
    assert [(m.param, m.box_cols, m.store) for m in g.tensor_maps] == [("A", 64, False), ("B", 64, False), ("C", 64, True)]
    assert "tl::setmaxnreg_dec<40>();" in g.source and "tl::setmaxnreg_inc<232>();" in g.source
    assert "const __grid_constant__ tl::TensorMap tl_map2, int tl_tma_flags)" in g.source
    # the flags: the launch's, or the constant of a build that defines them (the runtime's)
    body = g.source[g.source.index("int tl_tma_flags) {"):]
    assert body.index("#ifdef TL_TMA_FLAGS\n  constexpr int tl_tma = TL_TMA_FLAGS;") < body.index("tl_tma & 1")
    # one wgmma group in flight: a stage is released one iteration late
    assert "tl::gemm_wgmma<" in g.source and ", 1>(" in g.source
    # persistent: the epilogue is a store of registers, so the producer may run ahead
    assert g.persistent and "tl_blocks(" in g.source  # the C launcher: at most one block per SM
    # clusters of 2 take two consecutive tiles; B does not depend on y: multicast when they share x
    assert g.cluster == 2 and "__cluster_dims__(2, 1, 1)" in g.source
    # (z: split-K's part of K, schedule/split_k.py)
    assert ("const bool tl_share = tl::cluster_tile<8, 2>(tl_pair, tl_tiles_x, tl_tiles_y, tl_tiles, tl_rank, "
            "bx, by, kpart);") in g.source
    assert "if (tl_valid) {  // a block past the last tile stores nothing" in g.source
    assert "tl::tma_load_tile_multicast<half, 64, 256, 2, 2>(" in g.source and "tl_rank, tl_share);" in g.source
    assert [(m.param, m.box_rows) for m in g.tensor_maps] == [("A", 128), ("B", 32), ("C", 64)]
    assert "tl::mbar_arrive_cluster<2>(tl_empty + (tl_it + 2) % 3)" in g.source


def test_the_epilogue_stages_each_warpgroups_rows_for_a_tma_store():
    g = generated("gemm", "matmul", "sm_90a")  # 3 stages of 48 KB leave room for the 64 KB tile
    body = kernel_part(g.source)
    assert "if (tl_tma & 2) {  // through shared memory" in body
    assert "half* tl_stage_c = reinterpret_cast<half*>(tl_smem + 148480);" in body  # 3 x 48 KB + barriers, 1024-aligned
    assert "tl::copy_f2s_staged<tl_matmul_layout_0, float, half, 128, 256>(tl_stage_c, acc);" in body
    assert ("tl::tma_store_tile<half, 64, 256, 128, 2>(&tl_map2, tl_stage_c, tl_group * 64, (bx * 256), "
            "(by * 128) + tl_group * 64, {0});") in body
    # the buffer is rewritten only after the last store read it; the block exits after its stores
    assert body.index("tl::tma_store_wait_read();") < body.index("tl::copy_f2s_staged<")
    assert "if (threadIdx.x % 128 == 0) tl::tma_store_wait();" in body
    # (inside split-K's `if (tl_sk_epilogue)`: a tile's last part of K)
    assert "} else {\n            tl::copy_f2g<tl_matmul_layout_0>(C, acc, N, M, N, (by * 128), (bx * 256));" in body
    assert g.smem_bytes == 148480 + 128 * 256 * 2
    # the launcher sets bit 1 of tl_tma only when the driver takes C's map
    assert "tl_tma_store = tl_tma_store && tl::encode_tensor_map(&tl_map2, 6, 2, C," in g.source
    assert "(tl_tma_loads ? 1 : 0) | (tl_tma_store ? 2 : 0));" in g.source


def test_a_ring_that_leaves_no_room_for_the_staged_tile_stores_from_registers():
    g = generated("gemm", "matmul", "sm_90a", {"stages": 4})  # 192 KB of stages + 64 KB > 227 KB
    assert [m.param for m in g.tensor_maps] == ["A", "B"] and "tl_tma & 2" not in g.source
    assert "tl::copy_f2g<tl_matmul_layout_0>(C, acc, N, M, N, (by * 128), (bx * 256));" in g.source


def test_sm80_keeps_the_cp_async_ring():
    g = generated("gemm", "matmul", "sm_80")
    assert g.threads == 256 and not g.tensor_maps
    assert "tl::mbar_wait(" not in kernel_part(g.source) and "cp_async_wait" in kernel_part(g.source)


def test_rows_narrower_than_128_bytes_keep_the_cp_async_ring():
    # BK=32 halves are 64-byte rows: not the 128-byte swizzle the TMA writes
    g = generated("gemm", "matmul", "sm_90a", {"BK": 32})
    assert not g.tensor_maps and g.threads == 256 and "cp_async_wait" in g.source


# Ts is read after the loop: a buffer nothing reads is dropped with its writes, and then the
# loop would no longer need the whole block
LOOP_WITH_SYNC = """
@kernel
def k(A: f16[M, K], B: f16[K, N], C: f32[M, N]):
    with grid(cdiv(N, 128), cdiv(M, 128), threads=256) as (bx, by):
        As = shared(f16[128, 64])
        Bs = shared(f16[64, 128])
        Ts = shared(f32[64, 128])
        acc = fragment(f32[128, 128])
        clear(acc)
        for k in pipelined(cdiv(K, 64), stages=3):
            copy(A[by * 128, k * 64], As)
            copy(B[k * 64, bx * 128], Bs)
            gemm(As, Bs, acc)
            for i, j in parallel(64, 128):
                Ts[i, j] = acc[i, j]
            sync()
        copy(acc, C[by * 128, bx * 128])
        copy(Ts, C[by * 128, bx * 128])
"""

SHARED_WORK_BEFORE = LOOP_WITH_SYNC.replace(
    "            for i, j in parallel(64, 128):\n                Ts[i, j] = acc[i, j]\n            sync()\n", "").replace(
    "        copy(Ts, C[by * 128, bx * 128])\n", "").replace(
    "        clear(acc)\n", "        clear(acc)\n        fill(As, 0.0)\n")


@pytest.mark.parametrize("src", [LOOP_WITH_SYNC, SHARED_WORK_BEFORE], ids=["shared-writes-and-sync-in-loop", "shared-fill-before"])
def test_loops_that_need_the_whole_block_are_not_specialized(src):
    # (a sync that only orders the copies before the gemm is fine: the full barrier does that)
    g = _generate(src, "k")
    assert not g.tensor_maps and g.threads == 256


def test_a_plain_loop_is_specialized_without_overlap():
    src = SHARED_WORK_BEFORE.replace("        fill(As, 0.0)\n", "").replace(
        "            gemm(As, Bs, acc)\n", "            gemm(As, Bs, acc)\n            gemm(As, Bs, acc)\n")
    g = _generate(src, "k")
    assert g.threads == 384 and [(m.param, m.store) for m in g.tensor_maps] == [("A", False), ("B", False), ("C", True)]
    assert "if (threadIdx.x % 32 == 0) tl::mbar_arrive_cluster<2>(tl_empty + tl_stage);" in g.source


EPILOGUE_WITH_SHARED = SHARED_WORK_BEFORE.replace("        fill(As, 0.0)\n", "").replace(
    "        copy(acc, C[by * 128, bx * 128])", "        copy(acc, As[0:128, 0:64])\n        copy(acc, C[by * 128, bx * 128])")


def test_an_epilogue_through_shared_memory_is_specialized_but_not_persistent():
    g = _generate(EPILOGUE_WITH_SHARED.replace("copy(acc, As[0:128, 0:64])", "fill(Bs, 1.0)"), "k")
    assert g.threads == 384 and not g.persistent and "persistent_tile" not in kernel_part(g.source)
    assert "__syncthreads();  // every consumer is past its last wait" in g.source


def test_persistent_tile_order_is_a_bijection(tmp_path):
    src = (primitives(("types.cuh", "copy.cuh", "tma.cuh")) + "\n#include <cstdio>\nint main() {\n"
           "  const int shapes[4][2] = {{32, 64}, {5, 19}, {1, 9}, {7, 1}};\n"
           "  for (auto& s : shapes) for (int t = 0; t < s[0] * s[1] * 2; ++t) {\n"
           "    int x, y, z; tl::persistent_tile<8>(t, s[0], s[1], x, y, z);\n"
           "    printf(\"%d %d %d %d %d %d\\n\", s[0], s[1], t, x, y, z);\n  }\n  return 0;\n}\n")
    out = run_host("#include <cuda_fp16.h>\n#include <cuda_bf16.h>\n" + src, tmp_path, arch="sm_90a")
    seen: dict = {}
    for line in out.splitlines():
        tx, ty, t, x, y, z = map(int, line.split())
        assert 0 <= x < tx and 0 <= y < ty and z == t // (tx * ty)
        seen.setdefault((tx, ty), set()).add((x, y, z))
    assert {k: len(v) for k, v in seen.items()} == {(32, 64): 4096, (5, 19): 190, (1, 9): 18, (7, 1): 14}
    # the first wave of 132 blocks on a 32 x 64 grid covers 8 rows of tiles, not 4 whole rows
    first = [tuple(map(int, line.split()[3:5])) for line in out.splitlines()[:132]]
    assert len({y for _, y in first}) == 8 and len({x for x, _ in first}) == 17


def test_consumer_registers_fill_the_register_file():
    assert consumer_registers(256) == 232  # 384 x 168 = 128 x 40 + 256 x 232
    assert consumer_registers(128) == 240
    assert 128 * 40 + 384 * consumer_registers(384) <= 512 * 128


def test_launcher_and_runtime_encode_the_same_geometry():
    spec = TensorMapSpec("A", F16, ("B", "M", "K"), 128, 64)
    dims, strides, box = map_geometry(spec, (3, 300, 104))
    assert (dims, strides, box) == ([104, 300, 3], [208, 208 * 300], [64, 128, 1])
    c = launcher_tensor_map(0, spec)
    assert c["rank"] == 3 and c["box"] == box and c["dtype"] == 6
    values = {"K": 104, "M": 300, "B": 3}
    evaluated = [eval(s.replace("static_cast<cuuint64_t>", ""), {}, values) for s in c["strides"]]
    assert evaluated == strides
    assert launcher_tensor_map(0, TensorMapSpec("X", F32, (64, "N"), 64, 32))["dtype"] == 7


def test_specialized_gemm_compiles_to_tma_wgmma_and_no_local_memory(tmp_path):
    g = generated("gemm", "matmul", "sm_90a", {"stages": 4})
    sass, log = cubin_sass(g.source, "sm_90a", tmp_path)
    assert re.search(r"0 bytes spill stores, 0 bytes spill loads", log), log
    for instruction in ("UTMALDG.2D", "HGMMA.64x256x16.F32", "USETMAXREG", "SYNCS.PHASECHK"):
        assert instruction in sass, instruction
    assert not re.search(r"\b(LDL|STL)\b", sass)


def test_the_staged_epilogue_compiles_to_tma_stores_without_local_memory(tmp_path):
    g = generated("gemm", "matmul", "sm_90a", {"BN": 192, "stages": 4})  # the 8192^3 configuration
    sass, log = cubin_sass(g.source, "sm_90a", tmp_path)
    assert re.search(r"0 bytes spill stores, 0 bytes spill loads", log), log
    assert "UTMASTG.2D" in sass and "UTMALDG.2D" in sass and "HGMMA.64x192x16.F32" in sass
    assert not re.search(r"\b(LDL|STL)\b", sass)



def test_a_warpgroup_with_128_rows_issues_two_m64_wgmma_a_k_step(tmp_path):
    """BM = 128 with one consumer warpgroup: two 64-row bands a warp (MmaAcc's WGMMA_BANDS), two
    wgmma instructions a K step into consecutive halves of the registers, the epilogue staged
    in one 128-row TMA box; 128 x 256 would take 256 registers a thread and stays on mma.sync."""
    g = generated("gemm", "matmul", "sm_90a", {"BM": 128, "BN": 128, "THREADS": 128, "stages": 4})
    body = kernel_part(g.source)
    assert "tl::MmaAcc<128, 128, 4, 1, true>" in body
    assert "tl::gemm_wgmma<tl_matmul_wgmma_n128_f16_nmajor, half, 64, 128, 64, false, 1, half, 2>(" in body
    assert "tl::fence_registers<128>(acc);" in body  # both bands' registers, after the last wgmma
    assert g.persistent and g.threads == 256
    assert [(m.param, m.box_rows, m.store) for m in g.tensor_maps][-1] == ("C", 128, True)
    sass, log = cubin_sass(g.source, "sm_90a", tmp_path)
    assert re.search(r"0 bytes spill stores, 0 bytes spill loads", log), log
    assert sass.count("HGMMA.64x128x16.F32") >= 8  # 4 K steps of 16 in BK = 64, two bands each
    assert not re.search(r"\b(LDL|STL)\b", sass)
    wide = generated("gemm", "matmul", "sm_90a", {"BM": 128, "BN": 256, "THREADS": 128})
    assert "gemm_wgmma" not in kernel_part(wide.source) and "tl::gemm_mma_sm80<" in kernel_part(wide.source)


def test_a_grouped_gemm_searches_its_group_in_both_roles_and_multicasts_nothing():
    # the scalar search before the loop runs per tile in the producer and the consumers; the
    # expert's weights depend on y through that search, so the cluster must not share them
    r = check_file(str(Path(__file__).resolve().parents[2] / "stdlib" / "gemm.tl"))
    g = generate(schedule(r.program, "matmul_grouped", {}, target="sm_90a"), "sm_90a", sources=r.sources)
    assert g.persistent and g.cluster == 1 and g.threads == 384  # its loop's length depends on the tile
    assert "multicast" not in kernel_part(g.source)
    assert kernel_part(g.source).count("for (int e = 0;") == 3  # both producer paths and the consumers


def test_a_sync_that_only_orders_the_copies_is_dropped_in_the_consumers():
    # std.gemm's fine-grained fp8 kernel: clear, gemm, then scale each K block's product
    r = check_file(str(Path(__file__).resolve().parents[2] / "stdlib" / "gemm.tl"))
    g = generate(schedule(r.program, "matmul_f8_blockscaled", {}, target="sm_90a"), "sm_90a", sources=r.sources)
    assert g.threads == 384 and g.persistent
    assert "// sync: the stage's full barrier already orders the copies before this" in g.source


def test_cluster_tiles_cover_every_tile_once_and_share_only_equal_columns(tmp_path):
    src = (primitives(("types.cuh", "copy.cuh", "tma.cuh")) + "\n#include <cstdio>\nint main() {\n"
           "  const int shapes[4][3] = {{32, 64, 1}, {5, 3, 1}, {7, 1, 1}, {3, 5, 2}};\n"
           "  for (auto& s : shapes) { const int tiles = s[0] * s[1] * s[2];\n"
           "    for (int p = 0; p < (tiles + 1) / 2; ++p) for (unsigned r = 0; r < 2; ++r) {\n"
           "      int x, y, z; const bool share = tl::cluster_tile<8, 2>(p, s[0], s[1], tiles, r, x, y, z);\n"
           "      printf(\"%d %d %d %d %u %d %d %d %d\\n\", s[0], s[1], s[2], p, r, x, y, z, (int)share);\n    }\n  }\n"
           "  return 0;\n}\n")
    out = run_host("#include <cuda_fp16.h>\n#include <cuda_bf16.h>\n" + src, tmp_path, arch="sm_90a")
    seen: dict = {}
    pairs: dict = {}
    for line in out.splitlines():
        tx, ty, tz, p, r, x, y, z, share = map(int, line.split())
        pairs.setdefault((tx, ty, tz, p), []).append((x, y, z, share))
        if y < ty:  # a real tile (a block past the last one gets y = tiles_y)
            seen.setdefault((tx, ty, tz), []).append((x, y, z))
    for (tx, ty, tz), got in seen.items():
        assert sorted(got) == sorted((x, y, z) for x in range(tx) for y in range(ty) for z in range(tz))
    for (a, b) in pairs.values():
        assert a[3] == b[3] == int(a[0] == b[0] and a[2] == b[2])  # both blocks agree; equal x and z
    # a 32 x 64 grid: nearly every pair shares its column of B
    shared = [v[0][3] for k, v in pairs.items() if k[:3] == (32, 64, 1)]
    assert sum(shared) == len(shared)


@pytest.mark.nvcc
@pytest.mark.slow
def test_the_build_for_encoded_maps_leaves_out_the_copies_without_the_tma(tmp_path):
    """std.gemm's matmul built as the runtime builds it for launches whose maps all encode
    (TL_TMA_FLAGS = 3): the producer's element-by-element copies and the epilogue's stores from
    registers are compiled out, about half the generic build's SASS (and of NVRTC's time)."""
    from tlc.runtime.tensormap import with_flags

    g = generated("gemm", "matmul", "sm_90a")
    generic, _ = cubin_sass(g.source, "sm_90a", tmp_path, "generic")
    built, log = cubin_sass(with_flags(g.source, 3), "sm_90a", tmp_path, "built")
    count = lambda sass: len(re.findall(r"/\*[0-9a-f]{4,}\*/", sass))  # noqa: E731 - instructions
    assert " 0 bytes spill stores" in log and "UTMALDG" in built and "UTMASTG" in built
    assert count(built) < 0.6 * count(generic)
    # the element copies into shared memory and the epilogue's stores of registers are gone
    assert "STS.U16" in generic and "STS.U16" not in built
    # (split-K's f32 partial slots and counter, bf13d8c, are stored from registers in both
    # builds: 37 STG of them on sm_90a, against the generic epilogue's ~320)
    assert built.count("STG") * 5 < generic.count("STG")


# a per-step vector beside the tiles: each K step's scales of the output columns (a block-scaled
# product), copied into a 1-D shared buffer of 128 f32
STEP_SCALES = """
@kernel
def k(A: f16[M, K], B: f16[N, K], s: f32[KB, N], C: f32[M, N]):
    with grid(cdiv(N, 128), cdiv(M, 128), threads=256) as (bx, by):
        As = shared(f16[128, 64])
        Bs = shared(f16[128, 64])
        ss = shared(f32[128])
        part = fragment(f32[128, 128])
        acc = fragment(f32[128, 128])
        clear(acc)
        for k in pipelined(cdiv(K, 64), stages=3):
            copy(A[by * 128, k * 64], As)
            copy(B[bx * 128, k * 64], Bs)
            copy(s[k, bx * 128], ss)
            gemm(As, Bs, part, trans_b=True, clear_accum=True)
            for i, j in parallel(128, 128):
                acc[i, j] += part[i, j] * ss[j]
        copy(acc, C[by * 128, bx * 128])
"""


def test_a_vector_beside_the_tiles_is_one_unswizzled_tma_box_a_stage():
    k, _ = scheduled_source(STEP_SCALES, "k", "sm_90a")
    ws = k.warp_spec
    assert [(x.buffer, x.flat, x.rows, x.cols) for x in ws.loads] == [("As", False, 128, 64), ("Bs", False, 128, 64),
                                                                     ("ss", True, 1, 128)]
    spec = ws.tensor_maps[ws.loads[2].tensor_map]
    assert (spec.param, spec.box(), spec.swizzle) == ("s", [128, 1], False)
    assert "#2 s box 1x128 (unswizzled)" in print_kernel(k)
    g = _generate(STEP_SCALES, "k")
    # one box, its origin innermost first; the stage's bytes counted with the tiles'; the
    # element-by-element copy where the host has no map; the launcher's map unswizzled
    assert "tl::mbar_arrive_expect_tx(tl_full + tl_stage, 33280);" in g.source  # 2 x 16 KB + 512
    assert re.search(r"tl::tma_load<2>\(\(ss \+ \(\(tl_it\) % 3\) \* 128\), &tl_map2, tl_full \+ tl_stage, "
                     r"\{\(bx \* 128\), k\}\);", g.source)
    assert "tl::copy_g2s_elements<float, 1, 128, 128, 0, 0>((ss + ((tl_it) % 3) * 128)" in g.source
    assert "tl::encode_tensor_map(&tl_map2, 7, 2, s, dims, strides, box, false);" in g.source
    assert "tl::encode_tensor_map(&tl_map0, 6, 2, A, dims, strides, box);" in g.source
    dims, strides, box = map_geometry(spec, (5, 300))
    assert (dims, strides, box) == ([300, 5], [1200], [128, 1])


def test_the_vector_beside_the_tiles_runs_on_the_interpreter_as_numpy_computes_it():
    import numpy as np

    from tlc.interp import run_kernel

    k, _ = scheduled_source(STEP_SCALES, "k", "sm_90a")
    rng = np.random.default_rng(0)
    M, N, K = 130, 200, 150  # ragged: every copy reads past an edge
    a, b = (rng.standard_normal(x).astype(np.float16) for x in ((M, K), (N, K)))
    s = rng.standard_normal((3, N)).astype(np.float32)
    c = np.full((M, N), np.nan, np.float32)
    run_kernel(k, {"A": a, "B": b, "s": s, "C": c})
    want = sum((a[:, x * 64:x * 64 + 64].astype(np.float64) @ b[:, x * 64:x * 64 + 64].T.astype(np.float64)) * s[x]
               for x in range(3))
    assert np.abs(c - want).max() < 1e-3 * np.abs(want).max()


@pytest.mark.nvcc
def test_the_vector_beside_the_tiles_compiles_to_one_1d_tma_copy_without_local_memory(tmp_path):
    g = _generate(STEP_SCALES, "k")
    sass, log = cubin_sass(g.source, "sm_90a", tmp_path)
    assert "UTMALDG.2D" in sass and re.search(r"0 bytes spill stores, 0 bytes spill loads", log), log
    assert not re.search(r"\b(LDL|STL)\b", sass)
