"""What `tlc check` prints for a program: the tests of diagnostics compare it with the exact text."""
from __future__ import annotations

from tlc.diagnostics import render_all
from tlc.driver import check_source


def rendered(src: str) -> str:
    """The rendered diagnostics of `src` checked as the file t.tl ("" where it checks clean)."""
    r = check_source(src, "t.tl")
    return render_all(r.diagnostics, r.sources)
