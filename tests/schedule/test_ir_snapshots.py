"""Snapshots of the scheduled tile IR of every example kernel.

For each kernel of `examples/*.tl` (default constants, plus named variants), the text of
`tlc.ir.print_kernel(schedule(...))` must equal `golden/<example>.<kernel>[.<variant>].ir`.
A change in lowering, layouts, the shared-memory plan or barriers shows up as a diff here.

To accept a deliberate change, rerun with `TLC_REGEN=1`: the goldens are rewritten (and the
tests pass); review the diff of `tests/schedule/golden/` before committing it.
"""
from __future__ import annotations

import difflib
import os
from pathlib import Path

import pytest

import tlc
from tlc.diagnostics import DiagnosticError
from tlc.schedule import schedule

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
GOLDEN = Path(__file__).resolve().parent / "golden"
REGEN = os.environ.get("TLC_REGEN") == "1"

# (example, kernel, variant or None, constants)
CASES = [
    ("vector_add", "vector_add", None, {}),
    ("gemm", "matmul", None, {}),
    ("gemm", "matmul", "bm64_bn64_bk64_stages4_bf16", {"BM": 64, "BN": 64, "BK": 64, "stages": 4, "T": "bf16"}),
    ("gemm", "matmul", "threads256", {"THREADS": 256}),  # 8 warps share the accumulator
    ("softmax", "softmax", None, {}),
    ("layernorm", "layernorm", None, {}),
]
# kernels of the examples that cannot be scheduled yet (so have no snapshot)
TILE_OPS = {("linear_gelu", "linear_gelu"), ("attention", "attention")}

_programs: dict = {}


def program(example: str):
    if example not in _programs:
        _programs[example] = tlc.load(str(EXAMPLES / f"{example}.tl"), target="cpu").program
    return _programs[example]


def golden_path(example, kernel, variant) -> Path:
    return GOLDEN / ".".join([example, kernel] + ([variant] if variant else []) + ["ir"])


def case_id(case) -> str:
    return golden_path(*case[:3]).name


def test_every_example_kernel_has_a_case():
    kernels = set()
    for path in EXAMPLES.glob("*.tl"):
        mod = tlc.load(str(path), target="cpu")
        kernels |= {(path.stem, name) for name in mod.kernels}
    assert kernels == {(c[0], c[1]) for c in CASES} | TILE_OPS


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_ir_snapshot(case):
    example, kernel, variant, constants = case
    text = tlc.ir.print_kernel(schedule(program(example), kernel, constants))
    if not text.endswith("\n"):
        text += "\n"
    path = golden_path(example, kernel, variant)
    if REGEN:
        GOLDEN.mkdir(exist_ok=True)
        path.write_text(text)
        return
    assert path.exists(), f"no golden file {path.relative_to(ROOT)}; run with TLC_REGEN=1 to write it"
    want = path.read_text()
    if text != want:
        diff = "".join(difflib.unified_diff(want.splitlines(True), text.splitlines(True),
                                            f"{path.name} (golden)", f"{path.name} (now)"))
        pytest.fail(f"the tile IR of {example}.{kernel} changed (TLC_REGEN=1 accepts it):\n{diff}", pytrace=False)


def test_no_stale_goldens():
    expected = {golden_path(*c[:3]).name for c in CASES}
    present = {p.name for p in GOLDEN.glob("*.ir")}
    assert present <= expected, f"golden files without a case: {sorted(present - expected)}"


@pytest.mark.parametrize("example, kernel", sorted(TILE_OPS))
def test_tile_ops_are_not_scheduled_yet(example, kernel):
    with pytest.raises(DiagnosticError) as info:
        schedule(program(example), kernel, {})
    assert [d.code for d in info.value.diagnostics] == ["E067"]


def test_snapshots_are_deterministic():
    """Scheduling twice, from a fresh check of the file, prints the same text."""
    for example, kernel, _, constants in CASES:
        fresh = tlc.load(str(EXAMPLES / f"{example}.tl"), target="cpu").program
        assert tlc.ir.print_kernel(schedule(fresh, kernel, constants)) == \
            tlc.ir.print_kernel(schedule(program(example), kernel, constants))
