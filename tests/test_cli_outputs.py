"""What `tlc build -o/--header` and `tlc run --out` do to the files they are given: a regular
file is replaced atomically, a device or a pipe is written in place and stays one, a read-only
file is refused, and several outputs are all written or none.  Each failure is one line naming
the file, with exit status 2 (the README's usage status)."""
from __future__ import annotations

import os
import stat
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from file_kit import LIMIT_S, fifo, is_char_device, is_fifo, tlc as tlc_process
from tlc import cli, files

VECTOR_ADD = str(Path(__file__).resolve().parents[1] / "examples" / "vector_add.tl")
TWO_OUTPUTS = """\
@kernel
def two(x: f32[N], a: f32[N], b: f32[N], BLOCK: const = 128):
    with grid(cdiv(N, BLOCK), threads=128) as bx:
        xs = fragment(f32[BLOCK])
        copy(x[bx * BLOCK], xs)
        copy(xs, a[bx * BLOCK])
        copy(xs, b[bx * BLOCK])
"""


def tlc(*args):
    return CliRunner().invoke(cli.main, [str(a) for a in args])


def run_two(tmp_path, *outs):
    src = tmp_path / "two.tl"
    src.write_text(TWO_OUTPUTS)
    return tlc("run", src, "-k", "two", "--target", "interp", "--shape", "N=5", *[a for o in outs for a in ("--out", o)])


def build(*args):
    return tlc("build", VECTOR_ADD, *args)


def assert_usage_error(result, message: str):
    assert (result.exit_code, result.stdout, result.stderr) == (2, "", message + "\n"), result.output


def read_only(path: Path, text: str) -> Path:
    path.write_text(text)
    path.chmod(0o444)
    return path


def test_out_to_dev_full_says_no_space_and_leaves_the_device():
    result = tlc("run", VECTOR_ADD, "-k", "vector_add", "--target", "interp", "--shape", "N=7", "--in", "alpha=2",
                 "--out", "out=/dev/full")
    assert_usage_error(result, "error: --out: cannot write /dev/full: No space left on device")
    assert is_char_device("/dev/full")


def test_out_to_dev_null_is_written_in_place(tmp_path):
    result = run_two(tmp_path, f"a={tmp_path / 'a.npy'}", "b=/dev/null")
    assert result.exit_code == 0, result.output
    assert is_char_device("/dev/null") and np.load(tmp_path / "a.npy").shape == (5,)


def test_build_into_a_fifo_writes_through_it(tmp_path):
    """The reader gets the generated file; the FIFO is still a FIFO (not replaced by a regular
    file).  In a child process with a time limit, so a regression cannot hang the suite."""
    pipe = fifo(tmp_path / "pipe")
    got = []
    reader = threading.Thread(target=lambda: got.append(Path(pipe).read_text()), daemon=True)
    reader.start()
    result = tlc_process("build", VECTOR_ADD, "-o", pipe)
    reader.join(30)
    assert result.returncode == 0, result.stderr
    assert is_fifo(pipe)
    assert got and got[0] == build().stdout and "__global__" in got[0]


def test_build_to_dev_stdout_writes_through_the_descriptor(tmp_path):
    """Into a pipe (was: 'cannot write into /proc/PID/fd'), and into a file the shell opened for
    appending (>>), whose text before stays."""
    want = build().stdout
    result = tlc_process("build", VECTOR_ADD, "-o", "/dev/stdout")
    assert (result.returncode, result.stdout) == (0, want), result.stderr
    log = tmp_path / "log.cu"
    log.write_text("// before\n")
    with open(log, "a") as out:
        result = subprocess.run([sys.executable, "-m", "tlc.cli", "build", VECTOR_ADD, "-o", "/dev/stdout"],
                                stdout=out, stderr=subprocess.PIPE, text=True, timeout=LIMIT_S)
    assert result.returncode == 0, result.stderr
    assert log.read_text() == "// before\n" + want


def test_a_read_only_file_is_not_replaced(tmp_path):
    target = read_only(tmp_path / "k.cu", "mine")
    assert_usage_error(build("-o", target), f"error: cannot write {target}: the file is read-only")
    assert target.read_text() == "mine" and stat.S_IMODE(target.stat().st_mode) == 0o444
    assert os.listdir(tmp_path) == ["k.cu"]


def test_a_regular_file_keeps_its_mode(tmp_path):
    target = tmp_path / "k.cu"
    target.write_text("old")
    target.chmod(0o640)
    assert build("-o", target).exit_code == 0
    assert "__global__" in target.read_text() and stat.S_IMODE(target.stat().st_mode) == 0o640


def test_a_link_to_a_regular_file_stays_a_link(tmp_path):
    real = tmp_path / "real.cu"
    real.write_text("old")
    link = tmp_path / "link.cu"
    link.symlink_to(real)
    assert build("-o", link).exit_code == 0
    assert link.is_symlink() and "__global__" in real.read_text()


def test_output_and_header_both_or_neither(tmp_path):
    out = tmp_path / "k.cu"
    out.write_text("old")
    header = read_only(tmp_path / "k.h", "old header")
    assert_usage_error(build("-o", out, "--header", header), f"error: cannot write {header}: the file is read-only")
    assert out.read_text() == "old" and header.read_text() == "old header"
    assert sorted(os.listdir(tmp_path)) == ["k.cu", "k.h"]


@pytest.mark.parametrize("second", ["read-only", "missing-folder", "dev-full"])
def test_several_outs_are_all_written_or_none(tmp_path, second):
    first = tmp_path / "a.npy"
    first.write_text("old")
    where, message = {
        "read-only": lambda: (read_only(tmp_path / "b.npy", "old b"), "the file is read-only"),
        "missing-folder": lambda: (tmp_path / "no" / "b.npy", None),
        "dev-full": lambda: (link_to_dev_full(tmp_path), "No space left on device"),
    }[second]()
    result = run_two(tmp_path, f"a={first}", f"b={where}")
    expected = (f"error: --out: cannot write {where}: {message}" if message
                else f"error: --out: cannot write into {tmp_path / 'no'}: No such file or directory")
    assert_usage_error(result, expected)
    assert first.read_text() == "old"
    left = {"read-only": ["b.npy"], "missing-folder": [], "dev-full": ["full"]}[second]
    assert sorted(os.listdir(tmp_path)) == sorted(["a.npy", "two.tl", *left])
    assert is_char_device("/dev/full")


def link_to_dev_full(tmp_path) -> Path:
    """Through a link, so that a regression replaces the link, not the machine's /dev/full."""
    link = tmp_path / "full"
    link.symlink_to("/dev/full")
    return link


def test_write_all_writes_every_file(tmp_path):
    files.write_all([(tmp_path / "x", "text"), (tmp_path / "y", b"\x00bytes")])
    assert (tmp_path / "x").read_text() == "text" and (tmp_path / "y").read_bytes() == b"\x00bytes"
    assert sorted(os.listdir(tmp_path)) == ["x", "y"]
