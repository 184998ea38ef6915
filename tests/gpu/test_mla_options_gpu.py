"""mla_decode compiled under the options bench/mla_variants.py times (FLAGS: codegen/sm80.py
UNIFORM_GUARDS; P @ V carried on the two stages, schedule/warpspec.py CARRIED_MIN_STAGES 2;
codegen/sm90.py EARLY_CARRIED_RELEASE) against NumPy on the GPU, at the interpreter's ragged
shapes and DeepSeek's sizes: what must hold before any of them becomes the default. Each is
std's text under a kernel name of its own (so its own cache entry), compiled under its flags."""
import pathlib
import sys

import pytest

import tlc

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "tests" / "stdlib"))
sys.path.insert(0, str(ROOT / "tests" / "gpu"))
import mla_variants  # noqa: E402
from test_attention import MLA_CASES, check_mla  # noqa: E402
from test_attention_gpu import MLA_DEFAULT_TILES, on_device  # noqa: E402

pytestmark = pytest.mark.gpu


@pytest.fixture(scope="module")
def modules(tmp_path_factory):
    folder = tmp_path_factory.mktemp("mla_options")
    out = {}
    for name in mla_variants.FLAGS:
        path = folder / f"mla_{name}.tl"
        path.write_text(mla_variants.variant(name))
        out[name] = tlc.load(str(path), target="cuda")
    return out


@pytest.mark.parametrize("name", list(mla_variants.FLAGS))
@pytest.mark.parametrize("case", range(len(MLA_CASES) + len(MLA_DEFAULT_TILES)))
def test_mla_decode_under_each_option_against_numpy(modules, name, case):
    *shape, consts = (MLA_CASES + MLA_DEFAULT_TILES)[case]
    consts = {k: v for k, v in consts.items() if k != "STAGES"}  # (the interpreter's, for sm_80's shared memory)
    kernel = on_device(getattr(modules[name], f"mla_decode_{name}"))

    def run(*args, **given):
        with mla_variants.flag(*mla_variants.FLAGS[name]):  # (compiled at its first call)
            kernel(*args, **given)
    check_mla(run, "bf16", *shape, consts, seed=700 + case)
