"""The `tlc` command line: exit statuses (0 clean, 1 diagnostics, 2 usage, 3 internal error),
where each message goes, `--json` and `--version`."""
from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest
from click.testing import CliRunner

import file_kit
import tlc
from tlc import cli

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"

BAD = "def f(x: f32) -> f32:\n    return x +\n\n@kernel\ndef k(A: f32[N]):\n    pass\n"


def run(*args):
    return CliRunner().invoke(cli.main, list(args))


@pytest.fixture
def bad_file(tmp_path):
    path = tmp_path / "bad.tl"
    path.write_text(BAD)
    return str(path)


@pytest.mark.parametrize("example", sorted(p.name for p in EXAMPLES.glob("*.tl")))
def test_examples_check_clean(example):
    path = str(EXAMPLES / example)
    result = run("check", path)
    assert (result.exit_code, result.stdout, result.stderr) == (0, "", f"{path}: ok\n")


def test_every_documented_example_exists():
    names = {p.stem for p in EXAMPLES.glob("*.tl")}
    assert {"vector_add", "gemm", "softmax", "layernorm", "linear_gelu"} <= names


def test_diagnostics_exit_1_with_rendered_text_and_summary(bad_file):
    result = run("check", bad_file)
    assert result.exit_code == 1
    assert result.stdout == ""
    assert result.stderr == (
        f"{bad_file}:2:15: error[E002]: unexpected end of line; expected one of '(', '+', '-', "
        "'False', 'True', '[', '~', a name, ...\n"
        "  |\n"
        "2 |     return x +\n"
        "  |               ^\n"
        "\n"
        f"error: 1 error in {bad_file}\n")


def test_prints_what_the_driver_renders_and_counts_errors(tmp_path, rendered):
    text = "def f(x: f32) -> f32:\n    return x + undefined_a + undefined_b\n"
    path = tmp_path / "two.tl"
    path.write_text(text)
    result = run("check", str(path))
    assert result.exit_code == 1
    assert rendered(text, str(path)).count("error[") == 2
    assert result.stderr == rendered(text, str(path)) + f"\n\nerror: 2 errors in {path}\n"


def test_json_lines_on_stdout(bad_file):
    result = run("check", "--json", bad_file)
    assert result.exit_code == 1
    (line,) = result.stdout.splitlines()
    record = json.loads(line)
    assert {k: record[k] for k in ("severity", "code", "file", "line", "col")} == {
        "severity": "error", "code": "E002", "file": bad_file, "line": 2, "col": 15}
    assert record["message"].startswith("unexpected end of line")
    assert result.stderr == f"error: 1 error in {bad_file}\n"


def test_json_of_a_clean_file_is_empty():
    result = run("check", str(EXAMPLES / "gemm.tl"), "--json")
    assert (result.exit_code, result.stdout) == (0, "")


def test_missing_file_is_a_usage_error(tmp_path):
    missing = str(tmp_path / "nope.tl")
    result = run("check", missing)
    assert (result.exit_code, result.stdout, result.stderr) == (2, "", f"error: no such file: {missing}\n")


def test_directory_is_a_usage_error(tmp_path):
    result = run("check", str(tmp_path))
    assert result.exit_code == 2
    assert result.stderr == f"error: {tmp_path} is a directory, not a .tl file\n"


def test_a_stream_that_never_ends_is_a_usage_error():
    """/dev/zero is read up to a limit, not until the memory runs out (in a child process with a
    time limit, so that a regression fails instead of taking the machine)."""
    result = file_kit.tlc("check", "/dev/zero")
    assert (result.returncode, result.stdout) == (2, "")
    assert result.stderr == "error: /dev/zero is not a regular file and holds more than 64 MB: not a .tl file\n"


def test_a_pipe_is_read(tmp_path):
    result = file_kit.python("import subprocess, sys\n"
                             "sys.exit(subprocess.run([sys.executable, '-m', 'tlc.cli', 'check', '/dev/stdin'],"
                             " input=b'X: const = 1\\n').returncode)")
    assert result.returncode == 0, result.stderr


def test_not_utf8_from_a_fifo_is_shown_as_read(tmp_path):
    """The line shown under the diagnostic comes from the text read, not from opening the FIFO a
    second time (which would wait for a writer that never comes)."""
    pipe = file_kit.fifo(tmp_path / "bad.tl")
    writer = threading.Thread(target=lambda: Path(pipe).write_bytes(b"X: const = 1 # \xff\n"), daemon=True)
    writer.start()
    result = file_kit.tlc("check", pipe)
    assert result.returncode == 1
    assert f"{pipe}:1:16: error[E001]: the file is not UTF-8 text (byte 0xff)" in result.stderr
    assert "1 | X: const = 1 # \ufffd" in result.stderr


def test_not_utf8_is_a_diagnostic(tmp_path):
    path = tmp_path / "bin.tl"
    path.write_bytes(b"\x89PNG\r\n")
    result = run("check", str(path))
    assert result.exit_code == 1
    assert "error[E001]: the file is not UTF-8 text (byte 0x89)" in result.stderr


@pytest.mark.parametrize("args", [[], ["check"], ["check", "a.tl", "b.tl"], ["check", "--nope", "a.tl"], ["nope"]])
def test_usage_errors_exit_2(args):
    result = run(*args)
    assert result.exit_code == 2
    assert "Traceback" not in result.output


@pytest.mark.parametrize("flag", ["--version", "-V"])
def test_version(flag):
    result = run(flag)
    assert (result.exit_code, result.stdout) == (0, f"tlc, version {tlc.__version__}\n")


def test_internal_error_is_reported_with_traceback(monkeypatch, bad_file):
    def broken(path):
        raise RuntimeError("the checker fell over")

    monkeypatch.setattr(cli, "check_file", broken)
    result = run("check", bad_file)
    assert result.exit_code == 3
    assert result.stderr.startswith("internal compiler error, please report it")
    assert "Traceback" in result.stderr and "RuntimeError: the checker fell over" in result.stderr
