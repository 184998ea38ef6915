"""std.attention's paged kernels on the GPU over a page table whose sequences share pages (a
shared prefix, as vLLM's prefix cache): tests/stdlib/test_attention.py's interpreter checks run
with the kernels on the device (the sequences' own copies of the shared pages poisoned)."""
import pathlib
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "stdlib"))
sys.path.insert(0, str(ROOT / "tests" / "gpu"))
from test_attention import test_flash_decode_paged_reads_pages_the_sequences_share as paged_check  # noqa: E402
from test_attention import test_mla_decode_reads_pages_the_sequences_share as mla_check  # noqa: E402
from test_attention_gpu import OnDevice  # noqa: E402

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("causal", [False, True])
def test_flash_decode_paged_on_shared_pages(causal):
    paged_check(OnDevice(), causal)


def test_mla_decode_on_shared_pages():
    mla_check(OnDevice())
