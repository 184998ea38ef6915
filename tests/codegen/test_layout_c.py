"""The C layouts (templates/tl/layout.cuh) agree with the Python ones (tlc/schedule/layout.py)
element for element: a host program prints every (thread, register) -> (row, col)."""
import itertools

from tlc.codegen import primitives
from tlc.dtypes import F16, F32
from tlc.schedule.layout import Blocked, MmaAccumulator, Replicated, blocked, mma_accumulator
from nvcc import run_host

CASES = [
    ("tl::MmaAcc<64, 128, 1, 4>", mma_accumulator((64, 128), 128)),
    ("tl::MmaAcc<128, 128, 2, 2>", MmaAccumulator((128, 128), 2, 2)),
    ("tl::MmaAcc<32, 16, 2, 1>", MmaAccumulator((32, 16), 2, 1)),
    # wgmma with 128 rows per warpgroup: a warp's two 16-row bands 64 rows apart
    ("tl::MmaAcc<128, 128, 4, 1, true>", MmaAccumulator((128, 128), 4, 1, True)),
    ("tl::MmaAcc<256, 64, 8, 1, true>", MmaAccumulator((256, 64), 8, 1, True)),
    # wgmma with 64 rows over two warpgroups side by side (MLA's 64 x 512 output)
    ("tl::MmaAcc<64, 512, 4, 2, false, true>", MmaAccumulator((64, 512), 4, 2, False, True)),
    ("tl::MmaAcc<64, 96, 4, 3, false, true>", MmaAccumulator((64, 96), 4, 3, False, True)),
    ("tl::Blocked<4, 256, 128, 8>", blocked((4, 256), F16, 128)),
    ("tl::Blocked<3, 40, 64, 4>", blocked((3, 40), F32, 64)),
]


def test_c_and_python_layouts_agree(tmp_path):
    body = []
    for i, (ctype, lay) in enumerate(CASES):
        threads = lay.threads
        body.append(f"  for (int t = 0; t < {threads}; ++t) for (int r = 0; r < {ctype}::REGS; ++r) "
                    f"if ({ctype}::valid(t, r)) printf(\"{i} %d %d %d %d\\n\", t, r, {ctype}::row(t, r), {ctype}::col(t, r));")
    src = ("#include <cuda_fp16.h>\n#include <cuda_bf16.h>\n#include <cstdio>\n" + primitives() +
           "\nint main() {\n" + "\n".join(body) + "\n  return 0;\n}\n")
    out = run_host(src, tmp_path, "lay")
    got: dict = {}
    for line in out.splitlines():
        i, t, r, row, col = map(int, line.split())
        got.setdefault(i, {})[(t, r)] = (row, col)
    for i, (ctype, lay) in enumerate(CASES):
        shape = lay.shape
        want = {lay.owner(idx): idx for idx in itertools.product(*(range(d) for d in shape))}
        assert got[i] == want, ctype


def test_kept_layout_of_a_replicated_fragment(tmp_path):
    base = blocked((4, 64), F32, 32)
    rep = Replicated(base, (1,))
    src = ("#include <cuda_fp16.h>\n#include <cuda_bf16.h>\n#include <cstdio>\n" + primitives() +
           "\nusing B = tl::Blocked<4, 64, 32, 4>;\nusing K = tl::Kept<B, 0>;\nint main() {\n"
           "  for (int t = 0; t < 32; ++t) for (int r = 0; r < K::REGS; ++r) "
           "printf(\"%d %d %d %d\\n\", t, r, K::col(t, r), (int)K::canonical(t, r));\n  return 0;\n}\n")
    out = run_host(src, tmp_path, "k")
    canonical = {}
    for line in out.splitlines():
        t, r, kept, canon = map(int, line.split())
        assert t in rep.owners((kept,))
        if canon:
            assert kept not in canonical, "one canonical replica per element"
            canonical[kept] = (t, r)
    assert sorted(canonical) == list(range(4))


def test_swizzle_is_a_permutation_and_spreads_ldmatrix_rows(tmp_path):
    """For every row size a gemm operand can have, tl::smem_index with SWIZZLE=128 maps the tile
    onto itself one to one, keeps 16-byte chunks whole, and sends the 8 rows an ldmatrix reads
    at one column (an aligned group of 8) to 8 different 16-byte bank groups."""
    cases = [(64, 8), (32, 16), (32, 32), (16, 64), (16, 128), (8, 256)]  # (rows, cols) of f16
    body = []
    for i, (rows, cols) in enumerate(cases):
        body.append(f"  for (int r = 0; r < {rows}; ++r) for (int c = 0; c < {cols}; ++c) "
                    f"printf(\"{i} %d %d %d\\n\", r, c, tl::smem_index<half, {rows}, {cols}, 0, 128>(r, c));")
    src = ("#include <cuda_fp16.h>\n#include <cuda_bf16.h>\n#include <cstdio>\n" + primitives() +
           "\nint main() {\n" + "\n".join(body) + "\n  return 0;\n}\n")
    out = run_host(src, tmp_path, "sw")
    index: dict = {}
    for line in out.splitlines():
        i, r, c, x = map(int, line.split())
        index.setdefault(i, {})[(r, c)] = x
    for i, (rows, cols) in enumerate(cases):
        m = index[i]
        assert sorted(m.values()) == list(range(rows * cols)), (rows, cols)
        for (r, c), x in m.items():
            assert m[(r, c - c % 8)] + c % 8 == x, "a 16-byte chunk stays whole"
        for r0 in range(0, rows - 7, 8):  # ldmatrix reads rows in aligned groups of 8
            for c in range(0, cols, 8):
                groups = {(m[(r0 + k, c)] * 2 // 16) % 8 for k in range(8)}
                assert len(groups) == 8, (rows, cols, r0, c)
