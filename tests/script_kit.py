"""A script of scripts/ (a Python file without the .py suffix) loaded as a module, for the tests
that call its functions: scripts/run-all-kernels, options-flip, ew-sass."""
from __future__ import annotations

import importlib.machinery
import importlib.util
from pathlib import Path

SCRIPTS = Path(__file__).resolve().parents[1] / "scripts"


def load_script(name: str):
    """scripts/`name` executed as a module named after it (dashes as underscores)."""
    module_name = name.replace("-", "_")
    loader = importlib.machinery.SourceFileLoader(module_name, str(SCRIPTS / name))
    module = importlib.util.module_from_spec(importlib.util.spec_from_loader(module_name, loader))
    loader.exec_module(module)
    return module
