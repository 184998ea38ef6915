"""Helpers for tests of files that are not what they seem (a FIFO, a link to /dev/zero, a
read-only file): the risky call runs in a child process with a time limit, so a regression that
blocks on a FIFO or reads /dev/zero forever fails the test instead of hanging the suite or
eating the machine's memory."""
from __future__ import annotations

import os
import stat
import subprocess
import sys

LIMIT_S = 60


def python(code: str, *args, env: dict | None = None, cwd=None) -> subprocess.CompletedProcess:
    """Run `code` in a fresh Python with `args` as sys.argv[1:]; raises TimeoutExpired (failing
    the test) after LIMIT_S seconds instead of hanging."""
    return subprocess.run([sys.executable, "-c", code, *map(str, args)], env={**os.environ, **(env or {})},
                          cwd=cwd, capture_output=True, text=True, timeout=LIMIT_S)


def tlc(*args, env: dict | None = None, cwd=None) -> subprocess.CompletedProcess:
    """The `tlc` command line in a child process, under the same time limit."""
    return python("import sys; from tlc.cli import main; sys.argv[0] = 'tlc'; main()", *args, env=env, cwd=cwd)


def fifo(path) -> str:
    os.mkfifo(path)
    return str(path)


def is_fifo(path) -> bool:
    return stat.S_ISFIFO(os.lstat(path).st_mode)


def is_char_device(path) -> bool:
    return stat.S_ISCHR(os.stat(path).st_mode)
