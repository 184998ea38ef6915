"""tlc tune's worker pool (spawned processes) without a GPU: each configuration scheduled and
generated in a worker (what a worker does before NVRTC), the constants a call binds (a DType
among them) pickled across, the target's refusal returned as its code and message."""
from pathlib import Path

from tlc.dtypes import BF16
from tlc.tune import pool

SCALE = str(Path(__file__).resolve().parent / "scale.tl")


def test_workers_generate_each_configuration_and_return_the_targets_refusals():
    configs = {f"ROWS={rows}": {"BLOCK": 64, "ROWS": rows} for rows in (1, 2, 1024)}
    done = []
    results = pool.compile_all(SCALE, "scale", configs, "sm_80", jobs=2, on_done=done.append, work=pool.generate_one)
    assert sorted(done) == sorted(configs)
    assert results == {"ROWS=1": None, "ROWS=2": None,
                       "ROWS=1024": ("E070", "kernel 'scale' needs 272 KB of shared memory, more than the 163 KB the "
                                             "target allows: tile (272 KB)")}


def test_a_dtype_crosses_to_the_workers():
    configs = {f"BK={bk}": {"BM": 128, "BN": 256, "BK": bk, "stages": 4, "THREADS": 256, "T": BF16} for bk in (32, 64)}
    results = pool.compile_all("std.gemm", "matmul", configs, "sm_80", jobs=2, work=pool.generate_one)
    assert results["BK=32"] is None
    code, message = results["BK=64"]  # 4 stages of 128 x 64 and 64 x 256 bf16 tiles: 192 KB
    assert (code, message.split(",")[0]) == ("E070", "kernel 'matmul' needs 192 KB of shared memory")
