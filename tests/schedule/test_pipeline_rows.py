"""schedule/pipeline_rows.py: a row kernel with too few rows in flight an SM walks its rows with
persistent blocks, the next row's copies one row ahead through a cp.async ring."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tlc import ir
from tlc.codegen import generate
from tlc.interp import run_kernel
from tlc.ir import print_kernel
from tlc.ir.walk import statements

from kit import scheduled

PLAIN = Path(__file__).resolve().parents[2] / "bench" / "plain"
NOTE = ("rows pipelined (pipeline_rows.py): persistent blocks, as many as fit at once, walk the rows "
        "r = tl_block + tl_row_step * grid_blocks(); the row copies from x run one row ahead through a "
        "2-stage cp.async ring; the copies from w, b read no row and are staged once per block")
IN_PLACE = "; weight, bias are read from their staged copy where read, not copied into registers"


def plain(name: str, target: str = "sm_90a", constants=None) -> ir.Kernel:
    return scheduled((PLAIN / f"{name}.tl").read_text(), name, constants, target=target)


@pytest.mark.parametrize("target", ["sm_80", "sm_90a"])
def test_the_plain_layer_norm_walks_its_rows_through_a_ring(target):
    """3 blocks an SM of 16 KB rows (48 KB in flight, under IN_FLIGHT_BYTES) as written"""
    k = plain("layer_norm", target)
    assert k.launch_fill and NOTE + IN_PLACE in k.notes
    text = print_kernel(k)
    assert "grid (tl_block) in (M) threads=256" in text
    assert "shared row_ring: f16[1, 8192]" in text and "stages=2" in text
    assert "  copy w[0]<8192> -> weight_staged\n  copy b[0]<8192> -> bias_staged\n" in text
    assert "for tl_row_step in pipelined(0, (M - tl_block + grid_blocks() - 1) // grid_blocks(), 1, stages=2):\n" \
           "    copy x[tl_block + tl_row_step * grid_blocks(), 0]<1, 8192> -> row_ring\n" \
           "    let r: i32 = tl_block + tl_row_step * grid_blocks()\n" in text
    # the staged weights are read where they are read, from shared memory, not held in registers
    assert k.buffer("weight") is None and k.buffer("bias") is None
    assert "* f32(weight_staged[j]) + f32(bias_staged[j]))\n" in text
    # and the result is stored a run at a time as the last loop computes it (fold_stores.py)
    assert "    copy row -> y[r, 0]<1, 8192>  # folded into the loop above" in text
    # the row is still held in 16 bits, its centring recomputed where read (recompute.py)
    assert k.buffer("row").dtype.name == "f16"


@pytest.mark.parametrize("name", ["softmax", "rms_norm"])
def test_rows_already_in_flight_enough_are_left_as_written(name):
    """4 blocks an SM of 16 KB rows: 64 KB in flight, as the copy bandwidth needs"""
    k = plain(name)
    assert not k.launch_fill and not any(n.startswith("rows pipelined") for n in k.notes)
    assert "blocks per SM: 4" in " ".join(k.notes)


@pytest.mark.parametrize("bn", [512, 4096])
def test_small_rows_are_left_as_written(bn):
    """rows of 1 and 8 KB: MIN_ROW_BYTES"""
    k = plain("layer_norm", constants={"BN": bn})
    assert not k.launch_fill


@pytest.mark.parametrize("name", ["column_sums", "transpose", "saxpy", "bias_relu", "gemm"])
def test_other_plain_kernels_are_left_as_written(name):
    src = (PLAIN / f"{name}.tl").read_text()
    kernel = "gemm_f32" if name == "gemm" else name
    assert not scheduled(src, kernel, target="sm_90a").launch_fill


def test_the_cpu_target_is_left_as_written():
    assert not plain("layer_norm", "cpu").launch_fill


def test_the_pipelined_layer_norm_runs_on_the_interpreter():
    """every block of the grid runs there, so each walks one row: the same values as written"""
    k = plain("layer_norm")
    rng = np.random.default_rng(0)
    M, N = 5, 300
    x = (rng.standard_normal((M, N)) + 3).astype(np.float16)
    w, b = rng.standard_normal(N).astype(np.float16), rng.standard_normal(N).astype(np.float16)
    y = np.full((M, N), np.nan, np.float16)
    run_kernel(k, {"x": x, "w": w, "b": b, "y": y})
    xf = x.astype(np.float32)
    mean = xf.mean(axis=1, keepdims=True)
    want = (xf - mean) / np.sqrt(((xf - mean) ** 2).mean(axis=1, keepdims=True) + 1e-5) * w + b
    assert np.abs(y.astype(np.float32) - want).max() < 4e-3


def test_the_generated_kernel_walks_by_the_blocks_launched():
    src = generate(plain("layer_norm"), "sm_90a").source
    assert "static_cast<int>(gridDim.x)" in src
    assert "cudaOccupancyMaxActiveBlocksPerMultiprocessor(&tl_per_sm, ::layer_norm, 256, " in src
    assert "::layer_norm<<<tl_blocks, 256," in src


KERNELS = """
@kernel
def two_dims(x: f32[M, N], y: f32[M, N], BN: const = 4096):
    with grid(M, 1, threads=256) as (r, c):
        row = fragment(f32[1, BN])
        copy(x[r, 0], row)
        copy(row, y[r, 0])

@kernel
def with_shared(x: f32[M, N], y: f32[M, N], BN: const = 4096):
    with grid(M, threads=256) as r:
        s = shared(f32[1, BN])
        row = fragment(f32[1, BN])
        copy(x[r, 0], s)
        copy(s, row)
        copy(row, y[r, 0])

@kernel
def origin_from_data(x: f32[M, N], y: f32[M, N], k: i32[M], BN: const = 4096):
    with grid(M, threads=256) as r:
        row = fragment(f32[1, BN])
        copy(x[k[r], 0], row)
        copy(row, y[r, 0])

@kernel
def plain_rows(x: f32[M, N], y: f32[M, N], BN: const = 4096):
    with grid(M, threads=256) as r:
        row = fragment(f32[1, BN])
        copy(x[r, 0], row)
        copy(row, y[r, 0])
"""


@pytest.mark.parametrize("name", ["two_dims", "with_shared", "origin_from_data"])
def test_kernels_outside_the_pattern_are_left_as_written(name):
    """two grid dimensions; a shared buffer of the author's; a row chosen by data read in the
    block (its copy cannot be issued a row ahead from the block index alone)"""
    assert not scheduled(KERNELS, name, target="sm_90a").launch_fill


def test_rows_enough_in_flight_are_left_as_written():
    """16 KB f32 rows at 16 registers of row a thread: 6 blocks an SM, 96 KB in flight"""
    k = scheduled(KERNELS, "plain_rows", target="sm_90a")
    assert "blocks per SM: 6" in " ".join(k.notes) and not k.launch_fill


def test_a_row_waits_at_one_barrier_before_its_first_reduction():
    """the ring's wait and barrier order the stage's reads: the scalar lets before the copy out of
    the ring need none of their own (warpspec.ring_split drops the sync the barrier pass put
    after them; it cost a second barrier a row)"""
    src = generate(plain("layer_norm"), "sm_90a").source
    loop = src[src.index("for (int tl_k = 0; tl_k < tl_n; ++tl_k) {"):]
    assert loop[:loop.index("tl::reduce_slots<")].count("__syncthreads();") == 1


def test_the_row_leaves_the_ring_a_run_at_a_time():
    """copy_s2f's RUNS: 16-byte shared loads chosen by the generator, not left to the compiler to
    merge (NVRTC 13.0 merged the element loads into LDS.64, nvcc into LDS.128)"""
    src = generate(plain("layer_norm"), "sm_90a").source
    assert "tl::copy_s2f<tl_layer_norm_layout_0, half, half, 1, 8192, 8, 0, true>(row, (row_ring + " in src


def test_a_staged_fragment_that_a_copy_takes_whole_stays_in_registers():
    """_read_in_place: only a fragment that element loads alone read is read from its staging;
    one a copy takes whole keeps its copy (into registers, where first touched)"""
    src = (PLAIN / "layer_norm.tl").read_text().replace(
        "        reduce_sum(row, total, dim=1)\n",
        "        reduce_sum(row, total, dim=1)\n        copy(bias, y[r, 0])\n")
    k = scheduled(src, "layer_norm", target="sm_90a")
    assert k.launch_fill
    assert k.buffer("weight") is None and k.buffer("bias") is not None
    copies = [s for s in statements(k.body) if isinstance(s, ir.Copy) and s.dst.name == "bias"]
    assert [c.src.name for c in copies] == ["bias_staged"]
    assert "; weight is read from its staged copy where read, not copied into registers" in k.notes[0]
