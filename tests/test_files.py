"""tlc/files.py's reading rule: only a regular file is read, decided on the open descriptor, so a
name that changes between the check and the open (a FIFO swapped in) is still refused."""
from __future__ import annotations

import os

import pytest

from file_kit import fifo
from tlc import files


def test_a_regular_file_is_read(tmp_path):
    (tmp_path / "f").write_bytes(b"text")
    assert files.read_regular(tmp_path / "f") == b"text"
    assert files.read_regular(tmp_path / "f", follow_symlinks=False, limit=4) == b"text"


@pytest.mark.parametrize("make, kind, follow", [
    (fifo, "a FIFO", True),
    (os.mkdir, "a directory", True),
    (lambda p: os.symlink("/dev/zero", p), "a character device", True),
    (lambda p: os.symlink("/dev/zero", p), "a symbolic link", False),
])
def test_anything_else_is_refused_unread(tmp_path, make, kind, follow):
    make(tmp_path / "x")
    with pytest.raises(files.NotRegularFile) as err:
        files.read_regular(tmp_path / "x", follow_symlinks=follow)
    assert str(err.value) == f"{tmp_path / 'x'} is {kind}, not a regular file"


def test_the_descriptor_decides_not_the_name(tmp_path, monkeypatch):
    """As if a FIFO replaced a regular file between the check by name and the open: the check
    on the descriptor refuses it (a read would return nothing, or block with a writer)."""
    (tmp_path / "regular").write_text("x")
    pipe = fifo(tmp_path / "pipe")
    real_stat = os.stat
    monkeypatch.setattr(os, "stat", lambda path, **kw: real_stat(tmp_path / "regular"))
    with pytest.raises(files.NotRegularFile, match="is a FIFO, not a regular file"):
        files.read_regular(pipe)


def test_a_file_past_the_limit_is_refused(tmp_path):
    (tmp_path / "big").write_bytes(b"x" * 11)
    with pytest.raises(files.FileTooLarge, match="big is larger than 10 bytes"):
        files.read_regular(tmp_path / "big", limit=10)


@pytest.mark.parametrize("limit, whole", [(100, True), (19, True), (18, False)])
def test_a_file_that_grew_after_its_size_was_read_is_read_whole_or_refused(tmp_path, monkeypatch, limit, whole):
    """read_regular reads the size fstat gave and one byte more (not `limit` bytes, which it
    would allocate first); a file that grew after fstat is read on to its end, within `limit`."""
    (tmp_path / "f").write_bytes(b"0123456789" + b"abcdefghi")  # 19 bytes, fstat says 5
    real_fstat = os.fstat
    monkeypatch.setattr(os, "fstat", lambda fd: os.stat_result(real_fstat(fd)[:6] + (5,) + real_fstat(fd)[7:]))
    if whole:
        assert files.read_regular(tmp_path / "f", limit=limit) == b"0123456789abcdefghi"
    else:
        with pytest.raises(files.FileTooLarge, match="is larger than 18 bytes"):
            files.read_regular(tmp_path / "f", limit=limit)


@pytest.mark.parametrize("limit", [None, 3 << 20])
def test_a_file_of_several_reads_comes_back_whole(tmp_path, monkeypatch, limit):
    """read_regular reads by os.read in parts of at most 1 MiB (os.read allocates what it is
    asked for first): a file of several parts, and one that grew after fstat with no limit, come
    back whole."""
    data = bytes(range(256)) * 10_000 + b"end"  # 2.4 MiB: three parts
    (tmp_path / "f").write_bytes(data)
    assert files.read_regular(tmp_path / "f", limit=limit) == data
    real_fstat = os.fstat
    monkeypatch.setattr(os, "fstat", lambda fd: os.stat_result(real_fstat(fd)[:6] + (5,) + real_fstat(fd)[7:]))
    assert files.read_regular(tmp_path / "f", limit=limit) == data


def test_a_file_of_the_size_fstat_gave_is_one_read(tmp_path, monkeypatch):
    """A cached first call reads five files: each is one os.read of its size and a byte more,
    which comes back with the size (its end), and no second read to find the end (issue #15);
    a read that comes back short of that size reads on to the end."""
    (tmp_path / "f").write_bytes(b"0123456789")
    real_read, asked = os.read, []
    monkeypatch.setattr(os, "read", lambda fd, n: asked.append(n) or real_read(fd, n))
    assert files.read_regular(tmp_path / "f", limit=100) == b"0123456789" and asked == [11]
    asked.clear()
    monkeypatch.setattr(os, "read", lambda fd, n: asked.append(n) or real_read(fd, min(n, 4)))  # short reads
    assert files.read_regular(tmp_path / "f", limit=100) == b"0123456789" and asked[0] == 11 and len(asked) == 4


def test_read_whole_reads_a_file_in_one_read_a_pipe_to_its_limit_and_refuses_a_directory(tmp_path, monkeypatch):
    """`read_whole` (driver.read_source's read): a regular file by open, fstat, one read and
    close, as open() would give its bytes; a FIFO up to the limit and one byte more; a directory
    is IsADirectoryError, as open() raises."""
    import threading

    (tmp_path / "f").write_bytes(b"x = 1\r\n")
    real_read, asked = os.read, []
    monkeypatch.setattr(os, "read", lambda fd, n: asked.append(n) or real_read(fd, n))
    assert files.read_whole(tmp_path / "f", 10) == (b"x = 1\r\n", True) and asked == [8]
    monkeypatch.setattr(os, "read", real_read)
    with pytest.raises(IsADirectoryError):
        files.read_whole(tmp_path, 10)
    pipe = tmp_path / "pipe"
    os.mkfifo(pipe)
    writer = threading.Thread(target=lambda: pipe.write_bytes(b"0123456789" * 3))
    writer.start()
    assert files.read_whole(pipe, 10) == (b"0123456789" + b"0", False)
    writer.join()
