"""The PNG chart of a benchmark's results: one bar per case, std.gemm's fastest correct
kernel's time ratio to the vendor's (above 1: std.gemm is faster), a line at 1.  Needs
matplotlib (the `bench` extra); drawn without pyplot, so no display or global state is
touched."""
from __future__ import annotations

from pathlib import Path

from .gemm import best_std, shape_text


def ratios(results: dict) -> list[tuple[str, float]]:
    """(case, ratio to the vendor) for each case that has both a correct std.gemm time and the
    vendor's."""
    out = []
    for case in results.get("cases", []):
        best, _ = best_std(case)
        if best is not None and "ratio" in best:
            out.append((f"{case['precision']} {shape_text(case['shape'])}", float(best["ratio"])))
    return out


def ratio_chart(results: dict, path) -> Path:
    """Draw `results`' ratios as bars into the PNG `path`."""
    try:
        from matplotlib.figure import Figure
    except ImportError:
        raise ImportError("the chart needs matplotlib: pip install 'tlc[bench]' (or pass --no-chart)") from None
    bars = ratios(results)
    fig = Figure(figsize=(max(6.0, 0.45 * len(bars) + 2), 4.5), layout="constrained")
    ax = fig.subplots()
    names = [n for n, _ in bars]
    values = [v for _, v in bars]
    ax.bar(range(len(bars)), values, color=["tab:green" if v >= 1 else "tab:red" for v in values])
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.set_xticks(range(len(bars)), names, rotation=60, ha="right", fontsize=8)
    ax.set_ylabel("speed vs the vendor (time ratio)")
    ax.set_title(f"std.gemm on {results.get('gpu', 'the GPU')} ({results.get('arch', '')})")
    path = Path(path)
    fig.savefig(path, dpi=120)
    return path
