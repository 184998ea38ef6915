"""editors/vscode: the TextMate grammar tokenizes every example and std source as VS Code does
(vscode-textmate over vscode-oniguruma, under node; npm installs the two packages into the test
cache on first use), and each comment, string, number, keyword, dtype, builtin and decorator
that Python's own tokenizer finds in those files (.tl is lexically Python) carries the scope a
theme colours; the grammar's builtin and dtype lists are tlc's; the extension's files agree."""
from __future__ import annotations

import io
import json
import os
import re
import shutil
import subprocess
import tokenize
from pathlib import Path

import pytest

from tlc.dtypes import ALIASES, DTYPES
from tlc.typecheck.builtins import BUILTIN_VALUES, DECORATORS

ROOT = Path(__file__).resolve().parents[2]
EXTENSION = ROOT / "editors" / "vscode"
GRAMMAR = json.loads((EXTENSION / "syntaxes" / "tl.tmLanguage.json").read_text())
SOURCES = sorted((ROOT / "examples").glob("*.tl")) + sorted((ROOT / "stdlib").glob("*.tl"))
PACKAGES = ["vscode-textmate@9.3.2", "vscode-oniguruma@2.0.1"]  # package.json's devDependencies

SCOPE_OF_WORD = {**{w: "keyword.control.flow.tl" for w in
                    "if elif else for while with as in return break continue pass".split()},
                 "from": "keyword.control.import.tl", "import": "keyword.control.import.tl",
                 "and": "keyword.operator.logical.tl", "or": "keyword.operator.logical.tl",
                 "not": "keyword.operator.logical.tl", "True": "constant.language.tl",
                 "False": "constant.language.tl", "def": "storage.type.function.tl",
                 **{d: "support.type.dtype.tl" for d in [*DTYPES, *ALIASES]}}


def node_modules() -> Path:
    """vscode-textmate and vscode-oniguruma, installed by npm once under the test cache."""
    if shutil.which("node") is None or shutil.which("npm") is None:
        pytest.skip("no node and npm on PATH: the grammar is tokenized by vscode-textmate under node")
    cache = os.environ.get("TLC_TEST_CACHE", "")  # as tests/codegen/nvcc.py's; "off" keeps npm's install
    prefix = (Path(cache) if cache not in ("", "off") else Path.home() / ".cache" / "tlc-tests") / "node" / "-".join(p.replace("@", "") for p in PACKAGES)
    if not all((prefix / "node_modules" / p.rsplit("@", 1)[0] / "package.json").exists() for p in PACKAGES):
        prefix.mkdir(parents=True, exist_ok=True)
        # a machine without the registry (CI's may have none) skips in seconds, not npm's minutes of retries
        try:
            res = subprocess.run(["npm", "install", "--prefix", str(prefix), "--no-audit", "--no-fund", "--no-save",
                                  "--ignore-scripts", "--fetch-retries=1", "--fetch-timeout=20000", *PACKAGES],
                                 capture_output=True, text=True, timeout=120)
        except subprocess.TimeoutExpired:
            pytest.skip(f"npm could not install {' '.join(PACKAGES)} within 120 s (no registry?)")
        if res.returncode != 0:
            pytest.skip(f"npm could not install {' '.join(PACKAGES)}: {res.stderr.strip().splitlines()[-1:]}")
    return prefix / "node_modules"


@pytest.fixture(scope="module")
def tokens() -> dict:
    """file -> lines -> [start, end, scopes] from the grammar, for every source at once."""
    res = subprocess.run(["node", str(EXTENSION / "test" / "tokenize.js"), *map(str, SOURCES)], capture_output=True,
                         text=True, timeout=300, env={**os.environ, "NODE_PATH": str(node_modules())})
    assert res.returncode == 0, res.stderr
    return {Path(k): v for k, v in json.loads(res.stdout).items()}


def scopes_at(line_tokens: list, col: int) -> list[str]:
    return next(t[2] for t in line_tokens if t[0] <= col < t[1])


def python_tokens(path: Path):
    """What Python's tokenizer finds in a .tl file: (kind, text, line, col, the next token's
    text, the previous one's; an '@' starting a line is "@", as a decorator's, any other "@ ")."""
    toks = [t for t in tokenize.generate_tokens(io.StringIO(path.read_text()).readline)
            if t.type not in (tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT)]
    return [(t.type, t.string, t.start[0], t.start[1], toks[i + 1].string if i + 1 < len(toks) else "",
             _before(toks, i)) for i, t in enumerate(toks)]


def _before(toks, i) -> str:
    if not i:
        return ""
    t = toks[i - 1]
    return t.string + " " if t.string == "@" and t.line[:t.start[1]].strip() else t.string


def expected_scope(kind, text, after, before) -> str | None:
    if kind == tokenize.COMMENT:
        return "comment.line.number-sign.tl"
    if kind == tokenize.STRING:
        return "string.quoted."
    if kind == tokenize.NUMBER:
        return "constant.numeric."
    if kind != tokenize.NAME or before == ".":
        return None
    if before == "@":
        return "entity.name.function.decorator.tl"
    if before == "def":
        return "entity.name.function.tl"
    if text in SCOPE_OF_WORD:
        return SCOPE_OF_WORD[text]
    if text in BUILTIN_VALUES and after != "=" and before not in ("import", ","):
        return "support.function.builtin.tl"
    return None


@pytest.mark.slow  # npm fetches the tokenizer on a fresh machine: the slow run, which CI makes
def test_every_example_and_std_source_tokenizes_with_the_scopes_python_finds(tokens):
    checked = {}
    for path in SOURCES:
        lines = tokens[path]
        assert len(lines) == len(path.read_text().split("\n"))
        for kind, text, line, col, after, before in python_tokens(path):
            want = expected_scope(kind, text, after, before)
            if want is None:
                continue
            got = scopes_at(lines[line - 1], col)
            assert any(s.startswith(want) for s in got), f"{path.name}:{line}:{col + 1} {text!r}: {got}, want {want}"
            checked[want] = checked.get(want, 0) + 1
    # each kind of token was met, so that the loop above checked something of each
    assert set(checked) == {"comment.line.number-sign.tl", "string.quoted.", "constant.numeric.",
                            "entity.name.function.decorator.tl", "entity.name.function.tl",
                            "support.function.builtin.tl", "support.type.dtype.tl", "keyword.control.flow.tl",
                            "keyword.control.import.tl", "keyword.operator.logical.tl", "constant.language.tl",
                            "storage.type.function.tl"}, checked


@pytest.mark.slow  # npm fetches the tokenizer on a fresh machine: the slow run, which CI makes
def test_a_hash_inside_a_string_and_numbers_of_every_form(tmp_path, tokens):
    source = tmp_path / "forms.tl"
    source.write_text('print("a # b", x)  # done\nN = 0x1F + 1_000 + 2.5e-3 + 3. + .5\n')
    res = subprocess.run(["node", str(EXTENSION / "test" / "tokenize.js"), str(source)], capture_output=True, text=True,
                         timeout=120, env={**os.environ, "NODE_PATH": str(node_modules())})
    lines = json.loads(res.stdout)[str(source)]
    assert "string.quoted.double.tl" in scopes_at(lines[0], 9)  # the '#' in the string
    assert "comment.line.number-sign.tl" in scopes_at(lines[0], 19)
    text = source.read_text().split("\n")[1]
    for number, kind in [("0x1F", "hex"), ("1_000", "integer"), ("2.5e-3", "float"), ("3.", "float"), (".5", "float")]:
        start = text.rindex(number)
        token = next(t for t in lines[1] if t[0] == start)
        assert (text[token[0]:token[1]], f"constant.numeric.{kind}.tl" in token[2]) == (number, True), token


def test_the_grammar_names_tlc_builtins_dtypes_and_decorators():
    repo = GRAMMAR["repository"]
    words = lambda pattern: set(re.search(r"\((?:\?:)?(\w+(?:\|\w+)+)\)", pattern).group(1).split("|"))
    assert words(repo["builtin"]["match"]) == set(BUILTIN_VALUES)
    assert words(repo["type"]["patterns"][0]["match"]) == set(DTYPES) | set(ALIASES)
    assert words(repo["decorator"]["match"]) == set(DECORATORS)


def test_the_extension_declares_its_files_and_starts_tlc_lsp():
    package = json.loads((EXTENSION / "package.json").read_text())
    contributes = package["contributes"]
    assert contributes["languages"][0]["extensions"] == [".tl"]
    for path in [contributes["languages"][0]["configuration"], contributes["grammars"][0]["path"],
                 contributes["snippets"][0]["path"], package["main"]]:
        assert (EXTENSION / path).is_file(), path
    assert contributes["configuration"]["properties"]["tlc.command"]["default"] == ["tlc", "lsp"]
    assert sorted(f"{k}@{v.lstrip('^')}" for k, v in package["devDependencies"].items()) == sorted(PACKAGES)
    if shutil.which("node"):  # the client's script parses (running it needs VS Code itself)
        res = subprocess.run(["node", "--check", str(EXTENSION / package["main"])], capture_output=True, text=True)
        assert res.returncode == 0, res.stderr
    config = json.loads((EXTENSION / "language-configuration.json").read_text())
    assert config["comments"] == {"lineComment": "#"}
    assert ["[", "]"] in config["brackets"]
    indent = re.compile(config["indentationRules"]["increaseIndentPattern"])
    assert indent.match("    for k in pipelined(cdiv(K, BK), stages=3):") and not indent.match("    copy(a, b)")


def expand(body: list[str], indent: str = "") -> str:
    """A snippet as VS Code inserts it with every placeholder left at its default (tabs as 4
    spaces, `$N` as placeholder N's default)."""
    text = "\n".join(body).replace("\t", "    ")
    defaults = dict(re.findall(r"\$\{(\d+):([^}]*)\}", text))
    text = re.sub(r"\$\{(\d+):([^}]*)\}", lambda m: m.group(2), text)
    text = re.sub(r"\$(\d+)", lambda m: defaults.get(m.group(1), ""), text)
    return "\n".join(indent + line if line else line for line in text.split("\n"))


def test_the_snippets_expand_to_code_tlc_check_accepts():
    from tlc.lsp.analysis import check  # tlc check: the type check, then scheduled for sm_80

    snippets = json.loads((EXTENSION / "snippets" / "tl.json").read_text())
    kernel = expand(snippets["kernel"]["body"])
    grid = expand(snippets["grid"]["body"], "    ").replace("        \n", "")
    gemm = expand(snippets["pipelined gemm loop"]["body"], "        ")
    program = kernel + "\n@kernel\ndef gemm_tile(A: T[M, K], B: T[K, N], C: T[M, N], T: dtype = f16, BM: const = 128, " \
        "BN: const = 128, BK: const = 32):\n" + grid.rstrip() + "\n" + gemm + "\n"
    result = check(program, "<snippets>")
    assert result.diagnostics == [], program
    assert sorted(f.name for f in result.program.functions.values()) == ["gemm_tile", "name"]
