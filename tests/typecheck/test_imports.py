"""Imports across files: std. and relative modules, aliases, cycles, errors inside imported files."""
import os

import pytest

from file_kit import fifo, tlc
from tlc.diagnostics import render_all
from tlc.driver import check_file


def write(tmp_path, name, text):
    p = tmp_path / name
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text)
    return str(p)


def test_relative_import_of_device_function_and_constant(tmp_path):
    write(tmp_path, "common.tl", "SCALE: const = 2.0\n\ndef twice(x: f32) -> f32:\n    return SCALE * x\n")
    main = write(tmp_path, "main.tl", "from .common import twice as tw, SCALE\n\n"
                 "def f(x: f32) -> f32:\n    return tw(x) + SCALE\n")
    r = check_file(main)
    assert r.ok, render_all(r.diagnostics, r.sources)
    f = r.program.function("f")
    assert f.kind == "device"
    assert r.program.function("tw").name == "twice"


def test_parent_relative_import_inside_the_main_files_folder(tmp_path):
    write(tmp_path, "lib/act.tl", "def relu(x: f32) -> f32:\n    return max(x, 0.0)\n")
    write(tmp_path, "app/layer.tl", "from ..lib.act import relu\n")
    main = write(tmp_path, "main.tl", "from .app.layer import relu\n")
    r = check_file(main)
    assert r.ok, render_all(r.diagnostics, r.sources)


def test_parent_relative_import_outside_it_needs_tlc_path(tmp_path, monkeypatch):
    write(tmp_path, "lib/act.tl", "def relu(x: f32) -> f32:\n    return max(x, 0.0)\n")
    main = write(tmp_path, "app/main.tl", "from ..lib.act import relu\n")
    r = check_file(main)
    assert render_all(r.diagnostics, r.sources) == (
        f"{main}:1:1: error[E140]: cannot import '..lib.act': {tmp_path}/lib/act.tl is outside {tmp_path}/app, "
        "the folder of the program's main file\n"
        "  |\n"
        "1 | from ..lib.act import relu\n"
        "  | ^^^^^^^^^^^^^^^^^^^^^^^^^^\n"
        "  = hint: relative imports reach that folder and those below it; list more folders in TLC_PATH")
    monkeypatch.setenv("TLC_PATH", f"/nowhere{os.pathsep}{tmp_path / 'lib'}")
    r = check_file(main)
    assert r.ok, render_all(r.diagnostics, r.sources)


def test_relative_imports_cannot_climb_to_the_root(tmp_path):
    """Dots past the file system's root stay at the root: still outside."""
    main = write(tmp_path, "main.tl", "from " + "." * 64 + "etc.passwd import x\n")
    r = check_file(main)
    assert [(d.code, d.message) for d in r.diagnostics] == [
        ("E140", f"cannot import '{'.' * 64}etc.passwd': /etc/passwd.tl is outside {tmp_path}, "
                 "the folder of the program's main file")]


def test_a_sibling_folder_with_the_same_prefix_is_outside(tmp_path):
    """`/x/app` does not contain `/x/app2`: folders are compared whole, not as text prefixes."""
    write(tmp_path, "app2/m.tl", "X: const = 1\n")
    main = write(tmp_path, "app/main.tl", "from ..app2.m import X\n")
    assert [d.code for d in check_file(main).diagnostics] == ["E140"]


# A FIFO would block the reader and /dev/zero never ends: the check runs in a child process with
# a time limit so that a regression fails instead of hanging.
@pytest.mark.parametrize("kind", ["fifo", "dev-zero", "directory"])
def test_an_import_that_is_not_a_regular_file_is_refused(tmp_path, kind):
    target = tmp_path / "other.tl"
    {"fifo": fifo, "dev-zero": lambda p: os.symlink("/dev/zero", p), "directory": os.mkdir}[kind](target)
    what = {"fifo": "a FIFO", "dev-zero": "a character device", "directory": "a directory"}[kind]
    main = write(tmp_path, "main.tl", "X: const = 1\nfrom .other import f\n")
    result = tlc("check", main)
    assert (result.returncode, result.stdout) == (1, "")
    assert result.stderr == (
        f"{main}:2:1: error[E141]: cannot import '.other': {target} is {what}, not a regular file\n"
        "  |\n"
        "2 | from .other import f\n"
        "  | ^^^^^^^^^^^^^^^^^^^^\n"
        "\n"
        f"error: 1 error in {main}\n")


def test_std_import():
    import tempfile, os
    with tempfile.TemporaryDirectory() as d:
        p = os.path.join(d, "m.tl")
        with open(p, "w") as f:
            f.write("from std.math import gelu, silu\n\ndef g(x: f32) -> f32:\n    return gelu(x) + silu(x)\n")
        r = check_file(p)
        assert r.ok, render_all(r.diagnostics, r.sources)


def test_import_cycle_is_reported_with_the_chain(tmp_path):
    a = write(tmp_path, "a.tl", "from .b import g\n\ndef f(x: f32) -> f32:\n    return x\n")
    write(tmp_path, "b.tl", "from .a import f\n\ndef g(x: f32) -> f32:\n    return x\n")
    r = check_file(a)
    text = render_all(r.diagnostics, r.sources)
    assert [d.code for d in r.diagnostics] == ["E027"]
    assert "error[E027]: import cycle: a.tl -> b.tl -> a.tl" in text
    assert r.diagnostics[0].span.file.endswith("b.tl")


def test_self_import(tmp_path):
    p = write(tmp_path, "self.tl", "from .self import x\n")
    r = check_file(p)
    assert [d.code for d in r.diagnostics] == ["E027"]
    assert r.diagnostics[0].message == "import cycle: self.tl -> self.tl"


def test_error_inside_imported_file_points_into_that_file(tmp_path):
    write(tmp_path, "bad.tl", "def f(x: f32) -> f32:\n    return y\n")
    main = write(tmp_path, "main.tl", "from .bad import f\n")
    r = check_file(main)
    text = render_all(r.diagnostics, r.sources)
    assert "bad.tl:2:12: error[E020]: unknown name 'y'" in text
    assert "2 |     return y" in text


def test_syntax_error_inside_imported_file(tmp_path):
    write(tmp_path, "bad.tl", "def f(x: f32) -> f32\n    return x\n")
    main = write(tmp_path, "main.tl", "from .bad import f\n")
    r = check_file(main)
    assert [d.code for d in r.diagnostics] == ["E002"]
    assert r.diagnostics[0].span.file.endswith("bad.tl")


def test_missing_relative_module(tmp_path):
    main = write(tmp_path, "main.tl", "from .nothere import f\n")
    r = check_file(main)
    assert r.diagnostics[0].code == "E026"
    assert r.diagnostics[0].message.startswith("cannot find the module '.nothere' (looked for ")


def test_name_imported_twice(tmp_path):
    write(tmp_path, "c.tl", "def f(x: f32) -> f32:\n    return x\n")
    main = write(tmp_path, "main.tl", "from .c import f\nfrom .c import f\n")
    r = check_file(main)
    assert [(d.code, d.message) for d in r.diagnostics] == [("E025", "'f' is imported twice")]
