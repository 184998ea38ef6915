"""The benchmarks' one rule for a time: it counts only for a result that matched its reference
(tlc.timing.compare_checked).  `timed` checks and times contenders, records every relative
error and every wrong contender in a result's JSON, says the wrong ones loudly, and returns
the times of the right ones; `us` and `ratio` print and divide times that may be missing."""
from __future__ import annotations

import json
import math
from pathlib import Path

from ..timing import compare_checked


def timed(record: dict, contenders: dict, **timing) -> dict:
    """Milliseconds of the contenders (name -> tlc.timing.Checked) whose output matched; into
    `record`: "rel_err" of each, "wrong" (name -> why) of each excluded one."""
    ms, verdicts = compare_checked(contenders, **timing)
    record["rel_err"] = {name: v.rel_err for name, v in verdicts.items()}
    record["wrong"] = {name: v.why for name, v in verdicts.items() if not v.ok}
    for name, why in record["wrong"].items():
        print(f"!! {name}: not timed: {why}")
    return ms


def us(ms: dict, name: str) -> str:
    return f"{ms[name] * 1e3:.0f} us" if name in ms else "WRONG (not timed)"


def ratio(ms: dict, numerator: str | None, denominator: str | None) -> float:
    """ms[numerator] / ms[denominator], NaN where either was not timed."""
    if numerator in ms and denominator in ms:
        return ms[numerator] / ms[denominator]
    return math.nan


def save(results: dict, path: Path, also: str | None = None) -> None:
    """The results as JSON at `path` (its folder made), and at `also` when given."""
    text = json.dumps(results, indent=1, default=str)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    if also:
        Path(also).write_text(text)


def write(results: dict, out, chart: bool = True) -> Path:
    """The results as JSON at `out` and, with `chart`, their PNG chart beside it (chart.py),
    each said on stdout."""
    out = Path(out)
    save(results, out)
    print(f"wrote {out}")
    if chart:
        from .chart import write_chart

        print(f"wrote {write_chart(results, out.with_suffix('.png'))}")
    return out
