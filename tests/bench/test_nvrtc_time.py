"""bench/nvrtc_time.py times the sources the runtime compiles for a first call on aligned arrays
with whole rows: TL_TMA_FLAGS for a kernel with tensor maps, TL_WHOLE_RUNS for one whose copies
move whole runs (runtime.compile_kernel's choices)."""
import sys
from pathlib import Path

import tlc
from tlc.runtime.whole_runs import DEFINE as WHOLE

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
import nvrtc_time  # noqa: E402


def test_runtime_sources_carry_the_builds_defines():
    nn = tlc.load("std.nn", target="cpu")
    assert nvrtc_time.runtime_source(nn.softmax, {}) == WHOLE + nn.softmax.generated({}, "sm_90a").source
    gemm = tlc.load("std.gemm", target="cpu").matmul
    assert nvrtc_time.runtime_source(gemm, {}) == (WHOLE + "#define TL_TMA_FLAGS 3  // every tensor map encoded\n"
                                                   + gemm.generated({}, "sm_90a").source)
