"""What `tlc tune` shows: a progress bar on stderr (tqdm) with the best configuration so far,
and at the end a summary table (or `--json`)."""
from __future__ import annotations

import json
import sys


class Progress:
    """One bar per phase (compiling, measuring); `best` is the fastest right candidate so far."""

    def __init__(self, stream=None, enabled: bool = True):
        self.stream = stream or sys.stderr
        self.enabled = enabled
        self.best = None
        self._bar = None

    def start(self, total: int, what: str) -> None:
        if not self.enabled or not total:
            return
        try:
            from tqdm import tqdm
        except ImportError:  # an environment installed before tqdm was a dependency: no bar, the same tuning
            self.enabled = False
            return

        self._bar = tqdm(total=total, desc=what, file=self.stream, leave=True, dynamic_ncols=True,
                         unit="cfg", mininterval=0.2)
        self._show()

    def advance(self, best) -> None:
        if best is not None:
            self.best = best
        if self._bar is not None:
            self._bar.update(1)
            self._show()

    def _show(self) -> None:
        if self.best is not None and self._bar is not None:
            self._bar.set_postfix_str(f"best {self.best.label} {_time(self.best.ms)}")

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None


def _time(ms) -> str:
    if ms is None:
        return "-"
    return f"{ms * 1e3:.1f} us" if ms < 10 else f"{ms:.2f} ms"


def summary(report) -> str:
    """The table of one bucket: every right candidate by time, then the wrong, failed and
    pruned ones, and what was recorded."""
    from .space import bucket_text

    lines = [f"{report.kernel} of {report.file} on {report.arch} ({'GPU' if report.target == 'cuda' else 'interpreter'}),"
             f" bucket {bucket_text(report.when)}, shapes {', '.join(f'{k}={v}' for k, v in report.shapes.items())}"]
    total = len(report.outcomes)
    pruned = report.pruned
    lines.append(f"{total} configurations: {report.count('ok')} right, {report.count('wrong')} wrong, "
                 f"{report.count('error') + report.count('invalid')} failed, {sum(pruned.values())} pruned"
                 + (f" ({', '.join(f'{n} {code} {_what(code)}' for code, n in sorted(pruned.items()))})" if pruned else ""))
    right = sorted((o for o in report.outcomes if o.status == "ok"), key=lambda o: o.ms)
    shipped = report.shipped_ms
    width = max([len(o.label) for o in report.outcomes] + [len(report.shipped_label), 13])
    lines.append(f"  {'#':>3}  {'configuration':<{width}}  {'time':>10}  {'vs shipped':>10}")
    for i, o in enumerate(right, 1):
        ms = report.final.get(o.label, o.ms)
        ratio = f"{shipped / ms:.3f}x" if shipped and ms else ""
        mark = "  <- winner" if report.winner and o.label == report.winner.label else ""
        mark += "  (shipped)" if o.label == report.shipped_label else ""
        lines.append(f"  {i:>3}  {o.label:<{width}}  {_time(ms):>10}  {ratio:>10}{mark}")
    if report.shipped_label not in {o.label for o in right} and shipped is not None:
        lines.append(f"  {'':>3}  {report.shipped_label:<{width}}  {_time(shipped):>10}  {'1.000x':>10}"
                     + ("  <- winner" if report.winner and report.winner.label == report.shipped_label else ""))
    for status in ("wrong", "error", "invalid", "pruned"):
        for o in report.outcomes:
            if o.status == status:
                lines.append(f"  {status.upper():>7} {o.label}: {(o.code + ' ') if o.code else ''}{o.why}")
    if report.winner is None:
        lines.append("no configuration gave the right output: nothing recorded")
    elif report.config:
        lines.append(f"recorded {report.winner.label} in {report.config}")
    lines.append(f"tuned in {report.seconds:.1f} s")
    return "\n".join(lines)


def _what(code: str) -> str:
    from .tuner import RESOURCE_CODES

    return RESOURCE_CODES.get(code, "")


def to_json(reports) -> str:
    return json.dumps({"buckets": [r.to_json() for r in reports]}, indent=1, default=str)
