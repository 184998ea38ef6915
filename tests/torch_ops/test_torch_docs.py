"""docs/torch.md runs as written: its ```python blocks in order, in one namespace, on CPU
tensors in the default run and on CUDA tensors under -m gpu; a bare ``` block right after a
python block is what that block prints."""
from __future__ import annotations

import contextlib
import io
import itertools
import re
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

DOC = Path(__file__).resolve().parents[2] / "docs" / "torch.md"
DEVICE_LINE = 'device = "cuda" if torch.cuda.is_available() else "cpu"'
_runs = itertools.count()


def blocks() -> list:
    """(info string, text) of each fenced block, in order."""
    return re.findall(r"^```(\w*)\n(.*?)^```$", DOC.read_text(), flags=re.S | re.M)


def run_doc(device: str) -> None:
    found = blocks()
    assert sum(info == "python" for info, _ in found) >= 5 and DEVICE_LINE in found[0][1]
    namespace = f"tlc_doc{next(_runs)}_{device}"  # operator names are registered once per process
    scope: dict = {}
    for i, (info, text) in enumerate(found):
        if info != "python":
            continue
        code = text.replace(DEVICE_LINE, f"device = {device!r}").replace("mylib::", f"{namespace}::")
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            exec(compile(code, f"{DOC}:block{i}", "exec"), scope)
        if i + 1 < len(found) and found[i + 1][0] == "":
            assert out.getvalue() == found[i + 1][1], f"block {i} printed {out.getvalue()!r}"


def test_docs_torch_on_cpu():
    run_doc("cpu")


@pytest.mark.gpu
def test_docs_torch_on_gpu():
    run_doc("cuda")
