"""bench/data_tiles.py without a GPU: its --dry-run runs each tile variant on the interpreter
against PyTorch on the CPU, so that a variant the GPU run would time is one that computes the
kernel's result."""
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

import data_tiles  # noqa: E402

pytest.importorskip("torch")


def test_dry_run_of_some_kernels_variants():
    assert data_tiles.dry_run(["bc.add", "permute", "index_select"]) == []


def test_a_variant_unlike_pytorch_is_reported(monkeypatch):
    real = data_tiles.groups

    def shifted(torch, device, full):  # tril's reference one diagonal off
        return [g[:4] + ((lambda x=g[3][0]: torch.tril(x, 6)),) + g[5:] for g in real(torch, device, full)]
    monkeypatch.setattr(data_tiles, "groups", shifted)
    assert data_tiles.dry_run(["tril"])[0] == "tril default: differs from PyTorch's"
