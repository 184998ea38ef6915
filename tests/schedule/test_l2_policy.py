"""A gather's copies ask the L2 to keep their rows (schedule/l2_policy.py, Copy.keep_l2): the copy
whose region an index chose (std.moe's moe_permute: x[sorted_ids[p] // topk, c0]) loads with an
evict_last policy; copies at offsets of the block's own place do not; how `--emit ir` and the
C show it, and that nvcc takes it."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

import tlc
from tlc.codegen import generate_file
from tlc.ir.printer import print_kernel
from tlc.schedule import l2_policy, schedule

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "codegen"))
from kit import program, scheduled  # noqa: E402
from nvcc import cubin_sass  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


# rows: a gather (its row from idx, through two scalars); plain: copies at the block's own rows
SRC = """
@kernel
def rows(x: f16[M, N], idx: i32[R], y: f16[R, N]):
    with grid(R, threads=128) as bx:
        t = fragment(f16[1024])
        r = idx[bx]
        s = r * 2 // 2
        copy(x[s, 0], t)
        copy(t, y[bx, 0])

@kernel
def plain(x: f16[M, N], y: f16[M, N]):
    with grid(M, threads=128) as bx:
        t = fragment(f16[1024])
        for k in range(STEPS):
            copy(x[bx, k * 1024], t)
            copy(t, y[bx, k * 1024])
"""


def test_on_by_default_and_off_no_copy_is_marked(monkeypatch):
    """On since the H200 timed it (session 28: moe_permute 1.04x, embedding 1.02x)."""
    assert l2_policy.KEEP_GATHERED_ROWS is True
    assert "evict_last" in print_kernel(scheduled(SRC.replace("STEPS", "1"), "rows", target="sm_90a"))
    monkeypatch.setattr(l2_policy, "KEEP_GATHERED_ROWS", False)
    assert "evict_last" not in print_kernel(scheduled(SRC.replace("STEPS", "1"), "rows", target="sm_90a"))


def test_a_copy_at_an_index_read_from_a_tensor_keeps_its_rows():
    k = scheduled(SRC.replace("STEPS", "1"), "rows", target="sm_90a")
    text = print_kernel(k)
    # through two scalars (r from idx, s from r): the copy in, not the copy out
    assert "copy x[s, 0]<1, 1024> -> t (L2 evict_last)" in text
    assert "copy t -> y[bx, 0]<1, 1024>\n" in text + "\n"
    assert ("note: L2 evict_last on the gathered tiles (x -> t): their rows are chosen by an index, so other "
            "blocks may read them again") in text


@pytest.mark.parametrize("steps", [1, 4])
def test_copies_at_the_blocks_own_place_keep_the_plain_loads(steps):
    assert "evict_last" not in print_kernel(scheduled(SRC.replace("STEPS", str(steps)), "plain", target="sm_90a"))


@pytest.mark.parametrize("module,kernel", [("moe", "moe_permute"), ("data", "index_select")])
def test_std_gathers_keep_their_picked_rows(module, kernel):
    # moe_permute's x[sorted_ids[p] // topk, c0], index_select's x[a, idx[k], c0]
    k = tlc.load(str(ROOT / "stdlib" / f"{module}.tl"), target="cpu").kernels[kernel].scheduled({"T": "f16"}, "sm_90a")
    text = print_kernel(k)
    assert "-> t (L2 evict_last)" in text and text.count("evict_last") == 2  # the copy and the note


@pytest.mark.nvcc
@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_the_kept_loads_are_ld_global_nc_with_an_evict_last_policy(arch, tmp_path):
    prog = program(SRC.replace("STEPS", "1"))
    k = schedule(prog, "rows", {}, target=arch)
    src = generate_file([k], arch, sources=prog.sources, source_name="s.tl")
    assert "tl::copy_g2f<tl_rows_layout_0, false, true>(t, x, " in src
    sass, log = cubin_sass(src, arch, tmp_path)
    assert "spill" not in log.replace("0 bytes spill", "")
    # the policy rides in a load's descriptor (a uniform register pair): every vector load of x
    # carries one, which the plain load of the index does not share
    def desc(line):
        return line.split("desc[")[1].split("]")[0] if "desc[" in line else None
    lines = sass.splitlines()
    vectors = {desc(line) for line in lines if "LDG.E.128" in line}
    index = {desc(line) for line in lines if "LDG.E.CONSTANT " in line or "LDG.E " in line}
    assert vectors and None not in vectors and not vectors & index, (vectors, index)
