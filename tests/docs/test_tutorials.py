"""docs/tutorials/ runs as written: each tutorial's fenced blocks, in order, in a fresh folder.

The blocks' info strings say what a block is (docs/tutorials/README.md, "How the tutorials are
tested"):

- ```tl file=NAME.tl``` is written to NAME.tl;
- ```sh``` runs in bash (`-e -o pipefail`) with the installed `tlc` on PATH; `status=N` is the
  exit status it must end with (default 0);
- ```python``` runs in one namespace per tutorial, in the tutorial's folder;
- a bare ``` block right after an sh or python block is what that block prints (stdout and
  stderr together), compared line by line after trailing spaces are dropped: a line that is
  `...` stands for any number of lines, and `...` inside a line for any text (times, paths);
- `gpu` marks a block that needs the GPU, run only by the `gpu` test of its tutorial, which runs
  the `tl` blocks and the `gpu` blocks (a gpu block needs nothing but the files before it);
- `slow` marks a block that runs nvcc, run only by the `slow` test.

An info string this file does not know fails the test, so a block cannot be left out by a typo.
"""
from __future__ import annotations

import contextlib
import io
import itertools
import os
import re
import shutil
import subprocess
import sys
import types
from dataclasses import dataclass, field
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs" / "tutorials"

# (file, the Python modules it needs beyond tlc's own dependencies)
TUTORIALS = [
    ("01-first-kernel.md", ()),
    ("02-gemm.md", ()),
    ("03-fusion.md", ()),
    ("04-tuning.md", ()),
    ("05-pytorch.md", ("torch",)),
]
KINDS = {"tl", "sh", "python"}
FLAGS = {"gpu", "slow"}
_runs = itertools.count()


@dataclass
class Block:
    kind: str
    text: str
    line: int
    file: str | None = None
    status: int = 0
    flags: set = field(default_factory=set)
    output: str | None = None  # the bare block after it: what it prints


def parse_info(info: str, where: str) -> dict:
    kind, *words = info.split()
    assert kind in KINDS, f"{where}: unknown block kind {kind!r} (one of {sorted(KINDS)} or a bare output block)"
    out = {"kind": kind, "flags": set()}
    for w in words:
        key, eq, value = w.partition("=")
        if eq and key == "file" and kind == "tl":
            out["file"] = value
        elif eq and key == "status" and kind == "sh" and value.isdigit():
            out["status"] = int(value)
        elif not eq and w in FLAGS:
            out["flags"].add(w)
        else:
            raise AssertionError(f"{where}: unknown word {w!r} in the info string {info!r}")
    assert kind != "tl" or "file" in out, f"{where}: a tl block needs file=NAME.tl"
    return out


def blocks(path: Path) -> list[Block]:
    """The fenced blocks of `path`, each bare block attached to the sh or python block before
    it as its output."""
    found: list[Block] = []
    lines = path.read_text().splitlines(keepends=True)
    i = 0
    while i < len(lines):
        if not lines[i].startswith("```"):
            i += 1
            continue
        info, start = lines[i][3:].strip(), i + 1
        i += 1
        while not lines[i].startswith("```"):
            i += 1
        text = "".join(lines[start:i])
        where = f"{path.name}:{start}"
        i += 1
        if not info:
            before = found[-1] if found else None
            assert before is not None and before.kind in ("sh", "python") and before.output is None, \
                f"{where}: an output block must follow an sh or python block"
            before.output = text
            continue
        found.append(Block(text=text, line=start, **parse_info(info, where)))
    return found


def expected_pattern(output: str) -> re.Pattern:
    """The regex of an output block: `...` alone on a line matches any lines, within a line
    any text."""
    parts = []
    for line in output.splitlines():
        line = line.rstrip()
        if line == "...":
            parts.append(r"(?:[^\n]*\n)*?")
        else:
            parts.append(".*".join(re.escape(p) for p in line.split("...")) + r"\n")
    return re.compile("".join(parts))


def check_output(block: Block, where: str, got: str) -> None:
    got = "".join(line.rstrip() + "\n" for line in got.splitlines())
    if block.output is not None:
        assert expected_pattern(block.output).fullmatch(got), \
            f"{where} printed:\n{got}\nwhere the tutorial shows:\n{block.output}"


def tlc_path(folder: Path) -> str:
    """PATH with the installed `tlc` (the console script beside this Python) first; where tlc
    is importable but not installed (a checkout on PYTHONPATH), a shim running `python -m
    tlc.cli`."""
    path = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])
    if shutil.which("tlc", path=path) is None:
        shim = folder / ".bin" / "tlc"
        shim.parent.mkdir(exist_ok=True)
        shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m tlc.cli "$@"\n')
        shim.chmod(0o755)
        path = os.pathsep.join([str(shim.parent), path])
    return path


@contextlib.contextmanager
def in_folder(folder: Path):
    cwd = os.getcwd()
    os.chdir(folder)
    try:
        yield
    finally:
        os.chdir(cwd)


QUIET = " 2>/dev/null"


def tlc_lines(text: str) -> list[tuple[list[str], bool]] | None:
    """The argument lists of an sh block whose every line is a plain `tlc ...` command (no
    pipe, redirection but a last `2>/dev/null`, or variable), each with whether it prints its
    stderr; else None."""
    commands = []
    for line in text.splitlines():
        if not line.strip():
            continue
        quiet = line.endswith(QUIET)
        line = line.removesuffix(QUIET)
        if set(line) & set("|&;<>$`*?\\'\"#(){}") or not line.startswith("tlc "):
            return None
        commands.append((line.split()[1:], not quiet))
    return commands


def run_in_process(commands: list, folder: Path) -> tuple[int, str]:
    """The commands through click's test runner in this process (as bash -e runs them: up to
    the first that fails), saving a new Python and tlc's import for each: the exit status and
    what they printed, stdout and stderr interleaved."""
    from click.testing import CliRunner

    from tlc import cli

    printed, status = "", 0
    with in_folder(folder):
        for args, with_stderr in commands:
            result = CliRunner().invoke(cli.main, args, prog_name="tlc")
            if result.exception is not None and not isinstance(result.exception, SystemExit):
                raise result.exception
            printed += result.output if with_stderr else result.stdout
            status = result.exit_code
            if status:
                break
    return status, printed


def run_tutorial(path: Path, folder: Path, mode: str) -> None:
    """Run `path`'s blocks in `folder`: mode "cpu" the blocks without a flag, "slow" those and
    the slow ones, "gpu" the tl blocks and the gpu ones."""
    env = {**os.environ, "PATH": tlc_path(folder)}
    if mode == "slow":  # the toolkit's nvcc, found where tlc build finds it
        from tlc.runtime.compile import find_nvcc

        env["PATH"] = os.pathsep.join([env["PATH"], str(Path(find_nvcc()).parent)])
    namespace = f"tut{next(_runs)}_{mode}"  # torch operator names are registered once per process
    # The blocks run as one real module, as a user's script does: torch.compile's guards import
    # the module that defines the functions they trace, so a bare namespace fails there.
    module = types.ModuleType(namespace)
    sys.modules[namespace] = module
    try:
        run_blocks(path, folder, mode, env, namespace, module.__dict__)
    finally:
        del sys.modules[namespace]


def run_blocks(path: Path, folder: Path, mode: str, env: dict, namespace: str, scope: dict) -> None:
    ran = 0
    for block in blocks(path):
        where = f"{path.name}:{block.line}"
        if block.kind == "tl":
            (folder / block.file).write_text(block.text)
            continue
        wanted = {"cpu": not block.flags, "slow": "gpu" not in block.flags, "gpu": "gpu" in block.flags}[mode]
        if not wanted:
            continue
        ran += 1
        if block.kind == "sh":
            commands = tlc_lines(block.text) if mode == "cpu" else None
            if commands is not None:
                status, printed = run_in_process(commands, folder)
            else:
                res = subprocess.run(["bash", "-e", "-o", "pipefail", "-c", block.text], cwd=folder, env=env,
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=600)
                status, printed = res.returncode, res.stdout
            print(f"{where}\n{block.text}{printed}")  # shown by pytest -rP: what a gpu block measured
            assert status == block.status, f"{where}: exit status {status}, the tutorial expects {block.status}\n{printed}"
            check_output(block, where, printed)
        else:
            out = io.StringIO()
            with in_folder(folder), contextlib.redirect_stdout(out):
                exec(compile(block.text.replace("mylib::", f"{namespace}::"), where, "exec"), scope)
            check_output(block, where, out.getvalue())
    assert ran, f"{path.name}: no block to run in mode {mode}"


def needs(modules) -> None:
    for m in modules:
        pytest.importorskip(m)


@pytest.mark.parametrize("name, modules", TUTORIALS)
def test_tutorial_runs_on_the_cpu(name, modules, tmp_path):
    needs(modules)
    run_tutorial(DOCS / name, tmp_path, "cpu")


# the tutorials with a slow (nvcc) block: the others have nothing more to run under -m slow
WITH_SLOW_BLOCKS = [(name, modules) for name, modules in TUTORIALS
                    if any("slow" in b.flags for b in blocks(DOCS / name))]


@pytest.mark.slow
@pytest.mark.nvcc
@pytest.mark.parametrize("name, modules", WITH_SLOW_BLOCKS)
def test_tutorial_runs_with_its_nvcc_blocks(name, modules, tmp_path):
    needs(modules)
    run_tutorial(DOCS / name, tmp_path, "slow")


@pytest.mark.gpu
@pytest.mark.parametrize("name, modules", TUTORIALS)
def test_tutorial_runs_on_the_gpu(name, modules, tmp_path):
    needs(modules)
    run_tutorial(DOCS / name, tmp_path, "gpu")


def test_the_index_links_every_tutorial_and_the_readme_links_the_index():
    index = (DOCS / "README.md").read_text()
    assert sorted(p.name for p in DOCS.glob("*.md") if p.name != "README.md") == [n for n, _ in TUTORIALS]
    for name, _ in TUTORIALS:
        assert f"]({name})" in index, name
    assert "](docs/tutorials/README.md)" in (ROOT / "README.md").read_text()


@pytest.mark.parametrize("name", [n for n, _ in TUTORIALS] + ["README.md"])
def test_every_relative_link_leads_to_a_file(name):
    links = re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", (DOCS / name).read_text())
    assert links
    for link in links:
        if "://" not in link:
            assert (DOCS / link).exists(), f"{name}: {link}"


@pytest.mark.parametrize("name, modules", TUTORIALS)
def test_every_tutorial_has_cpu_and_gpu_blocks(name, modules):
    found = blocks(DOCS / name)
    assert any(b.kind == "tl" for b in found) or name == "05-pytorch.md"
    assert any(not b.flags and b.kind != "tl" for b in found) and any("gpu" in b.flags for b in found)


# The runner itself: a block that fails, prints something else, or ends with another status
# fails the test.
GOOD = """\
```tl file=a.tl
x
```
```sh
cat a.tl; echo took 3.2 s
```
```
x
took ... s
```
```python
print("one"); print("two")
```
```
...
two
```
```sh status=1
tlc check a.tl
```
```
a.tl:1:2: ...
...
error: 1 error in a.tl
```
"""


@pytest.mark.parametrize("change, message", [
    (None, None),
    (("cat a.tl;", "cat b.tl;"), "exit status 1"),
    (("echo took", "echo TOOK"), "printed"),
    (("print(\"one\"); print(\"two\")", "print(\"one\")"), "printed"),
    (("print(\"one\");", "assert False, 'boom';"), "boom"),
    (("```sh\n", "```sh status=1\n"), "exit status 0"),
    (("```sh status=1\n", "```sh\n"), "exit status 1"),
    (("error: 1 error", "error: 2 errors"), "printed"),
    (("```python\n", "```pyhton\n"), "unknown block kind"),
    (("```sh\n", "```sh gpuu\n"), "unknown word"),
])
def test_the_runner_fails_on_a_wrong_block(tmp_path, change, message):
    text = GOOD if change is None else GOOD.replace(*change)
    doc = tmp_path / "doc.md"
    doc.write_text(text)
    folder = tmp_path / "run"
    folder.mkdir()
    if message is None:
        run_tutorial(doc, folder, "cpu")
        return
    with pytest.raises(AssertionError, match=message):
        run_tutorial(doc, folder, "cpu")
