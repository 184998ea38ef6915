"""bench/moe_probe.py's hand-written CUDA without a GPU: it compiles for sm_90a (NVRTC's CuPy
compile on the device takes the same text), each permute probe loads the rows as 16-byte
vectors, the evict_last ones through a cache policy, the cs ones storing with st.global.cs, and
the grouped histogram matches lanes by MATCH.ANY."""
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "codegen"))

from nvcc import cubin_sass  # noqa: E402


def _source() -> str:
    text = (ROOT / "bench" / "moe_probe.py").read_text()
    start = text.index('SRC = r"""') + len('SRC = r"""')
    return text[start:text.index('"""', start)]


@pytest.mark.nvcc
def test_the_probes_compile_as_they_say(tmp_path):
    sass, log = cubin_sass(_source(), "sm_90a", tmp_path, name="probe")
    kernels = {}
    for part in sass.split("Function : ")[1:]:
        kernels[part.split()[0]] = part
    assert {"permute_plain", "permute_cs", "permute_last", "permute_both", "hist_loads", "hist_atomics",
            "hist_match"} <= set(kernels)
    for name, body in kernels.items():
        if name.startswith("permute"):
            assert body.count("LDG.E.128") == 4 and body.count("STG.E.") == 4, name
            assert ("STG.E.EF.128" in body) == (name in ("permute_cs", "permute_both")), name
    assert "MATCH.ANY" in kernels["hist_match"] and "ATOMS" not in kernels["hist_loads"]
    assert "spill" not in log.replace("0 bytes spill", "")
