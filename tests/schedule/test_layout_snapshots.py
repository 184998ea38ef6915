"""Snapshots of the layout choices (issue #17: choices stay stable): for every kernel of the
examples, of std.nn and of bench/plain/, on sm_80 and sm_90a, each fragment's layout and each
parallel loop's, with the exchanges through shared memory that layout inference kept (the
full IR of the examples is in test_ir_snapshots.py; this is the part a layout change moves,
for both targets, and for the std kernels whose speed depends on it).

To accept a deliberate change, rerun with `TLC_REGEN=1` and review the diff of
`tests/schedule/golden/layouts/`.
"""
from __future__ import annotations

import difflib
import os
from pathlib import Path

import pytest

import tlc
from tlc import ir
from tlc.ir.walk import statements

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = Path(__file__).resolve().parent / "golden" / "layouts"
REGEN = os.environ.get("TLC_REGEN") == "1"
SOURCES = {"examples": sorted((ROOT / "examples").glob("*.tl")), "plain": sorted((ROOT / "bench" / "plain").glob("*.tl"))}
FILES = [(kind, p.stem, str(p)) for kind, paths in SOURCES.items() for p in paths] + [("std", "nn", "std.nn")]
# sizes a tile op is compiled for where it needs one (attention's head dim)
SIZES = {"attention": {"D": 128}}


def layout_summary(kernel: ir.Kernel) -> str:
    lines = [f"kernel {kernel.name} threads={kernel.threads}"]
    lines += [f"  fragment {b.name} {list(b.shape)}: {b.layout}" for b in kernel.buffers if b.scope == "fragment"]
    for s in statements(kernel.body):
        where = f"line {s.span.line}" if s.span is not None else "?"
        if isinstance(s, ir.Parallel):
            ex = f"; exchange {', '.join(n for n, _ in s.exchange)}" if s.exchange else ""
            lines.append(f"  loop ({', '.join(s.vars)}) over {list(s.extents)} at {where}: {s.layout}{ex}")
        elif isinstance(s, ir.Copy) and isinstance(s.src, ir.BufferRef) and isinstance(s.dst, ir.BufferRef):
            a, b = kernel.buffer(s.src.name), kernel.buffer(s.dst.name)
            if a.scope == b.scope == "fragment" and a.layout != b.layout:
                lines.append(f"  copy {a.name} -> {b.name} at {where}: exchange")
    return "\n".join(lines)


def summaries(path: str, arch: str) -> str:
    module = tlc.load(path, target="cpu")
    out = []
    for name in module.kernels:
        fn = getattr(module, name)
        kernels = fn.program({}, arch, SIZES.get(Path(path).stem)).kernels if hasattr(fn, "program") \
            else [fn.scheduled({}, arch)]
        out += [layout_summary(k) for k in kernels]
    return "\n\n".join(out) + "\n"


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
@pytest.mark.parametrize("kind,stem,path", FILES, ids=[f"{k}-{s}" for k, s, _ in FILES])
def test_layout_choices(kind, stem, path, arch):
    text = summaries(path, arch)
    golden = GOLDEN / f"{kind}.{stem}.{arch}.txt"
    if REGEN:
        golden.parent.mkdir(parents=True, exist_ok=True)
        golden.write_text(text)
    assert golden.exists(), f"no snapshot {golden.name}: run with TLC_REGEN=1"
    want = golden.read_text()
    assert text == want, "".join(difflib.unified_diff(want.splitlines(True), text.splitlines(True), "golden", "now"))


def test_no_plain_kernel_or_std_kernel_exchanges():
    """The snapshots themselves: layout inference leaves no exchange in the plain kernels,
    std.nn or the examples (every exchange there would be a slow path)."""
    assert not [p.name for p in GOLDEN.glob("*.txt") if "exchange" in p.read_text()]
