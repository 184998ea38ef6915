"""The chart of `tlc bench` without a GPU (issue 14): the roofline drawn from the H200's recorded
gemm run (bench/results/gemm-h200.json, a recording from before the suites wrote their FLOPs,
bytes and tensor-core rate) and from nn / ops results of the documented form; the plotted
points' and the roof's coordinates, not only that a file appears."""
import json
import math
import struct
from pathlib import Path

import numpy as np
import pytest

from tlc.benchmarks import chart

ROOT = Path(__file__).resolve().parents[2]
RECORDED = json.loads((ROOT / "bench" / "results" / "gemm-h200.json").read_text())


def axes(fig, label):
    return next(ax for ax in fig.findobj(lambda a: hasattr(a, "get_label") and hasattr(a, "collections"))
                if ax.get_label() == label)


def plotted(ax, gid):
    [scatter] = [c for c in ax.collections if c.get_gid() == gid]
    return sorted(map(tuple, scatter.get_offsets().tolist()))


def test_gemm_roofline_points_from_the_recording():
    found = chart.points(RECORDED)
    tlc = {p.label: p for p in found if p.who == "tlc"}
    case = next(c for c in RECORDED["cases"] if c["precision"] == "f16" and c["shape"] == [4096] * 3)
    best = max((r for r in case["contenders"] if r.get("kernel") and r["ok"] and "tflops" in r), key=lambda r: r["tflops"])
    # 2 M N K FLOPs over A, B and C of 2 bytes each, once: 4096 / 3 FLOP/byte
    assert tlc["f16 4096^3"].intensity == pytest.approx(4096 / 3)
    assert tlc["f16 4096^3"].tflops == best["tflops"]
    # f8 decode: A and B of 1 byte, C of bf16: 2*16*8192*8192 / (8192 * (16 + 8192 + 32))
    assert tlc["f8 M=16 N=8192 K=8192"].intensity == pytest.approx(2 * 16 * 8192 / 8240)
    vendor = [p for p in found if p.who == "vendor" and p.label == "f16 4096^3"]
    assert [p.tflops for p in vendor] == [case["contenders"][0]["tflops"]]  # F.linear's row
    right = [c for c in RECORDED["cases"] if any(r.get("kernel") and r.get("ok") and "tflops" in r for r in c["contenders"])]
    assert len(tlc) == len(right) > 30


def test_gemm_roofline_as_drawn():
    pytest.importorskip("matplotlib")
    fig = chart.figure(RECORDED)
    ax = axes(fig, "roofline")
    assert (ax.get_xscale(), ax.get_yscale()) == ("log", "log")
    points = chart.points(RECORDED)
    for who in ("tlc", "vendor"):
        want = sorted((p.intensity, p.tflops) for p in points if p.who == who)
        np.testing.assert_allclose(plotted(ax, who), want, rtol=1e-12)
    [roof] = [line for line in ax.get_lines() if line.get_gid() == "roof"]
    xs, ys = roof.get_xdata(), roof.get_ydata()
    copy, peak = RECORDED["copy_GBps"], 744.8781125434316  # the best f16 vendor gemm of that run: F.linear 4096^3
    assert ys[1] == ys[2] == pytest.approx(peak)
    assert xs[1] == pytest.approx(peak * 1e3 / copy)  # the ridge: 174 FLOP/byte
    assert ys[0] / xs[0] == pytest.approx(copy / 1e3)  # the slope: GB/s as TFLOP/s per FLOP/byte
    assert xs[0] < min(p[0] for p in plotted(ax, "tlc")) and xs[2] > max(p[0] for p in plotted(ax, "tlc"))
    [eight] = [line for line in ax.get_lines() if line.get_gid() == "roof-8bit"]
    vendor_8bit = max(c["contenders"][0]["tflops"] for c in RECORDED["cases"]
                      if c["precision"] in ("f8", "f8bs", "i8") and c["contenders"][0].get("kernel") is None)
    assert eight.get_ydata()[1] == eight.get_ydata()[2] == pytest.approx(vendor_8bit) and vendor_8bit > peak
    assert eight.get_xdata()[1] == pytest.approx(vendor_8bit * 1e3 / copy)
    bars = axes(fig, "ratios")
    assert [round(b.get_height(), 6) for b in bars.patches] == [round(r, 6) for _, r in chart.ratios(RECORDED)]


def png_size(path):
    head = path.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", head[16:24])


def test_the_png_holds_both_panels(tmp_path):
    pytest.importorskip("matplotlib")
    path = chart.write_chart(RECORDED, tmp_path / "gemm.png")
    bars = len(chart.ratios(RECORDED))
    width = max(5.0, 0.2 * bars + 1.5) if bars > 40 else max(5.0, 0.45 * bars + 1.5)
    assert png_size(path) == (round((width + 6.5) * 120), 600) and path.stat().st_size > 20000


NN = {"suite": "nn", "gpu": "NVIDIA H200", "arch": "sm_90a", "copy_GBps": 4000.0, "tc_peak_tflops": 700.0, "cases": [
    {"name": "softmax", "bytes": 2 * 16384 * 8192 * 2, "flops": 5.0 * 16384 * 8192,
     "torch": {"ms": 0.5, "gbs": 1073.7}, "best": {"config": {"BN": 8192}, "ms": 0.146, "vs_torch": 0.5 / 0.146}},
    {"name": "rms_norm", "bytes": 2 * 16384 * 8192 * 2, "flops": 4.0 * 16384 * 8192,
     "torch": {"ms": None, "gbs": math.nan}, "best": None},  # every configuration wrong, torch too
]}


def test_nn_points_and_bars():
    assert chart.ratios(NN) == [("softmax", pytest.approx(0.5 / 0.146))]
    assert chart.points(NN) == [
        chart.Point("softmax", "tlc", 1.25, pytest.approx(5.0 * 16384 * 8192 / 0.146 / 1e9)),
        chart.Point("softmax", "vendor", 1.25, pytest.approx(5.0 * 16384 * 8192 / 0.5 / 1e9))]
    assert chart.roofs(NN) == (4000.0, 700.0, "f16 tensor cores (cuBLAS 8192^3)")


def row(op, module, flops, vs, tlc_ms=None, torch_ms=1.0, nbytes=2 ** 29):
    r = {"module": module, "op": op, "dtype": "f16", "bytes": nbytes, "flops": flops, "vs_torch": vs,
         "torch": {"ms": torch_ms}}
    if tlc_ms is not None:
        r["tlc"] = {"ms": tlc_ms}
    return r


OPS = {"suite": "ops", "gpu": "NVIDIA H200", "arch": "sm_90a", "copy_GBps": 4000.0, "tc_peak_tflops": 700.0, "rows": [
    row("silu", "std.elementwise", 2.0 ** 27, 1.25, tlc_ms=0.8),
    row("transpose", "std.data", 0.0, 0.9, tlc_ms=1.1),  # no arithmetic: a bar, no point
    row("exp", "std.elementwise", 2.0 ** 27, math.nan),  # tlc wrong: neither
    {"module": "std.reduce", "op": "sum_axis1", "dtype": "f16", "bytes": 0, "vs_torch": math.nan, "error": "E..."},
]}


def test_ops_points_and_bars(tmp_path):
    assert chart.ratios(OPS) == [("transpose f16", 0.9), ("silu f16", 1.25)]  # weakest first
    assert chart.points(OPS) == [chart.Point("silu f16", "tlc", 0.25, pytest.approx(2.0 ** 27 / 0.8 / 1e9)),
                                 chart.Point("silu f16", "vendor", 0.25, pytest.approx(2.0 ** 27 / 1e9)),
                                 chart.Point("exp f16", "vendor", 0.25, pytest.approx(2.0 ** 27 / 1e9))]
    pytest.importorskip("matplotlib")
    ax = axes(chart.figure(OPS), "roofline")
    np.testing.assert_allclose(plotted(ax, "tlc"), [(0.25, 2.0 ** 27 / 0.8 / 1e9)], rtol=1e-12)
    assert chart.eight_bit_roof(OPS) is None and not [line for line in ax.get_lines() if line.get_gid() == "roof-8bit"]


def test_a_result_without_its_ceilings_says_so():
    with pytest.raises(ValueError, match="no tensor-core rate"):
        chart.roofs({"suite": "ops", "copy_GBps": 4000.0, "rows": []})
    with pytest.raises(ValueError, match="no copy bandwidth"):
        chart.roofs({"suite": "ops", "tc_peak_tflops": 700.0, "rows": []})
