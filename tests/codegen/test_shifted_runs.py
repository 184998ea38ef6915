"""Copies into fragments whose column origin adds a run-time size (std.data.pad's `c0 - left`,
split's `Na + c0`) take tl::copy_g2f's shifted runs: a tile that starts between two vectors of
aligned rows is read as the vectors its runs overlap (layout.cuh), where it was read element by
element.  Other copies never have the path: compiled into a kernel, it left NVVM making none of
its loads ld.global.nc."""
import re

import pytest

from tlc import package_data
from tlc.runner import build
from nvcc import ARCH_FLAGS, nvcc

DATA = str(package_data.stdlib().joinpath("data.tl"))


def _copies(kernel: str) -> list[str]:
    source, _ = build(DATA, kernels=(kernel,), defines=("T=f16",), arch="sm_90a")
    # a gather's copy names SHIFTED (false or true) before its KEEP (schedule/l2_policy.py)
    return [s.replace(", false", "") for s in re.findall(r"tl::copy_g2f<\w+(, true|, false)?(?:, true)?>", source)]


def test_origins_offset_by_a_run_time_size_take_the_shifted_runs():
    assert _copies("pad") == [", true"]  # x[r0 - top, c0 - left]
    assert _copies("split") == ["", ", true"]  # x[r0, c0], then x[r0, Na + c0]


@pytest.mark.parametrize("kernel", ["tril", "concat", "index_select"])
def test_origins_of_block_indices_do_not(kernel):
    assert set(_copies(kernel)) == {""}


@pytest.mark.nvcc
def test_the_shifted_runs_load_16_byte_vectors(tmp_path):
    source, _ = build(DATA, kernels=("pad",), defines=("T=f16",), arch="sm_90a")
    (tmp_path / "k.cu").write_text(source)
    res = nvcc([*ARCH_FLAGS["sm_90a"], "-ptx", "k.cu", "-o", "k.ptx"], tmp_path)
    assert res.returncode == 0, res.stderr[-3000:]
    ptx = (tmp_path / "k.ptx").read_text()
    # the aligned path's two and the shifted path's two of each of two runs
    assert len(re.findall(r"ld\.global(\.nc)?\.v4\.u32", ptx)) == 6, ptx
