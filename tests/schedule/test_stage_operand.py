"""schedule/stage_operand.py: a warp-specialized ring's last register-A product reads A from
shared memory where that lets it stay in flight into the next iteration (warpspec.py's
carried_gemms): std.attention's flash_bwd dK/dV grid at config.json's sm_90a tiles; left alone
on sm_80, with two stages, where the staged rows would not be whole 128-byte rows, and where a
deferred gemm takes the loop (flash_fwd)."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tlc import ir
from tlc.driver import check_file
from tlc.ir.walk import statements
from tlc.schedule import schedule, schedule_grids
from tlc.schedule.warpspec import carried_gemms

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "stdlib"))
from attention_kit import ATTENTION_PATH  # noqa: E402

SM90_TILES = {"BM": 128, "THREADS": 256, "BN": 128, "BQ": 64, "KV_STAGES": 3}


@pytest.fixture(scope="module")
def program():
    return check_file(ATTENTION_PATH).program


def dkv_grid(program, target="sm_90a", **consts):
    return schedule_grids(program, "flash_bwd", {"D": 128, "T": "f16", **SM90_TILES, **consts}, target=target)[2]


def test_ds_goes_through_shared_memory_and_dk_stays_in_flight(program):
    k = dkv_grid(program)
    loop = k.body[k.warp_spec.loop]
    copy, sync, gemm = [s for s in loop.body if not isinstance(s, ir.Sync) or s is not loop.body[-1]][-3:]
    assert isinstance(sync, ir.Sync)  # the warpgroups' stores before the tensor cores read them
    assert isinstance(copy, ir.Copy) and (copy.src.name, copy.dst.name) == ("ds_t", "ds_t_shared")
    assert isinstance(gemm, ir.Gemm) and (gemm.a, gemm.b, gemm.c) == ("ds_t_shared", "q_tile", "dk")
    staged = next(b for b in k.buffers if b.name == "ds_t_shared")
    assert staged.scope == "shared" and staged.shape == (128, 64) and staged.layout.swizzle_bytes == 128
    buffers = {b.name: b for b in k.buffers}
    start, stop = k.warp_spec.consumer
    assert carried_gemms(list(loop.body[start:stop]), buffers, k.threads) == (gemm,)
    # the stage dK's product reads is released one iteration late; the consumers meet at their own
    # barrier around the shared dS (each warpgroup writes the rows its wgmma reads)
    assert k.warp_spec.release_lag == 1 and k.warp_spec.deferred is None and k.warp_spec.consumer_barrier
    text = ir.print_kernel(k)
    assert "copy ds_t -> ds_t_shared" in text and "gemm dk += ds_t_shared @ q_tile" in text


@pytest.mark.parametrize("target, consts", [("sm_80", {"BM": 64, "BN": 32, "THREADS": 128, "BKV": 64, "BQ": 32}), ("sm_90a", {"KV_STAGES": 2}),
                                            ("sm_90a", {"BQ": 32})])
def test_left_alone(program, target, consts):
    """sm_80 (no wgmma); two stages (a stage released one iteration late would leave the
    producer none to fill); 32 queries a step (dS's rows 64 bytes: wgmma reads 128-byte rows)."""
    k = dkv_grid(program, target, **consts)
    assert not any(b.name == "ds_t_shared" for b in k.buffers)
    assert any(isinstance(s, ir.Gemm) and s.a == "ds_t" for s in statements(k.body))
    if k.warp_spec is not None:
        assert k.warp_spec.release_lag == 0


def test_a_deferred_gemm_keeps_its_register_operand(program):
    """flash_fwd's P @ V: the loop's two gemms are the deferred gemm's case (warpspec.py)."""
    k = schedule(program, "flash_fwd", {"D": 128, "T": "f16"}, target="sm_90a")
    assert k.warp_spec.deferred is not None
    assert not any(b.name.endswith("_shared") for b in k.buffers)


def test_the_generated_ring_carries_dks_product():
    """The C of the dK/dV grid: dS stored to shared memory, dK's product issued with its first K
    step's scale-d `tl_k > 0` (the clear before the ring folded into it, zeros after a ring of no
    iteration), the previous stage released after the first wait of a step, no wait at a step's
    end for dK; the scores' clears their products' scale-d 0."""
    from tlc.runner import build

    defines = ("D=128", *(f"{k}={v}" for k, v in SM90_TILES.items()))
    cu, _ = build(ATTENTION_PATH, kernels=("flash_bwd",), defines=defines, arch="sm_90a")
    grid = cu[cu.index("void __launch_bounds__(384, 1) flash_bwd_grid2("):]
    consumer = grid[grid.index("tl::setmaxnreg_inc"):]
    loop, after = consumer.split("tl::wgmma_wait<0>();  // the last iteration's carried gemms")
    assert "dk[tl_r] = 0.0f" not in grid[:grid.index("tl::setmaxnreg_inc")] and "dk cleared by its gemm's first" in grid
    assert "tl::copy_f2s<" in loop and "(ds_t_shared, ds_t);" in loop
    assert loop.count("_clear, half, 128, 128, 64, true, half, 1, 1, true>(") == 2  # the scores, dO . V^T
    assert "(ds_t_shared, (q_tile + ((tl_it) % 3) * 8192), dk, tl_k > 0);" in loop
    first_wait = loop.index("tl::wgmma_wait<1>();")
    release = loop.index("if (tl_k > 0 && threadIdx.x % 32 == 0) tl::mbar_arrive(tl_empty + (tl_it + 2) % 3);")
    assert first_wait < release < loop.index("fast_exp2")
    assert "tl::wgmma_wait<0>" not in loop and "tl::mbar_arrive(tl_empty + tl_stage)" not in loop
    assert after.index("if (tl_n == 0) {") < after.index("dk[tl_r] = 0.0f;") < after.index("__syncthreads()")
