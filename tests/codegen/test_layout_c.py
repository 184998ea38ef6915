"""The C layouts (templates/tl/layout.cuh) agree with the Python ones (tlc/schedule/layout.py)
element for element: a host program prints every (thread, register) -> (row, col)."""
import itertools

from tlc.codegen import primitives
from tlc.dtypes import F16, F32
from tlc.schedule.layout import Blocked, MmaAccumulator, Replicated, blocked, mma_accumulator
from nvcc import nvcc

CASES = [
    ("tl::MmaAcc<64, 128, 1, 4>", mma_accumulator((64, 128), 128)),
    ("tl::MmaAcc<128, 128, 2, 2>", MmaAccumulator((128, 128), 2, 2)),
    ("tl::MmaAcc<32, 16, 2, 1>", MmaAccumulator((32, 16), 2, 1)),
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
    (tmp_path / "lay.cu").write_text(src)
    res = nvcc(["-arch=sm_80", "lay.cu", "-o", "lay"], tmp_path)
    assert res.returncode == 0, res.stderr[-3000:]
    import subprocess
    out = subprocess.run([str(tmp_path / "lay")], capture_output=True, text=True, check=True).stdout
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
    (tmp_path / "k.cu").write_text(src)
    res = nvcc(["-arch=sm_80", "k.cu", "-o", "k"], tmp_path)
    assert res.returncode == 0, res.stderr[-3000:]
    import subprocess
    out = subprocess.run([str(tmp_path / "k")], capture_output=True, text=True, check=True).stdout
    canonical = {}
    for line in out.splitlines():
        t, r, kept, canon = map(int, line.split())
        assert t in rep.owners((kept,))
        if canon:
            assert kept not in canonical, "one canonical replica per element"
            canonical[kept] = (t, r)
    assert sorted(canonical) == list(range(4))
