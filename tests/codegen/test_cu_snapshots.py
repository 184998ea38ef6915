"""The generated .cu of every example kernel (past the inlined primitives, which have their
own tests) equals its golden file.  TLC_REGEN=1 rewrites the goldens instead; review the diff."""
import os
from pathlib import Path

import pytest

from kit_codegen import example_kernels, generated, kernel_part

GOLDEN = Path(__file__).parent / "golden"
CASES = [(e, k, "sm_80") for e, k in example_kernels()] + [("gemm", "matmul", "sm_90a")]


@pytest.mark.parametrize("example,kernel,arch", CASES)
def test_generated_cu_matches_golden(example, kernel, arch):
    text = kernel_part(generated(example, kernel, arch).source)
    path = GOLDEN / f"{example}.{kernel}.{arch}.cu"
    if os.environ.get("TLC_REGEN"):
        path.parent.mkdir(exist_ok=True)
        path.write_text(text)
    assert path.exists(), f"no golden {path.name}: run with TLC_REGEN=1"
    assert text == path.read_text()


def test_every_golden_has_a_case():
    names = {f"{e}.{k}.{a}.cu" for e, k, a in CASES}
    assert {p.name for p in GOLDEN.glob("*.cu")} <= names
