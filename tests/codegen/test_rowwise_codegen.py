"""std.nn's kernels generated for sm_80 and sm_90a: they compile with warnings as errors, keep
every fragment in registers (no local memory: no spills, no stack frame), and move the row
tiles as 16-byte vectors (v4 loads and stores of 32-bit words in the PTX)."""
import re
import subprocess

import pytest

from tlc.codegen import generate
from tlc.driver import check_file
from tlc.schedule import schedule
from nn_path import NN_PATH
from nvcc import ARCH_FLAGS, compile_object, nvcc

# Configurations bench/rowwise.py measures (softmax at 1024 threads, which ptxas holds to 32
# registers and spills, is measured but not promised here), and each kernel's defaults.
CONFIGS = [("softmax", dict(BN=8192, THREADS=512)), ("softmax", dict(BN=8192, THREADS=256)), ("softmax", {}),
           ("rms_norm", dict(BN=8192, THREADS=512)), ("rms_norm", {}),
           ("layer_norm", dict(BN=8192, THREADS=1024)), ("layer_norm", {}),
           ("silu_residual", {}), ("silu_residual", dict(BLOCK=2048))]


def source(kernel, consts, arch):
    r = check_file(NN_PATH)
    return generate(schedule(r.program, kernel, consts, target=arch), arch, sources=r.sources).source


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
@pytest.mark.parametrize("kernel,consts", CONFIGS)
def test_std_nn_compiles_without_local_memory(kernel, consts, arch, tmp_path):
    log = compile_object(source(kernel, consts, arch), arch, tmp_path)
    frames = re.findall(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads", log)
    assert frames and all(f == ("0", "0", "0") for f in frames), log


@pytest.mark.parametrize("kernel,consts", [("softmax", dict(BN=8192, THREADS=512)), ("rms_norm", {}),
                                           ("layer_norm", {}), ("silu_residual", {})])
def test_rows_move_as_16_byte_vectors(kernel, consts, tmp_path):
    (tmp_path / "k.cu").write_text(source(kernel, consts, "sm_90a"))
    res = nvcc([*ARCH_FLAGS["sm_90a"], "-ptx", "k.cu", "-o", "k.ptx"], tmp_path)
    assert res.returncode == 0, res.stderr[-3000:]
    ptx = (tmp_path / "k.ptx").read_text()
    assert re.search(r"ld\.global\.nc\.v4\.u32", ptx), "the row is not loaded as 16-byte vectors"
    assert re.search(r"st\.global\.v4\.u32", ptx), "the row is not stored as 16-byte vectors"
    assert ".local" not in ptx, "a fragment went to local memory"


def test_row_statistics_take_one_register_per_row():
    """A reduction's destination holds one register per row the thread touches (slots), not one
    per register of the tile: the cause of the 255 registers softmax.tl used to need."""
    from tlc.schedule.layout import Replicated

    r = check_file(NN_PATH)
    k = schedule(r.program, "softmax", dict(BM=4, BN=1024, THREADS=128))
    lay = k.buffer("row_max").layout
    assert isinstance(lay, Replicated) and lay.base.registers == 32 and lay.registers == 4
    src = source("softmax", dict(BM=4, BN=1024, THREADS=128), "sm_80")
    assert "tl::reduce_warps_to_scratch<" in src and "atomic" not in src.split("#endif  // TL_PRIMITIVES")[1]
