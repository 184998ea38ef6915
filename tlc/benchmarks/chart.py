"""The PNG chart of a suite's results (gemm, nn, ops), two panels:
- ratio bars: one bar per case, tlc's fastest correct kernel's time ratio to the vendor's
  (above 1: tlc is faster), a line at 1;
- a roofline: arithmetic intensity (FLOP per byte moved: inputs read once, output written
  once) against TFLOP/s, both logarithmic; the roof is the copy bandwidth measured in the run
  (the slope) up to the tensor cores' f16 rate (flat; measured as cuBLAS's 8192^3 gemm, or in
  a recording without it the best f16 vendor gemm of the run), and for a gemm run with f8 or
  i8 cases a dotted roof at its fastest 8-bit vendor gemm; each case is a point, tlc's filled
  and the vendor's hollow.  A case without FLOPs (std.data) is not on it.
Needs matplotlib (the `bench` extra); drawn without pyplot, so no display or global state is
touched."""
from __future__ import annotations

from pathlib import Path

from ..frozen import frozen
from .gemm import best_std, shape_text
from .gemm_cases import bytes_moved


@frozen
class Point:
    """One case on the roofline: `who` is "tlc" or "vendor"."""
    label: str
    who: str
    intensity: float  # FLOP per byte
    tflops: float


def suite(results: dict) -> str:
    return results.get("suite", "gemm")  # a gemm recording from before the suites said their name


def ratios(results: dict) -> list[tuple[str, float]]:
    """(case, tlc's time ratio to the vendor) for each case with both times."""
    kind = suite(results)
    if kind == "gemm":
        out = []
        for case in results.get("cases", []):
            best, _ = best_std(case)
            if best is not None and "ratio" in best:
                out.append((_gemm_label(case), float(best["ratio"])))
        return out
    if kind == "nn":
        return [(c["name"], float(c["best"]["vs_torch"])) for c in results.get("cases", [])
                if c.get("best") and _finite(c["best"].get("vs_torch"))]
    rows = [(f"{r['op']} {r['dtype']}", float(r["vs_torch"])) for r in results.get("rows", []) if _finite(r.get("vs_torch"))]
    return sorted(rows, key=lambda r: r[1])


def points(results: dict) -> list[Point]:
    """Every case's tlc and vendor point, where the case has FLOPs and the contender a time."""
    kind, out = suite(results), []

    def add(label, who, flops, nbytes, tflops):
        if flops and nbytes and tflops and tflops > 0:
            out.append(Point(label, who, flops / nbytes, tflops))

    if kind == "gemm":
        for case in results.get("cases", []):
            best, vendor = best_std(case)
            M, N, K = case["shape"]
            flops, nbytes = case.get("flops", 2.0 * M * N * K), case.get("bytes") or bytes_moved(case["precision"], case["shape"])
            for who, row in (("tlc", best), ("vendor", vendor)):
                if row is not None:
                    add(_gemm_label(case), who, flops, nbytes, row["tflops"])
    elif kind == "nn":
        for c in results.get("cases", []):
            for who, timing in (("tlc", c.get("best")), ("vendor", c.get("torch"))):
                if timing and timing.get("ms"):
                    add(c["name"], who, c["flops"], c["bytes"], c["flops"] / timing["ms"] / 1e9)
    else:
        for r in results.get("rows", []):
            for who, timing in (("tlc", r.get("tlc")), ("vendor", r.get("torch"))):
                if timing and timing.get("ms"):
                    add(f"{r['op']} {r['dtype']}", who, r.get("flops", 0.0), r["bytes"], r.get("flops", 0.0) / timing["ms"] / 1e9)
    return out


def roofs(results: dict) -> tuple[float, float, str]:
    """(copy GB/s, tensor-core TFLOP/s, what the flat roof is)."""
    copy = results.get("copy_GBps") or results.get("copy", {}).get("gbs")
    if not copy:
        raise ValueError("the results hold no copy bandwidth (copy_GBps) to draw the roofline's slope")
    peak = results.get("tc_peak_tflops")
    if peak:
        return float(copy), float(peak), "f16 tensor cores (cuBLAS 8192^3)"
    vendor = [v["tflops"] for c in results.get("cases", []) if c.get("precision") == "f16"
              for v in [best_std(c)[1]] if v is not None]
    if not vendor:
        raise ValueError("the results hold no tensor-core rate (tc_peak_tflops) to draw the roofline's roof")
    return float(copy), float(max(vendor)), "f16 tensor cores (best f16 vendor gemm of the run)"


EIGHT_BIT = ("f8", "f8bs", "i8")


def eight_bit_roof(results: dict) -> float | None:
    """A gemm run's fastest 8-bit vendor gemm (TFLOP/s), where it passes the f16 roof: f8 and
    i8 tensor cores run at twice f16's rate, so their points stand above the f16 roof."""
    if suite(results) != "gemm":
        return None
    rates = [v["tflops"] for c in results.get("cases", []) if c.get("precision") in EIGHT_BIT
             for v in [best_std(c)[1]] if v is not None]
    best = max(rates, default=None)
    return best if best is not None and best > roofs(results)[1] else None


def figure(results: dict):
    """The chart as a matplotlib Figure: the bars' panel and the roofline's (axes labelled
    "ratios" and "roofline")."""
    try:
        from matplotlib.figure import Figure
    except ImportError:
        raise ImportError("the chart needs matplotlib: pip install 'tlc[bench]' (or pass --no-chart)") from None
    bars = ratios(results)
    per_bar = 0.45 if len(bars) <= 40 else 0.2
    bars_width = min(max(5.0, per_bar * len(bars) + 1.5), 48.0)
    fig = Figure(figsize=(bars_width + 6.5, 5.0), layout="constrained")
    left, right = fig.subfigures(1, 2, width_ratios=[bars_width, 6.5])
    what = {"gemm": "std.gemm", "nn": "std.nn", "ops": "std operators"}[suite(results)]
    fig.suptitle(f"{what} on {results.get('gpu', 'the GPU')} ({results.get('arch', '')})")
    _draw_ratios(left.subplots(), bars)
    _draw_roofline(right.subplots(), results)
    return fig


def write_chart(results: dict, path) -> Path:
    """Draw `results` into the PNG `path`."""
    path = Path(path)
    figure(results).savefig(path, dpi=120)
    return path


ratio_chart = write_chart  # the gemm suite's first name for it


def _draw_ratios(ax, bars) -> None:
    ax.set_label("ratios")
    values = [v for _, v in bars]
    ax.bar(range(len(bars)), values, color=["tab:green" if v >= 1 else "tab:red" for v in values])
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.set_xticks(range(len(bars)), [n for n, _ in bars], rotation=60, ha="right", fontsize=8 if len(bars) <= 40 else 6)
    ax.set_ylabel("speed vs the vendor (time ratio)")


def _draw_roofline(ax, results: dict) -> None:
    ax.set_label("roofline")
    copy, peak, what = roofs(results)
    found = points(results)
    ridge = peak * 1e3 / copy  # FLOP/byte where the slope meets the flat roof
    xs = [p.intensity for p in found] or [ridge]
    lo, hi = min(min(xs), ridge) / 4, max(max(xs), ridge) * 4
    ax.plot([lo, ridge, hi], [lo * copy / 1e3, peak, peak], color="black", linewidth=1.2, gid="roof",
            label=f"roof: copy {copy:.0f} GB/s, {what} {peak:.0f} TFLOP/s")
    eight = eight_bit_roof(results)
    if eight is not None:
        ax.plot([ridge, eight * 1e3 / copy, hi], [peak, eight, eight], color="black", linewidth=0.8, linestyle=":",
                gid="roof-8bit", label=f"8-bit tensor cores (best f8/i8 vendor gemm of the run) {eight:.0f} TFLOP/s")
    for who, style in (("tlc", dict(color="tab:blue")), ("vendor", dict(facecolors="none", edgecolors="tab:orange"))):
        mine = [p for p in found if p.who == who]
        if mine:
            ax.scatter([p.intensity for p in mine], [p.tflops for p in mine], s=22, gid=who, zorder=3,
                       label="tlc" if who == "tlc" else "vendor", **style)
    tlc_points = [p for p in found if p.who == "tlc"]
    if len(tlc_points) <= 16:  # few enough to name
        for p in tlc_points:
            ax.annotate(p.label, (p.intensity, p.tflops), fontsize=6, xytext=(3, 3), textcoords="offset points")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("arithmetic intensity (FLOP/byte)")
    ax.set_ylabel("TFLOP/s")
    ax.grid(True, which="major", linewidth=0.3)
    ax.legend(fontsize=7, loc="lower right")


def _gemm_label(case: dict) -> str:
    return f"{case['precision']} {shape_text(case['shape'])}"


def _finite(x) -> bool:
    return isinstance(x, (int, float)) and x == x and abs(x) != float("inf")
