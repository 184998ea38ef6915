"""bench/row_variants.py without a GPU: `check` runs each variant on the interpreter against
NumPy, from the row's module or another file, with the row's constants or others."""
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))

import row_variants  # noqa: E402


def test_variants_of_a_row_are_right_on_the_interpreter():
    assert row_variants.check([("gather", "now", None, {}),
                               ("gather", "BLOCK64", None, {"T": "f16", "BLOCK": 64, "ROW": 512})]) == []


def test_a_wrong_kernel_from_another_file_fails(tmp_path):
    wrong = tmp_path / "wrong.tl"  # gather's signature, every output 0
    wrong.write_text("@kernel\n"
                     "def gather(x: T[A, N, C], idx: I[A, K, C], y: T[A, K, C], T: dtype = f32, I: dtype = i64):\n"
                     "    with grid(A, threads=32) as a:\n"
                     "        for e in parallel(32):\n"
                     "            if e < K * C:\n"
                     "                y[a, e // C, e % C] = T(0)\n")
    failures = row_variants.check([("gather", "zeros", str(wrong), {})])
    assert len(failures) == 1 and failures[0].startswith("zeros: gather f16: AssertionError"), failures
