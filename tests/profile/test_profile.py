"""tlc profile without a GPU (issue 14): the occupancy arithmetic, the report's text from a fake
resource record, the Chrome-trace document's schema, --flops expressions, Nsight Compute's CSV,
and the command's messages where there is no GPU or no ncu.  The measuring half is
tests/gpu/test_profile_gpu.py."""
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from tlc import cli
from tlc.diagnostics import TlcError
from tlc.dtypes import lookup
from tlc.profiling import (GridProfile, Profile, Resources, SmLimits, blocks_per_sm, chrome_trace, flops_of,
                           format_report, to_json)
from tlc.profiling.gpu import NCU_METRICS, parse_ncu_csv

GEMM = str(Path(__file__).resolve().parents[2] / "examples" / "gemm.tl")
ATTENTION = Path(__file__).resolve().parents[2] / "stdlib" / "attention.tl"
H100 = SmLimits(registers=65536, threads=2048, blocks=32, smem=233472)


def res(registers=64, threads=256, static=0, dynamic=0, local=0):
    return Resources(registers=registers, local_bytes=local, static_smem=static, dynamic_smem=dynamic,
                     max_threads_per_block=1024, threads=threads)


@pytest.mark.parametrize("r, want", [
    (res(registers=64), (4, "registers")),           # 64 x 32 = 2048 a warp, 8 warps: 16384 a block
    (res(registers=32), (8, "threads per SM")),       # 2048 // 256
    (res(registers=30), (8, "threads per SM")),       # given out 256 a warp: 30 counts as 32
    (res(registers=16, threads=32), (32, "blocks per SM")),
    (res(registers=32, dynamic=98304), (2, "shared memory")),  # 233472 // (98304 + 1024)
    (res(registers=168, threads=384, dynamic=150000), (1, "registers")),
])
def test_blocks_per_sm(r, want):
    assert blocks_per_sm(r, H100) == want


def fake_profile(local=0, flops=2 * 4096 ** 3) -> Profile:
    g = GridProfile("matmul", res(registers=128, dynamic=98304, local=local), 2, "shared memory", 64,
                    0.5, 3 * 2 * 4096 * 4096, flops)
    return Profile("matmul", "NVIDIA H200", "sm_90a", [g], 4000.0, 700.0 if flops else None, "t.json",
                   constants={"BM": 64, "T": lookup("f16")})


def test_the_report_of_a_fake_record():
    assert format_report(fake_profile()) == (
        "matmul on NVIDIA H200 (sm_90a); copy bandwidth measured 4000 GB/s, f16 gemm 700 TFLOP/s\n"
        "  matmul: 500.00 us a launch, 201.3 GB/s (5% of copy), 274.88 TFLOP/s (39% of gemm)\n"
        "    registers 128 a thread, local memory (spills, stack) 0 B a thread\n"
        "    shared memory 98304 B a block (0 static, 98304 dynamic), 256 threads a block (at most 1024)\n"
        "    occupancy 2 blocks an SM, 25% of the warp slots (limited by shared memory)\n"
        "  trace: t.json (chrome://tracing or ui.perfetto.dev)")


def test_spills_are_pointed_out_and_no_flops_no_rate():
    text = format_report(fake_profile(local=96, flops=None))
    assert "local memory (spills, stack) 96 B a thread  <- spills" in text
    assert "TFLOP" not in text


def test_the_json_has_the_record_and_the_rates():
    d = json.loads(to_json(fake_profile()))
    g = d["grids"][0]
    assert g["resources"]["registers"] == 128 and g["blocks_per_sm"] == 2
    assert (g["occupancy"], round(g["gbps"], 1), round(g["tflops"], 2)) == (0.25, 201.3, 274.88)
    assert d["copy_gbps"] == 4000.0 and d["constants"] == {"BM": 64, "T": "f16"}


def test_the_trace_is_chrome_trace_json():
    doc = json.loads(json.dumps(chrome_trace([("matmul", 0.0, 12.5, {"launch": 0}),
                                              ("matmul", 14.0, 12.25, {"launch": 1})], "NVIDIA H200")))
    assert doc["displayTimeUnit"] == "ns"
    meta = [e for e in doc["traceEvents"] if e["ph"] == "M"]
    assert {e["name"] for e in meta} == {"process_name", "thread_name"}
    spans = [e for e in doc["traceEvents"] if e["ph"] == "X"]
    assert [(e["name"], e["ts"], e["dur"], e["args"]["launch"]) for e in spans] == \
        [("matmul", 0.0, 12.5, 0), ("matmul", 14.0, 12.25, 1)]
    assert all({"pid", "tid", "cat"} <= set(e) for e in spans)


def test_flops_expressions():
    assert flops_of("2*M*N*K", {"M": 64, "N": 32, "K": 16}) == 65536.0
    assert flops_of("1e9", {}) == 1e9
    with pytest.raises(TlcError) as e:
        flops_of("2*M*Q", {"M": 1, "N": 2})
    assert str(e.value) == "--flops '2*M*Q': write a number or + - * / // ** over the shape symbols (here: M, N)"
    with pytest.raises(TlcError) as e:
        flops_of("2*(", {})
    assert str(e.value) == "--flops '2*(' is not an expression"


def test_nsight_computes_raw_csv():
    header = ['"ID"', '"Kernel Name"', *(f'"{m}"' for m in NCU_METRICS)]
    units = ['""', '""', '"nsecond"', '"%"', '"%"', '"register/thread"', '"%"', '""', '"byte"', '"byte"', '"byte"']
    values = ['"0"', '"matmul"', '"12,345"', '"71.2"', '"35.0"', '"168"', '"24.9"', '"0"', '"1"', '"2"', '"3"']
    text = "==PROF== Connected\n" + "\n".join(",".join(r) for r in (header, units, values)) + "\n"
    counters = parse_ncu_csv(text)
    assert counters["launch__registers_per_thread"] == ("168", "register/thread")
    assert counters["gpu__time_duration.sum"] == ("12,345", "nsecond")
    assert set(counters) == set(NCU_METRICS)
    assert parse_ncu_csv("no table here") == {}


def test_profile_without_a_gpu_says_so(monkeypatch):
    monkeypatch.setattr("tlc.runtime.compile.cuda_unavailable_reason", lambda: "CUDA found no device")
    r = CliRunner().invoke(cli.main, ["profile", GEMM, "-k", "matmul", "--shape", "M=64,N=64,K=64"])
    assert r.exit_code == 1
    assert r.output == "error: tlc profile measures on a CUDA GPU and there is none (CUDA found no device)\n"


def test_ncu_without_nsight_compute_says_so(monkeypatch):
    monkeypatch.setattr("tlc.runtime.compile.cuda_unavailable_reason", lambda: None)
    monkeypatch.setattr("tlc.profiling.gpu.find_ncu", lambda: None)
    r = CliRunner().invoke(cli.main, ["profile", GEMM, "-k", "matmul", "--ncu"])
    assert r.exit_code == 1
    assert r.output == ("error: --ncu: Nsight Compute (ncu) is not installed (not on PATH, nor in $CUDA_HOME/bin or "
                        "/usr/local/cuda/bin); install it with the CUDA toolkit, or profile without --ncu\n")


def test_a_trace_of_no_launch_is_a_usage_error():
    """--launches 0 (a trace of nothing) was taken as given (--grid -1 is the grid check's error)."""
    r = CliRunner().invoke(cli.main, ["profile", GEMM, "-k", "matmul", "--launches", "0"])
    assert (r.exit_code, r.output.splitlines()[-1]) == (2, "Error: Invalid value for '--launches': 0 is not in the "
                                                          "range x>=1.")


def test_grid_without_ncu_is_a_usage_error():
    r = CliRunner().invoke(cli.main, ["profile", GEMM, "-k", "matmul", "--grid", "1"])
    assert r.exit_code == 2
    assert r.output.endswith("Error: --grid picks the grid whose Nsight Compute counters --ncu takes: add --ncu\n")


@pytest.mark.parametrize("file, kernel, grid, says", [
    (GEMM, "matmul", 1, "'matmul' has 1 grid, numbered from 0"),
    (str(ATTENTION), "flash_bwd", 3, "'flash_bwd' has 3 grids, numbered from 0 to 2"),
    (str(ATTENTION), "flash_bwd", -1, "'flash_bwd' has 3 grids, numbered from 0 to 2")])
def test_a_grid_the_kernel_has_not(monkeypatch, file, kernel, grid, says):
    # checked before anything is profiled: no GPU is reached
    monkeypatch.setattr("tlc.runtime.compile.cuda_unavailable_reason", lambda: None)
    monkeypatch.setattr("tlc.profiling.gpu.find_ncu", lambda: "/usr/bin/ncu")
    r = CliRunner().invoke(cli.main, ["profile", file, "-k", kernel, "--ncu", "--grid", str(grid)])
    assert (r.exit_code, r.output) == (1, f"error: --grid {grid}: {says}\n")


def test_the_report_names_the_grid_of_the_counters():
    p = fake_profile()
    p.grids = [p.grids[0], GridProfile("flash_bwd_grid1", res(), 1, "registers", 64, 1.0, 1, None)]
    p.ncu, p.ncu_grid = {"gpu__time_duration.sum": ("12,345", "nsecond")}, "flash_bwd_grid1"
    assert "  Nsight Compute, flash_bwd_grid1:\n    gpu__time_duration.sum: 12,345 nsecond" in format_report(p)
    p.grids = p.grids[:1]  # one grid: no name needed
    assert "  Nsight Compute:\n" in format_report(p)
