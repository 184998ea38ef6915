"""codegen/copies.py's STMATRIX (off until timed): a copy of a 16-bit fragment in an mma
accumulator layout into shared memory by stmatrix (tl::copy_f2s_stmatrix, sm_90a), four 8x8
matrices an instruction.  A host program gives every lane's row address
(tl::stmatrix_row) and every (thread, register)'s place as copy_f2s stores it; stmatrix's
semantics (PTX: lane l addresses row l % 8 of matrix l / 8; register m of lane l holds elements
2 (l % 4) and 2 (l % 4) + 1 of row l / 4 of matrix m) must put every element where copy_f2s
does, for the layouts and shared tiles the rule takes.  The C the rule writes, when it does not,
and the SASS of the one-grid backward's dS store."""
import re

import pytest

from tlc.codegen import primitives
from nvcc import run_host

# (the fragment's layout, ROWS, COLS, PAD, SWIZZLE of the shared tile)
CASES = [
    ("tl::MmaAcc<128, 64, 8, 1>", 128, 64, 0, 128),     # bench/attention_bwd_fused.tl's dS.T
    ("tl::MmaAcc<128, 128, 8, 1>", 128, 128, 0, 128),   # rows of two 128-byte segments
    ("tl::MmaAcc<128, 64, 4, 1, true>", 128, 64, 0, 128),  # wgmma's bands: 64 rows apart
    ("tl::MmaAcc<64, 128, 4, 2, false, true>", 64, 128, 0, 128),  # warpgroups side by side
    ("tl::MmaAcc<64, 64, 2, 2>", 64, 64, 8, 0),         # unswizzled, padded rows
]


def test_stmatrix_puts_every_element_where_copy_f2s_does(tmp_path):
    body = []
    for i, (L, rows, cols, pad, sw) in enumerate(CASES):
        threads = f"({rows * cols} / {L}::REGS)"
        body.append(f"  for (int t = 0; t < {threads}; ++t) for (int r = 0; r < {L}::REGS; ++r) "
                    f"printf(\"e {i} %d %d %d\\n\", t, r, tl::smem_index<half, {rows}, {cols}, {pad}, {sw}>"
                    f"({L}::row(t, r), {L}::col(t, r)));")
        body.append(f"  for (int t = 0; t < {threads}; ++t) for (int r0 = 0; r0 < {L}::REGS; r0 += 8) "
                    f"printf(\"a {i} %d %d %d\\n\", t, r0, "
                    f"tl::stmatrix_row<{L}, half, {rows}, {cols}, {pad}, {sw}>(t, r0));")
    src = ("#include <cuda_fp16.h>\n#include <cuda_bf16.h>\n#include <cstdio>\n" + primitives() +
           "\nint main() {\n" + "\n".join(body) + "\n  return 0;\n}\n")
    out = run_host(src, tmp_path, "stsm")
    place, row_of = {}, {}
    for line in out.splitlines():
        kind, i, t, r, x = line.split()
        (place if kind == "e" else row_of)[(int(i), int(t), int(r))] = int(x)
    for i, (L, rows, cols, pad, sw) in enumerate(CASES):
        threads = len({t for (j, t, _) in place if j == i})
        regs = len({r for (j, _, r) in place if j == i})
        written = {}
        for warp in range(threads // 32):
            for r0 in range(0, regs, 8):
                for m in range(4):  # matrix m: row k at the address lane 8m + k gives
                    for k in range(8):
                        start = row_of[(i, warp * 32 + 8 * m + k, r0)]
                        for q in range(4):  # lane 4k + q: its register pair r0 + 2m holds columns 2q, 2q + 1
                            for e in range(2):
                                written[(warp * 32 + 4 * k + q, r0 + 2 * m + e)] = start + 2 * q + e
        want = {(t, r): x for (j, t, r), x in place.items() if j == i}
        assert written == want, L
        assert sorted(want.values()) == sorted(set(want.values())), L  # (one element a place)


def test_the_rule_and_its_c(tmp_path, monkeypatch):
    from pathlib import Path

    from tlc.codegen import copies
    from tlc.runner import build

    fused = str(Path(__file__).resolve().parents[2] / "bench" / "attention_bwd_fused.tl")
    defines = ("D=128", "BLOCK_MASK=True")
    call = "tl::copy_f2s_stmatrix<tl_"  # (the template itself is in every source)
    assert call not in build(fused, kernels=("flash_bwd_fused",), defines=defines, arch="sm_90a")[0]
    monkeypatch.setattr(copies, "STMATRIX", True)
    on = build(fused, kernels=("flash_bwd_fused",), defines=defines, arch="sm_90a")[0]
    assert "tl::copy_f2s_stmatrix<tl_flash_bwd_fused_grid1_layout_0, half, 128, 64, 0, 128>(" in on
    # sm_80 has no stmatrix: copy_f2s there
    assert call not in build(fused, kernels=("flash_bwd_fused",), defines=defines, arch="sm_80")[0]


@pytest.mark.slow  # nvcc builds of an off-by-default switch (untimed): CI's slow run
@pytest.mark.nvcc
def test_the_one_grid_backwards_ds_store_is_four_stsm(tmp_path, monkeypatch):
    from pathlib import Path

    from nvcc import cubin_sass
    from tlc.codegen import copies, half_pairs
    from tlc.runner import build
    from tlc.schedule import scale_d_clears

    monkeypatch.setattr(copies, "STMATRIX", True)
    monkeypatch.setattr(half_pairs, "CAST_PAIRS", True)
    monkeypatch.setattr(scale_d_clears, "RING_SCALE_D_CLEARS", "all")
    fused = str(Path(__file__).resolve().parents[2] / "bench" / "attention_bwd_fused.tl")
    source, _ = build(fused, kernels=("flash_bwd_fused",), defines=("D=128", "BLOCK_MASK=True"), arch="sm_90a")
    sass, log = cubin_sass(source, "sm_90a", tmp_path, "fused")
    grid = dict(zip(*[iter(re.split(r"Function : (\w+)", sass)[1:])] * 2))["flash_bwd_fused_grid1"]
    assert grid.count("STSM.16.M88.4") == 4 and " 0 bytes spill stores" in log and "C75" not in log
