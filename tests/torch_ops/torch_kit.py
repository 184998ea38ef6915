"""What the tlc.torch tests share: fresh operator names (PyTorch keeps every registration for
the process), the std modules, examples/torch_block.py as a module, and RMS norm in PyTorch.
Imported only after `pytest.importorskip("torch")`."""
from __future__ import annotations

import importlib.util
import itertools
import sys
from pathlib import Path

import torch

import tlc

_names = itertools.count()
STD = ("nn", "nn_train", "nn_layers", "elementwise", "gemm")


def name(base: str) -> str:
    """A fresh operator name `tlc_test::BASE_N`."""
    return f"tlc_test::{base}_{next(_names)}"


def load_std(target: str = "auto") -> dict:
    return {m: tlc.load(f"std.{m}", target=target) for m in STD}


def example_block():
    """examples/torch_block.py, loaded once per process (its operators' names are registered
    with PyTorch for the process)."""
    if "torch_block" not in sys.modules:
        path = Path(__file__).resolve().parents[2] / "examples" / "torch_block.py"
        spec = importlib.util.spec_from_file_location("torch_block", path)
        sys.modules["torch_block"] = module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    return sys.modules["torch_block"]


def rms_ref(x, w, eps=1e-6):
    """RMS norm in f32."""
    x, w = x.float(), w.float()
    return x * torch.rsqrt((x * x).mean(-1, keepdim=True) + eps) * w
