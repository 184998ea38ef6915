"""codegen/store_pairs.py: a parallel loop storing an mma accumulator's elements to a global
tensor under a row's guard (std.gemm's grouped kernels: a tile stops at its group's last row)
stores each register pair as one store of both where the pair lies inside and is aligned, one
by one otherwise; behind STORE_PAIRS, on since the H200 timed it (1.32x at the grouped f8 down GEMM).  The generated code, the
loops it refuses, nvcc's SASS (32-bit stores, no local memory) and tl::store_pair run on the
host over every case of its test."""
import re
import sys
from pathlib import Path

import pytest

from nvcc import cubin_sass, run_host

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "stdlib"))  # the shared kits
from stdlib_kit import GEMM_PATH  # noqa: E402

PAIR = "tl::store_pair(&C["


def _source(monkeypatch, on: bool, name: str, arch: str = "sm_90a", path: str = GEMM_PATH, **consts) -> str:
    import tlc.codegen.store_pairs as sp
    from tlc.codegen import generate
    from tlc.driver import check_file
    from tlc.schedule import schedule

    monkeypatch.setattr(sp, "STORE_PAIRS", on)
    r = check_file(path)
    kernel = schedule(r.program, name, consts, target=arch)
    return generate(kernel, arch, sources=r.sources, line_directives=False).source


def test_on_by_default():
    import tlc.codegen.store_pairs as sp
    assert sp.STORE_PAIRS is True


@pytest.mark.parametrize("arch", ["sm_90a", "sm_80"])
@pytest.mark.parametrize("name, out", [("matmul_grouped", "half"), ("matmul_grouped_f8_blockscaled", "__nv_bfloat16")])
def test_the_grouped_epilogues_store_pairs(monkeypatch, arch, name, out):
    src = _source(monkeypatch, True, name, arch)
    assert src.count(PAIR) == 1
    loop = src[src.index("// two registers at a time: one store of both"):]
    loop = loop[:loop.index(PAIR)]
    assert "tl_r += 2" in loop and "if (((row0 + i) < row_end)) {" in loop
    assert f"tl::cvt<{out}>(acc[tl_r]), tl::cvt<{out}>(acc[tl_r + 1]), tl_in[0], tl_in[1]);" in src
    assert PAIR not in _source(monkeypatch, False, name, arch)


KERNEL = """
@kernel
def NAME(A: f16[M, K], B: f16[N, K], C: f16[ROWS, COLS], lim: i32):
    with grid(cdiv(N, 64), cdiv(M, 64), threads=128) as (bx, by):
        As = shared(f16[64, 32])
        Bs = shared(f16[64, 32])
        acc = fragment(f32[64, 64])
        clear(acc)
        for k in pipelined(cdiv(K, 32), stages=2):
            copy(A[by * 64, k * 32], As)
            copy(B[bx * 64, k * 32], Bs)
            gemm(As, Bs, acc, trans_b=True)
        for i, j in parallel(64, 64):
            if GUARD:
                STORE = f16(acc[i, j])
"""
ROWS_AT_I = "C[by * 64 + i, bx * 64 + j]"
# (name, the guard, the store's element, C's shape): the row guard of the grouped kernels; a
# guard that reads the column; C stored transposed (the column variable in the first index)
KERNELS = "".join(KERNEL.replace("NAME", n).replace("GUARD", g).replace("STORE", st).replace("ROWS, COLS", shape)
                  for n, g, st, shape in [("guarded_rows", "by * 64 + i < lim", ROWS_AT_I, "M, N"),
                                          ("guard_reads_j", "j < lim", ROWS_AT_I, "M, N"),
                                          ("transposed", "by * 64 + i < lim", "C[bx * 64 + j, by * 64 + i]", "N, M")])


@pytest.mark.parametrize("name, paired", [("guarded_rows", True), ("guard_reads_j", False), ("transposed", False)])
def test_which_loops_it_takes(tmp_path, monkeypatch, name, paired):
    # a guard that reads the column, or a column index that is not the tensor's last: element by element
    path = tmp_path / "pairs.tl"
    path.write_text(KERNELS)
    src = _source(monkeypatch, True, name, "sm_80", str(path))
    assert ("tl::store_pair(&C[" in src) == paired


@pytest.mark.slow  # nvcc builds of an off-by-default switch (untimed): CI's slow run
@pytest.mark.parametrize("name", ["matmul_grouped", "matmul_grouped_f8_blockscaled"])
def test_the_sass_stores_pairs_without_local_memory(tmp_path, monkeypatch, name):
    # sm_90a, 128 x 128 tiles: 32 four-byte stores a thread where the pairs lie inside (and the 64
    # two-byte stores of the other path); element by element 64 two-byte stores only
    on, log = cubin_sass(_source(monkeypatch, True, name), "sm_90a", tmp_path, "on")
    off, _ = cubin_sass(_source(monkeypatch, False, name), "sm_90a", tmp_path, "off")
    assert "0 bytes spill stores" in log, log
    assert len(re.findall(r"\bSTG\.E ", on)) == 32 and not re.findall(r"\bSTG\.E ", off)
    assert len(re.findall(r"\bSTG\.E\.U16\b", off)) == 64


HOST = r"""
#include <cstdio>
#include <cstring>
template <typename U>
int check(const char* name) {
  int bad = 0;
  for (int off = 0; off < 4; ++off)
    for (int in = 0; in < 4; ++in) {
      alignas(16) U buf[8];
      U seven, a, b;
      std::memset(&seven, 7, sizeof(U)); std::memset(&a, 1, sizeof(U)); std::memset(&b, 2, sizeof(U));
      for (int e = 0; e < 8; ++e) buf[e] = seven;
      tl::store_pair(buf + off, a, b, (in & 1) != 0, (in & 2) != 0);
      for (int e = 0; e < 8; ++e) {
        const U want = e == off && (in & 1) ? a : e == off + 1 && (in & 2) ? b : seven;
        if (std::memcmp(&buf[e], &want, sizeof(U)) != 0) ++bad;
      }
    }
  std::printf("%s %d\n", name, bad);
  return bad;
}
int main() {
  return check<unsigned short>("u16") + check<float>("f32") + check<__nv_bfloat16>("bf16") + check<half>("f16");
}
"""


def test_store_pair_writes_what_the_element_stores_write(tmp_path, monkeypatch):
    # every offset (aligned to the pair or not) and both elements in or out of the tensor
    src = _source(monkeypatch, True, "matmul_grouped", "sm_80")
    primitives = src[:src.index("#endif  // TL_PRIMITIVES")] + "#endif  // TL_PRIMITIVES\n"
    out = run_host(primitives + HOST, tmp_path, "pairs").split()
    assert out == ["u16", "0", "f32", "0", "bf16", "0", "f16", "0"], out
