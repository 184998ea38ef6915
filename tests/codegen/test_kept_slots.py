"""Replicated fragments take one register per slot: tl::Kept (templates/tl/layout.cuh) and
Replicated (tlc/schedule/layout.py) agree on the slot count, the slot of every base register,
and what each slot holds; every slot holds the kept index of each of its base registers, and
exactly one replica of each kept index is canonical."""
import itertools

import pytest

from tlc.codegen import primitives
from tlc.dtypes import F16, F32
from tlc.schedule.layout import Blocked, MmaAccumulator, Replicated, blocked
from nvcc import run_host

CASES = [  # (C base type, Python base, dropped)
    ("tl::Blocked<4, 1024, 128, 8>", blocked((4, 1024), F16, 128), (1,)),   # a row is whole rounds
    ("tl::Blocked<4, 1024, 128, 8>", blocked((4, 1024), F16, 128), (0,)),
    ("tl::Blocked<16, 64, 128, 8>", blocked((16, 64), F16, 128), (1,)),     # a round is whole rows
    ("tl::Blocked<16, 64, 128, 8>", blocked((16, 64), F16, 128), (0,)),
    ("tl::Blocked<3, 40, 64, 4>", blocked((3, 40), F32, 64), (1,)),         # no grouping: one per register
    ("tl::Blocked<1, 8192, 256, 8>", Blocked((1, 8192), 256, 8), (1,)),
    ("tl::Blocked<1, 256, 32, 4>", Blocked((256,), 32, 4), (0,)),           # a 1-D tile to one value
    ("tl::MmaAcc<64, 128, 1, 4>", MmaAccumulator((64, 128), 1, 4), (1,)),
    ("tl::MmaAcc<64, 128, 2, 2>", MmaAccumulator((64, 128), 2, 2), (0,)),
    ("tl::MmaAcc<128, 64, 4, 1, true>", MmaAccumulator((128, 64), 4, 1, True), (1,)),  # wgmma's bands
    ("tl::MmaAcc<128, 64, 4, 1, true>", MmaAccumulator((128, 64), 4, 1, True), (0,)),
    ("tl::MmaAcc<64, 64, 4, 2, false, true>", MmaAccumulator((64, 64), 4, 2, False, True), (1,)),  # side by side
    ("tl::MmaAcc<64, 64, 4, 2, false, true>", MmaAccumulator((64, 64), 4, 2, False, True), (0,)),
]


def run_c(tmp_path):
    body = []
    for i, (ctype, base, dropped) in enumerate(CASES):
        keep = Replicated(base, dropped).keep
        k = f"tl::Kept<{ctype}, {keep}>"
        body.append(f'  printf("{i} regs %d\\n", {k}::REGS);')
        body.append(f"  for (int r = 0; r < {ctype}::REGS; ++r) printf(\"{i} slot %d %d\\n\", r, {k}::slot(r));")
        body.append(f"  for (int t = 0; t < {base.threads}; ++t) for (int s = 0; s < {k}::REGS; ++s) "
                    f"if ({k}::valid(t, s)) printf(\"{i} hold %d %d %d %d\\n\", t, s, {k}::col(t, s), (int){k}::canonical(t, s));")
    src = ("#include <cuda_fp16.h>\n#include <cuda_bf16.h>\n#include <cstdio>\n" + primitives() +
           "\nint main() {\n" + "\n".join(body) + "\n  return 0;\n}\n")
    out = run_host(src, tmp_path, "kept")
    got: dict = {}
    for line in out.splitlines():
        i, what, *vals = line.split()
        got.setdefault(int(i), {"slot": {}, "hold": {}})
        if what == "regs":
            got[int(i)]["regs"] = int(vals[0])
        elif what == "slot":
            got[int(i)]["slot"][int(vals[0])] = int(vals[1])
        else:
            t, s, k, canon = map(int, vals)
            got[int(i)]["hold"][(t, s)] = (k, canon)
    return got


@pytest.fixture(scope="module")
def c_side(tmp_path_factory):
    return run_c(tmp_path_factory.mktemp("kept"))


@pytest.mark.parametrize("case", range(len(CASES)))
def test_kept_slots_agree_and_hold_the_kept_index(case, c_side):
    ctype, base, dropped = CASES[case]
    rep = Replicated(base, dropped)
    got = c_side[case]
    assert got["regs"] == rep.registers
    assert got["slot"] == {r: rep.slot(r) for r in range(base.registers)}
    kept_dim = 0 if len(base.shape) == 1 else rep.keep
    canonical = {}
    for idx in itertools.product(*(range(d) for d in base.shape)):
        t, r = base.owner(idx)
        k, _ = got["hold"][(t, rep.slot(r))]
        assert k == (0 if len(base.shape) == 1 else idx[kept_dim]), (idx, t, r)
    for (t, s), (k, canon) in got["hold"].items():
        if canon:
            assert k not in canonical, "one canonical replica per kept index"
            canonical[k] = (t, s)
    assert sorted(canonical) == list(range(rep.shape[0] if rep.shape else 1))
    if ctype.startswith("tl::Blocked<3, 40"):
        assert rep.registers == base.registers  # no grouping: the fallback
    elif ctype.startswith("tl::Blocked<4, 1024") and dropped == (1,):
        assert rep.registers == 4 and base.registers == 32
