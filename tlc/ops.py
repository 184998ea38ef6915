"""`tlc ops`: the standard library's operators, read from the `.tl` sources of stdlib.

An operator is a `@kernel` or `@tile_op` of a std module (device functions, such as std.math's,
are building blocks, not operators).  For each: its module, signature, the first line of the
comment under its `def` (what it computes and how accurately: the modules write that line for
this listing and for the reference pages), its dtype parameters, and whether it has a backward:
by convention the operator NAME_bwd of the same module is NAME's backward (it takes the output's
gradient first: `relu_bwd(dy, x) -> dx`).

Tested: stdlib/tested.json records, per module, the operators whose row of the module's
table-driven test (tests/stdlib/test_<module>.py) passed in a full run, and the dtypes the row
covers; that file is written only from a run where every row passed, and each test file fails
when its table and the record disagree (tests/stdlib/op_registry.py).  The count `tlc ops`
prints is of operators that exist in the sources AND are recorded there, not of names.
"""
from __future__ import annotations

import json
import re
from dataclasses import asdict, field
from pathlib import Path

from . import package_data
from .frozen import frozen

BACKWARD_SUFFIX = "_bwd"


@frozen
class Operator:
    module: str  # "std.elementwise"
    name: str
    kind: str  # "tile_op" or "kernel"
    signature: str  # "relu(x: T[M, N], T: dtype = f32) -> T[M, N]"
    doc: str  # the first comment line under the def
    dtype_params: dict = field(default_factory=dict)  # "T" -> its default
    backward: str | None = None  # the name of its backward, if the module has one
    is_backward: bool = False
    tested_dtypes: tuple = ()  # from tested.json; empty: no passing test recorded
    line: int = 0
    comment: str = ""  # the whole comment under the def, for the reference pages

    @property
    def tested(self) -> bool:
        return bool(self.tested_dtypes)


def stdlib_dir() -> Path:
    return package_data.stdlib()


def load_tested(directory: Path | None = None) -> dict:
    path = (directory or stdlib_dir()) / "tested.json"
    return json.loads(path.read_text()) if path.exists() else {}


def _header(lines: list[str], start: int) -> tuple[str, int]:
    """The `def` header from line index `start` (decorators skipped) as one line, and the index
    of the line after it."""
    i = start
    while not lines[i].lstrip().startswith("def "):
        i += 1
    text, depth = "", 0
    while True:
        line = lines[i].split("#")[0].strip()
        text += (" " if text and not text.endswith("(") else "") + line
        depth += line.count("(") + line.count("[") - line.count(")") - line.count("]")
        i += 1
        if depth <= 0 and line.endswith(":"):
            break
    text = re.sub(r"\s+", " ", text[len("def "):-1]).replace("( ", "(").replace(" )", ")")
    return text.replace(" ,", ","), i


def _comment(lines: list[str], i: int) -> str:
    out = []
    while i < len(lines) and lines[i].strip().startswith("#"):
        out.append(lines[i].strip()[1:].strip())
        i += 1
    return " ".join(out)


def module_header(path: Path) -> str:
    """The comment block that opens a module's file, as paragraphs (a `#` line alone splits them)."""
    paras, cur = [], []
    for line in path.read_text().splitlines():
        if not line.startswith("#"):
            break
        text = line[1:].strip()
        if text:
            cur.append(text)
        elif cur:
            paras.append(" ".join(cur))
            cur = []
    return "\n\n".join(paras + ([" ".join(cur)] if cur else []))


def _doc(lines: list[str], i: int) -> str:
    """The comment under the header up to its first line that ends a sentence (at most 4 lines:
    the modules keep that first sentence short)."""
    words = []
    while i < len(lines) and lines[i].strip().startswith("#") and len(words) < 4:
        words.append(lines[i].strip()[1:].strip())
        if words[-1].endswith("."):
            break
        i += 1
    return " ".join(words)


def _comment_above(lines: list[str], start: int) -> list[str]:
    """The comment block right above line index `start` (a decorator or def), top down: where a
    module documents its operators above them (std.gemm) instead of under the def."""
    i = start
    while i > 0 and lines[i - 1].startswith("# ") and not lines[i - 1].startswith("# ----"):
        i -= 1
    return lines[i:start]


def _backwards_elsewhere(path: Path) -> dict:
    """NAME_bwd -> "std.MODULE.NAME_bwd" for the backwards the other std modules beside `path`
    define (std.nn's softmax has its backward in std.nn_train); a scan of their `def` lines."""
    out = {}
    for other in sorted(path.parent.glob("*.tl")):
        if other != path:
            for name in re.findall(r"^def (\w+" + BACKWARD_SUFFIX + r")\(", other.read_text(), re.M):
                out.setdefault(name, f"std.{other.stem}.{name}")
    return out


def module_ops(path: Path, tested: dict) -> list[Operator]:
    from .parser import parse

    text = path.read_text()
    lines = text.splitlines()
    module = f"std.{path.stem}"
    recorded = tested.get(module, {}).get("ops", {})
    fns = [f for f in parse(text, str(path)).functions if f.has_decorator("kernel") or f.has_decorator("tile_op")]
    names = {f.name for f in fns}
    elsewhere = _backwards_elsewhere(path)
    out = []
    for f in fns:
        signature, body = _header(lines, f.span.line - 1)
        docs = lines
        if not lines[body].strip().startswith("#"):  # documented above the decorator instead
            docs = lines[:body] + _comment_above(lines, f.span.line - 1) + lines[body:]
        dtype_params = {p.name: _default(p.default) for p in f.params if p.annotation.name == "dtype"}
        bwd = f.name + BACKWARD_SUFFIX
        out.append(Operator(module, f.name, "tile_op" if f.has_decorator("tile_op") else "kernel", signature,
                            _doc(docs, body), dtype_params, bwd if bwd in names else elsewhere.get(bwd),
                            f.name.endswith(BACKWARD_SUFFIX), tuple(recorded.get(f.name, ())), f.span.line,
                            _comment(docs, body)))
    return out


def _default(expr) -> str | None:
    return None if expr is None else getattr(expr, "id", None) or getattr(expr, "name", None) or str(expr)


def all_ops(directory: Path | None = None) -> list[Operator]:
    directory = directory or stdlib_dir()
    tested = load_tested(directory)
    return [op for path in sorted(directory.glob("*.tl")) for op in module_ops(path, tested)]


def to_json(ops: list[Operator]) -> str:
    return json.dumps({"count_tested": sum(op.tested for op in ops), "count": len(ops),
                       "ops": [{**asdict(op), "tested_dtypes": list(op.tested_dtypes), "tested": op.tested}
                               for op in ops]}, indent=1)


def format_table(ops: list[Operator]) -> str:
    """One line an operator, grouped by module; the summary counts tested operators."""
    rows = []
    for module in dict.fromkeys(op.module for op in ops):
        mine = [op for op in ops if op.module == module]
        rows.append(f"{module} ({sum(op.tested for op in mine)} of {len(mine)} tested)")
        width = max(len(op.name) for op in mine)
        for op in mine:
            dtypes = ",".join(op.tested_dtypes) or " ".join(f"{k}={v}" for k, v in op.dtype_params.items()) or "-"
            flags = ("bwd " if op.backward else "    ") + ("" if op.tested else "untested ")
            rows.append(f"  {op.name:<{width}}  {flags}[{dtypes}]  {op.doc}")
    tested = sum(op.tested for op in ops)
    rows.append(f"{tested} operators with a passing test ({len(ops)} listed; tested = a row of "
                f"tests/stdlib/test_<module>.py recorded passing in stdlib/tested.json)")
    return "\n".join(rows)


def _anchor(backward: str) -> str:
    """The link to a backward: its section on this page, or on its module's ("std.nn_train.x_bwd")."""
    if "." not in backward:
        return f"#{backward}"
    _, module, name = backward.split(".")
    return f"{module}.md#{name}"


def markdown(path: Path, ops: list[Operator]) -> str:
    """A module's reference page: its header comment, then each operator's signature, dtypes,
    backward and comment (scripts/stdlib-docs writes docs/stdlib/<module>.md from this)."""
    module = f"std.{path.stem}"
    out = [f"# {module}", "", "<!-- generated by scripts/stdlib-docs from stdlib/" + path.name + "; edit the .tl -->",
           "", module_header(path), "",
           f"{sum(op.tested for op in ops)} of {len(ops)} operators have a passing test "
           "(stdlib/tested.json; `tlc ops` lists them).", "",
           "| operator | dtypes | backward | what it computes |", "| --- | --- | --- | --- |"]
    for op in ops:
        dtypes = ", ".join(op.tested_dtypes) or ", ".join(f"{k}={v}" for k, v in op.dtype_params.items()) or "-"
        bwd = f"[`{op.backward}`]({_anchor(op.backward)})" if op.backward else ""
        out.append(f"| [`{op.name}`](#{op.name}) | {dtypes} | {bwd} | {op.doc.replace('|', chr(92) + '|')} |")
    for op in ops:
        out += ["", f"## {op.name}", "", "```python", f"@{op.kind}", f"def {op.signature}", "```", "", op.comment]
        if op.backward:
            out += ["", f"Backward: [`{op.backward}`]({_anchor(op.backward)})."]
    return "\n".join(out) + "\n"
