"""The Python API's modules import in one direction: api.py (load, the module object) imports
kernel.py and tileop.py, tileop.py imports kernel.py, and neither imports api.py, at the top
or inside a function."""
import ast
from pathlib import Path

import pytest

TLC = Path(__file__).resolve().parents[1] / "tlc"


def imported_modules(name: str) -> set[str]:
    """The tlc modules `tlc/<name>.py` imports anywhere in it, as dotted names under tlc."""
    out = set()
    for node in ast.walk(ast.parse((TLC / f"{name}.py").read_text())):
        if isinstance(node, ast.ImportFrom) and node.level == 1:
            if node.module:
                out.add(node.module.split(".")[0])
            else:
                out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("tlc."):
            out.add(node.module.split(".")[1])
    return out


@pytest.mark.parametrize("name, never", [("tileop", {"api"}), ("kernel", {"api", "tileop"})])
def test_no_import_back(name, never):
    assert imported_modules(name) & never == set()


def test_api_imports_both():
    assert {"kernel", "tileop"} <= imported_modules("api")
    import tlc.api
    import tlc.kernel
    import tlc.tileop

    assert tlc.api.Kernel is tlc.kernel.Kernel and issubclass(tlc.api.TileOp, tlc.kernel.Kernel)
