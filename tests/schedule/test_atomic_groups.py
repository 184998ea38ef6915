"""A warp's constant atomic adds at one data-chosen shared address added once
(schedule/atomic_groups.py, Atomic.grouped): std.moe's expert_histogram's bins; what keeps plain
atomics; how `--emit ir` and the C show it, and the SASS (MATCH.ANY, then one ATOMS a group)."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import tlc
from tlc.codegen import generate_file
from tlc.ir.printer import print_kernel
from tlc.schedule import atomic_groups, schedule

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "codegen"))
from kit import program, scheduled  # noqa: E402
from nvcc import cubin_sass  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


# a histogram of 64 bins in shared memory: NAME's adds into h (of dtype DT) are BODY
KERNEL = """
@kernel
def NAME(ids: i32[N], counts: DT[64]):
    with grid(cdiv(N, 256), threads=256) as bx:
        h = shared(DT[64])
        part = fragment(i32[256])
        fill(h, 0)
        copy(ids[bx * 256], part)
        for q in parallel(256):
            BODY
        for e in parallel(64):
            atomic_add(counts[e], h[e])
"""
SRC = "".join(KERNEL.replace("NAME", name).replace("DT", h).replace("BODY", body) for name, h, body in [
    ("hist", "i32", "if bx * 256 + q < N:\n                atomic_add(h[part[q] % 64], 1)"),  # a bin from data
    ("by_place", "i32", "atomic_add(h[q % 64], 1)\n            atomic_add(h[(q + 1) % 64], part[q])"),
    ("floats", "f32", "atomic_add(h[part[q] % 64], 1.0)")])


@pytest.fixture(autouse=True)
def group_atomics(monkeypatch):
    """The decision is off by default (untimed); these tests take it on."""
    monkeypatch.setattr(atomic_groups, "GROUP_ATOMICS", True)


def test_off_by_default_no_atomic_is_grouped(monkeypatch):
    monkeypatch.setattr(atomic_groups, "GROUP_ATOMICS", False)
    assert "grouped" not in print_kernel(scheduled(SRC, "hist", target="sm_90a"))


def test_a_constant_add_at_a_bin_read_from_data_is_grouped():
    k = scheduled(SRC, "hist", target="sm_90a")
    text = print_kernel(k)
    assert "atomic_add h[part[q] % 64], 1 (grouped by address in a warp)" in text
    assert "atomic_add counts[e], h[e]\n" in text + "\n"  # global, at the loop's own index
    assert ("note: atomic adds grouped by address in a warp (h): the lanes at one address add once, the value "
            "times their count") in text


@pytest.mark.parametrize("name", ["by_place", "floats"])
def test_bins_at_the_loops_index_values_from_data_and_floats_stay_plain(name):
    k = scheduled(SRC, name, target="sm_90a")
    assert "grouped" not in print_kernel(k)


def test_expert_histogram_groups_its_bins():
    moe = tlc.load(str(ROOT / "stdlib" / "moe.tl"), target="cpu")
    k = moe.kernels["expert_histogram"].scheduled({"I": "i64"}, "sm_90a")
    assert print_kernel(k).count("(grouped by address in a warp)") == 1


def test_grouped_counts_on_the_cpu_target():
    ids = np.random.default_rng(0).choice(64, 1000, p=np.r_[[0.5], np.full(63, 0.5 / 63)]).astype(np.int32)
    counts = np.zeros(64, np.int32)
    tlc.compile_source(SRC, target="cpu", path="hist.tl").hist(ids, counts)
    assert np.array_equal(counts, np.bincount(ids, minlength=64))


@pytest.mark.nvcc
@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_the_grouped_add_matches_the_shared_address(arch, tmp_path):
    prog = program(SRC)
    k = schedule(prog, "hist", {}, target=arch)
    src = generate_file([k], arch, sources=prog.sources, source_name="s.tl")
    assert "tl::atomic_add_grouped(&h[" in src
    sass, _ = cubin_sass(src, arch, tmp_path)
    assert "MATCH.ANY " in sass and "MATCH.ANY.U64" not in sass and "POPC" in sass
