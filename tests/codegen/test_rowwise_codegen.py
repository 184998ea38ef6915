"""std.nn's kernels generated for sm_80 and sm_90a: they compile with warnings as errors, keep
every fragment in registers (no local memory: no spills, no stack frame), and move the row
tiles as 16-byte vectors (v4 loads and stores of 32-bit words in the PTX)."""
import re

import pytest

from tlc.codegen import generate
from tlc.driver import check_file
from tlc.schedule import schedule
from nn_path import NN_PATH
from nvcc import ARCH_FLAGS, compile_device, compile_object, cubin_sass, nvcc


# Configurations bench/rowwise.py sweeps, and each kernel's defaults, for both targets.  Softmax
# at 1024 threads is measured but not promised here.
CONFIGS = [("softmax", dict(BN=8192, THREADS=512)), ("softmax", {}), ("softmax", dict(BM=2, BN=8192, THREADS=512)),
           ("softmax", dict(BN=8192, THREADS=256)), ("softmax", dict(BN=8192, THREADS=128)),
           ("rms_norm", dict(BN=8192, THREADS=128)), ("layer_norm", dict(BN=8192, THREADS=128)),
           ("rms_norm", dict(BN=8192, THREADS=256)), ("rms_norm", dict(BN=8192, THREADS=512)),
           ("rms_norm", dict(BN=8192, THREADS=1024)), ("rms_norm", {}),
           ("layer_norm", dict(BN=8192, THREADS=512)), ("layer_norm", dict(BN=8192, THREADS=1024)), ("layer_norm", {}),
           ("silu_residual", {}), ("silu_residual", dict(BLOCK=2048)), ("silu_residual", dict(BLOCK=8192, THREADS=512))]
# softmax's and layer_norm's defaults for sm_90a in the default run; rms_norm (layer_norm's row
# code) and silu_residual's, the swept configurations and sm_80 (the same row code) under -m slow
CASES = [pytest.param(k, c, arch, marks=[pytest.mark.slow] if c or arch == "sm_80" or k in ("rms_norm", "silu_residual")
                      else []) for k, c in CONFIGS for arch in ("sm_80", "sm_90a")]


def source(kernel, consts, arch):
    r = check_file(NN_PATH)
    return generate(schedule(r.program, kernel, consts, target=arch), arch, sources=r.sources).source


@pytest.mark.parametrize("kernel,consts,arch", CASES)
def test_std_nn_compiles_without_local_memory(kernel, consts, arch, tmp_path):
    log = compile_device(source(kernel, consts, arch), arch, tmp_path)
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
    assert re.search(r"st\.global\.v4\.(u32|b32)", ptx), "the row is not stored as 16-byte vectors"
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


def test_register_kernels_ask_for_the_blocks_their_fragments_leave_room_for():
    """occupancy.py: softmax's fragments take 16 + 4 registers a thread at 512 threads; with 32
    of overhead that is 56, two blocks per SM.  A gemm kernel keeps ptxas's choice."""
    from tlc.codegen.occupancy import fragment_registers, min_blocks

    r = check_file(NN_PATH)
    k = schedule(r.program, "softmax", dict(BN=8192, THREADS=512), target="sm_90a")
    assert fragment_registers(k) == 16 + 4 and min_blocks(k, 512) == 2
    assert "__launch_bounds__(512, 2)" in source("softmax", dict(BN=8192, THREADS=512), "sm_90a")
    ln = schedule(r.program, "layer_norm", dict(BN=8192, THREADS=512), target="sm_90a")
    # the row in f16 (8), its f32 scratch (16), weights in f16 (8 each), four row statistics
    assert fragment_registers(ln) == 8 + 16 + 8 + 8 + 4 and min_blocks(ln, 512) == 1
    ew = schedule(r.program, "silu_residual", dict(BLOCK=256, THREADS=32), target="sm_90a")
    assert min_blocks(ew, 32) == 32  # never above what ptxas accepts


def test_a_byte_fragment_takes_a_register_an_element():
    """std.elementwise's logical_and of bool: three fragments of 16 bools a thread (one run),
    each bool in a register of its own (at two runs, 32 bools counted four to a register asked
    for 9 blocks, 56 registers, and spilled 162 bytes a thread)."""
    import tlc
    from tlc.codegen.occupancy import fragment_registers, min_blocks

    k = tlc.load("std.elementwise", target="cpu").logical_and.program({}, "sm_90a").launches[0].kernel
    assert fragment_registers(k) == 3 * 16 and min_blocks(k, 128) == 6
    g = check_file("examples/gemm.tl")
    gk = schedule(g.program, "matmul", {}, target="sm_90a")
    assert min_blocks(gk, gk.threads) is None


def test_a_thread_issues_all_its_row_loads_before_converting_any(tmp_path):
    """copy_g2f: the 16-byte loads of a thread's runs come one after another in the machine
    code, before the first f16 -> f32 conversion (so all of them are in flight at once)."""
    sass, _ = cubin_sass(source("softmax", dict(BN=8192, THREADS=512), "sm_90a"), "sm_90a", tmp_path)
    ops = [m.group(1) for m in re.finditer(r"\b(LDG\.E\.128\S*|HADD2\.F32)\b", sass)]
    first = ops.index("HADD2.F32")
    assert ops[:first] and all(o.startswith("LDG.E.128") for o in ops[:first]) and len(ops[:first]) >= 2, ops[:8]


@pytest.mark.slow  # three full nvcc builds (19 s of the default run); the std.nn builds above check spills too
@pytest.mark.parametrize("kernel, blocks", [("softmax", 4), ("rms_norm", 3), ("layer_norm", 3)])
def test_blocks_requested_per_sm_fit_without_spills(kernel, blocks, tmp_path):
    """BLOCKS (grid's blocks_per_sm) at the counts bench/rowwise.py times: ptxas fits the row
    in the registers that leaves (64-80 a thread) without local memory."""
    src = source(kernel, dict(BN=8192, THREADS=256, BLOCKS=blocks), "sm_90a")
    assert f"__launch_bounds__(256, {blocks})" in src
    log = compile_object(src, "sm_90a", tmp_path)
    assert re.search(r"\b0 bytes spill stores, 0 bytes spill loads", log), log
