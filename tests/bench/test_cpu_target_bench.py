"""bench/cpu_target.py at small sizes (two g++ builds, so under -m slow): both kernels checked
against the interpreter and timed, wall and CPU time, with their ratios."""
import re
import sys
from pathlib import Path

import pytest

from tlc.runtime import cpp as runtime_cpp

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))

import cpu_target  # noqa: E402


@pytest.mark.slow
@pytest.mark.skipif(runtime_cpp.compiler_unavailable_reason() is not None, reason="no C++ compiler here")
def test_the_bench_checks_and_times_both_kernels(capsys):
    cpu_target.main(["--size", "64", "--rows", "96", "--repeat", "1"])
    lines = capsys.readouterr().out.splitlines()
    assert re.match(r"[0-9]+ cores, load average ", lines[0]), lines[0]
    number = r"[0-9.]+"
    for name, at in (("gemm f32 64\\^3", 1), ("softmax f16 \\(96, 96\\)", 3)):
        assert re.fullmatch(f"{name} +interpreter +{number} ms +cpu target +{number} ms +{number}x +"
                            f"\\(largest relative difference {number}(e-[0-9]+)?\\)", lines[at]), lines[at]
        assert re.fullmatch(f" +CPU time +{number} ms +{number} ms +{number}x", lines[at + 1]), lines[at + 1]
    assert lines[5].startswith("load average") and len(lines) == 6
