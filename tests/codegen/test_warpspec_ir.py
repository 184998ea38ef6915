"""The sm_90a generator renders the kernel's `ir.WarpSpecialization` and decides nothing of its
own: change the record and the C follows; drop it and the loop is the cp.async ring.  The
interpreter walks a persistent kernel's tiles in the same order as the C (tl/tma.cuh)."""
import dataclasses

from tlc.codegen import generate, primitives
from tlc.interp.ring import cluster_tiles, persistent_tile
from tlc.driver import check_file
from tlc.schedule import schedule
from kit_codegen import EXAMPLES, kernel_part
from nvcc import run_host


def _matmul():
    r = check_file(str(EXAMPLES / "gemm.tl"))
    return schedule(r.program, "matmul", {}, target="sm_90a"), r.sources


def _with(kernel, **changes):
    return dataclasses.replace(kernel, warp_spec=dataclasses.replace(kernel.warp_spec, **changes))


def test_the_c_follows_the_record():
    kernel, sources = _matmul()
    ws = kernel.warp_spec
    g = generate(_with(kernel, producer_registers=56, consumer_registers=224, empty_arrivals=99,
                       tile_order=dataclasses.replace(ws.tile_order, group=4)), "sm_90a", sources=sources)
    body = kernel_part(g.source)
    assert "tl::setmaxnreg_dec<56>();" in body and "tl::setmaxnreg_inc<224>();" in body
    assert "tl::mbar_init(tl_empty + tl_s, 99);" in body
    assert "tl::cluster_tile<4, 2>(tl_pair," in body
    g = generate(_with(kernel, stages=2, barriers=147464), "sm_90a", sources=sources)
    body = kernel_part(g.source)
    assert "const int tl_stage = tl_it % 2;" in body and "tl_smem + 147464);" in body
    assert "tl::mbar_arrive_cluster<2>(tl_empty + (tl_it + 1) % 2)" in body


def test_the_generic_builds_registers_are_the_preprocessors_choice():
    """A record with generic_registers (an im2col load's fallback gathers rows): the build whose
    maps all encode (TL_TMA_FLAGS with bit 0) gives the producer's registers away as before, the
    generic build keeps the gatherer's; without them, one setmaxnreg each."""
    kernel, sources = _matmul()
    body = kernel_part(generate(_with(kernel, generic_registers=(128, 184)), "sm_90a", sources=sources).source)
    dec = ("#if defined(TL_TMA_FLAGS) && (TL_TMA_FLAGS & 1)  // every map encoded: the TMA copies\n"
           "      tl::setmaxnreg_dec<40>();\n"
           "#else  // the producer may gather the image's rows (no map): it keeps a gatherer's registers\n"
           "      tl::setmaxnreg_dec<128>();\n#endif\n")
    assert body.count(dec) == 1
    assert body.count("    tl::setmaxnreg_inc<232>();\n#else") == 1 and body.count("    tl::setmaxnreg_inc<184>();\n#endif") == 1
    plain = kernel_part(generate(kernel, "sm_90a", sources=sources).source)
    assert "(TL_TMA_FLAGS & 1)" not in plain and plain.count("tl::setmaxnreg_dec<40>();") == 1


def test_without_a_record_the_loop_is_the_cp_async_ring():
    kernel, sources = _matmul()
    g = generate(dataclasses.replace(kernel, warp_spec=None), "sm_90a", sources=sources)
    assert not g.tensor_maps and g.threads == 256 and "cp_async_wait" in g.source
    assert "setmaxnreg" not in kernel_part(g.source)


def test_the_interpreters_tile_walk_is_the_cs(tmp_path):
    shapes = [(32, 64, 1), (5, 19, 1), (3, 5, 2), (7, 1, 1)]
    src = (primitives(("types.cuh", "copy.cuh", "tma.cuh")) + "\n#include <cstdio>\nint main() {\n"
           "  const int shapes[4][3] = {" + ", ".join("{%d, %d, %d}" % s for s in shapes) + "};\n"
           "  for (auto& s : shapes) { const int tiles = s[0] * s[1] * s[2];\n"
           "    for (int t = 0; t < tiles; ++t) { int x, y, z; tl::persistent_tile<8>(t, s[0], s[1], x, y, z);\n"
           "      printf(\"t %d %d %d %d\\n\", t, x, y, z); }\n"
           "    for (int p = 0; p < (tiles + 1) / 2; ++p) for (unsigned r = 0; r < 2; ++r) {\n"
           "      int x, y, z; const bool share = tl::cluster_tile<8, 2>(p, s[0], s[1], tiles, r, x, y, z);\n"
           "      printf(\"c %d %u %d %d %d %d\\n\", p, r, x, y, z, (int)share); }\n  }\n  return 0;\n}\n")
    out = run_host("#include <cuda_fp16.h>\n#include <cuda_bf16.h>\n" + src, tmp_path, arch="sm_90a")
    want = []
    for tx, ty, tz in shapes:
        tiles = tx * ty * tz
        want += [f"t {t} {' '.join(map(str, persistent_tile(t, 8, tx, ty)))}" for t in range(tiles)]
        for p in range((tiles + 1) // 2):
            peers, share = cluster_tiles(p, 8, 2, (tx, ty, tz))
            want += [f"c {p} {r} {' '.join(map(str, peers[r]))} {int(share)}" for r in range(2)]
    assert out.splitlines() == want
