"""Reading and writing the files a user or the cache names, safely.

Owns two rules.  Reading: only a regular file is read; a FIFO, a device, a directory or a socket
(or a link to one, such as a link to /dev/zero) is refused before a byte is read, because the file
is opened without blocking and checked on its descriptor (`fstat`), not by a name that could
change between the check and the open.  Writing: a set of outputs is written all or none; a
regular (or missing) target gets a temporary file beside it that is renamed over it, so a reader
never sees half a file; a device or a pipe (`/dev/null`, a FIFO) is written in place and stays
what it is, and `/dev/stdout` (or `/dev/fd/N`) is written through the descriptor itself; a read-only file or a directory is refused.  Every failure is a
`FileError` naming the file.
"""
from __future__ import annotations

import os
import re
import stat
import tempfile

from .diagnostics import TlcError


class FileError(TlcError):
    """A file that cannot be read or written as asked (the CLI's usage status, 2)."""


class NotRegularFile(OSError):
    """A path that names something other than a regular file; `kind` says what."""

    def __init__(self, path: str, kind: str):
        super().__init__(f"{path} is {kind}, not a regular file")
        self.path, self.kind = path, kind


class FileTooLarge(OSError):
    """A regular file past the size its reader accepts (a cache entry that is not tlc's)."""


def file_kind(mode: int) -> str:
    """What a file of this mode is, as a sentence's object: 'a FIFO', 'a directory', ..."""
    for test, name in ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"), (stat.S_ISLNK, "a symbolic link")):
        if test(mode):
            return name
    return "not a regular file"


def read_regular(path, *, follow_symlinks: bool = True, limit: int | None = None) -> bytes:
    """The bytes of a regular file.  Raises `NotRegularFile` for anything else (without reading
    from it or blocking on it), OSError as open() does, and `FileTooLarge` past `limit` bytes."""
    # Checked by name first so that a device is not even opened (opening some has effects),
    # then again on the descriptor, which is what is read (the name may change in between).
    before = os.stat(path, follow_symlinks=follow_symlinks)
    if not stat.S_ISREG(before.st_mode):
        raise NotRegularFile(str(path), file_kind(before.st_mode))
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    if not follow_symlinks:
        flags |= os.O_NOFOLLOW
    try:
        fd = os.open(path, flags)
    except OSError as e:
        # O_NOFOLLOW on a link fails with ELOOP; say what it is rather than "too many levels".
        if not follow_symlinks and os.path.islink(path):
            raise NotRegularFile(str(path), "a symbolic link") from None
        raise e
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise NotRegularFile(str(path), file_kind(info.st_mode))
        if limit is not None and info.st_size > limit:
            raise FileTooLarge(f"{path} is larger than {limit} bytes")
        # (O_NONBLOCK left on: a regular file's reads never block, and setting it off was one
        # system call more of each of a cached first call's five reads, issue #15)
        # Its size and one byte more (a read of limit + 1 allocates that much first: a cache
        # entry's 1 GiB limit cost 0.1-0.2 ms), by os.read, not a file object (whose isatty() and
        # seek()s cost each read a few microseconds more): one read where it comes back with
        # the size fstat gave, which is the file's end; else (it grew, or a read came back
        # short) the rest, up to limit + 1, to the read that finds the end
        data = os.read(fd, info.st_size + 1)
        if len(data) != info.st_size:
            data += _read(fd, None if limit is None else limit + 1 - len(data))
        if limit is not None and len(data) > limit:  # it grew after fstat
            raise FileTooLarge(f"{path} is larger than {limit} bytes")
        return data
    finally:
        os.close(fd)


def read_whole(path, stream_limit: int) -> tuple[bytes, bool]:
    """(the bytes of `path`, whether it is a regular file), as open() and read() would give them:
    a regular file's by one os.read of its size and a byte more where that comes back with its
    size (open, fstat, read, close: a file object's open and read made nine system calls, and a
    cached first call reads its module so, issue #15), else to its end; a pipe's or a device's
    up to `stream_limit` + 1 bytes.  Raises OSError as open() does (IsADirectoryError for a
    directory, which os.open would open)."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
    try:
        info = os.fstat(fd)
        if stat.S_ISDIR(info.st_mode):
            raise IsADirectoryError(21, "Is a directory", str(path))
        if not stat.S_ISREG(info.st_mode):
            return _read(fd, stream_limit + 1), False
        data = os.read(fd, info.st_size + 1)
        return (data if len(data) == info.st_size else data + _read(fd, None)), True
    finally:
        os.close(fd)


_CHUNK = 1 << 20  # bytes: os.read allocates what it is asked for before it reads


def _read(fd: int, most: int | None) -> bytes:
    """Up to `most` bytes (None: all) from `fd`, to its end."""
    parts, got = [], 0
    while most is None or got < most:
        part = os.read(fd, _CHUNK if most is None else min(most - got, _CHUNK))
        if not part:
            break
        parts.append(part)
        got += len(part)
    return b"".join(parts)


def write_all(outputs) -> None:
    """Write every (path, text or bytes) of `outputs`, or none: each regular target is first
    staged as a temporary file beside it; then the devices and pipes are written in place; only
    when all of that succeeded are the temporary files renamed over their targets."""
    plan = [(str(path), content if isinstance(content, bytes) else content.encode()) for path, content in outputs]
    staged: list[tuple[str, str]] = []  # (temporary file, the target it replaces)
    try:
        in_place = []
        for path, data in plan:
            target = _writable_target(path)
            if target is None:
                in_place.append((path, data))
            else:
                staged.append((_stage(path, target, data), target))
        for path, data in in_place:
            _write_in_place(path, data)
        for tmp, target in staged:
            try:
                os.replace(tmp, target)
            except OSError as e:
                raise FileError(f"cannot write {target}: {e.strerror}") from None
    finally:
        for tmp, _ in staged:
            if os.path.lexists(tmp):
                os.unlink(tmp)


def _writable_target(path: str) -> str | None:
    """Where the temporary file of `path` is renamed to (the file a symbolic link points at, so
    the link stays), or None for a device, a pipe or a descriptor of this process, which are
    written in place."""
    if _inherited_fd(path) is not None:
        return None
    target = os.path.realpath(path) if os.path.islink(path) else path
    if target.startswith("/proc/"):  # a link only the kernel can resolve (a pipe:[...], say)
        return None
    try:
        info = os.stat(target)
    except FileNotFoundError:
        return target
    except OSError as e:
        raise FileError(f"cannot write {path}: {e.strerror}") from None
    if stat.S_ISDIR(info.st_mode):
        raise FileError(f"cannot write {path}: Is a directory")
    if not stat.S_ISREG(info.st_mode):
        return None
    # By the mode bits, not by trying: root may write anything, but a file marked read-only
    # was marked so on purpose.
    if not info.st_mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH) or not os.access(target, os.W_OK):
        raise FileError(f"cannot write {path}: the file is read-only")
    return target


def _stage(path: str, target: str, data: bytes) -> str:
    """A temporary file beside `target` holding `data`, with the mode the target has (or that a
    plain open() would give a new file: 0666 less the umask, not mkstemp's 0600)."""
    folder = os.path.dirname(os.path.abspath(target))
    try:
        fd, tmp = tempfile.mkstemp(prefix=".tlc-", dir=folder)
    except OSError as e:
        raise FileError(f"cannot write into {folder}: {e.strerror}") from None
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        try:
            mode = stat.S_IMODE(os.stat(target).st_mode)
        except FileNotFoundError:
            umask = os.umask(0)
            os.umask(umask)
            mode = 0o666 & ~umask
        os.chmod(tmp, mode)
    except OSError as e:
        os.unlink(tmp)
        raise FileError(f"cannot write {path}: {e.strerror}") from None
    return tmp


_INHERITED = re.compile(r"/dev/(stdout|stderr|fd/(\d+))|/proc/self/fd/(\d+)")


def _inherited_fd(path: str) -> int | None:
    """The descriptor `/dev/stdout`, `/dev/fd/N` or `/proc/self/fd/N` names.  Written through
    the descriptor itself: opening the name again would start at offset 0 of a file that the
    shell opened for appending (`>>`), or fail for a pipe."""
    match = _INHERITED.fullmatch(path)
    if match is None:
        return None
    return {"stdout": 1, "stderr": 2}.get(match[1]) or int(match[2] or match[3])


def _write_in_place(path: str, data: bytes) -> None:
    inherited = _inherited_fd(path)
    try:
        fd = inherited if inherited is not None else os.open(path, os.O_WRONLY | getattr(os, "O_CLOEXEC", 0))
    except OSError as e:
        raise FileError(f"cannot write {path}: {e.strerror}") from None
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
    except OSError as e:
        raise FileError(f"cannot write {path}: {e.strerror}") from None
    finally:
        if inherited is None:
            os.close(fd)
