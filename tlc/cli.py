"""The `tlc` command line: thin click commands over the driver (LANGUAGE.md section 7).

Owns parsing options, choosing stdout or stderr and the exit status: 0 clean, 1 the program
has errors, 2 a usage error (bad option, missing file), 3 an internal compiler error.  It
decides nothing about compiling; every message it prints was rendered by `tlc.diagnostics`.
"""
from __future__ import annotations

import traceback
from contextlib import contextmanager

import click

from . import __version__
from .diagnostics import DiagnosticError, TlcError, render_all, to_json_lines
from .driver import SourceError, check_file

EXIT_DIAGNOSTICS = 1
EXIT_USAGE = 2
EXIT_INTERNAL = 3


@contextmanager
def _reported_errors():
    """Turn every exception into a message and an exit status; only a bug shows a traceback."""
    try:
        yield
    except SourceError as e:
        _fail(EXIT_USAGE, f"error: {e}")
    except DiagnosticError as e:
        _fail(EXIT_DIAGNOSTICS, render_all(e.diagnostics, e.sources))
    except TlcError as e:
        _fail(EXIT_DIAGNOSTICS, f"error: {e}")
    except Exception:  # noqa: BLE001 - the last line of defence: a compiler bug, not a user error
        _fail(EXIT_INTERNAL, "internal compiler error, please report it with the file that caused it:\n"
              + traceback.format_exc().rstrip())


def _fail(code: int, message: str):
    click.echo(message, err=True)
    raise click.exceptions.Exit(code)


def _count(diagnostics) -> str:
    n = len(diagnostics)
    return f"{n} error{'s' if n != 1 else ''}"


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "-V", "--version", prog_name="tlc")
def main() -> None:
    """tlc: compile TileLang text (.tl) to CUDA C."""


@main.command()
@click.argument("file")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per diagnostic on stdout.")
def check(file: str, as_json: bool) -> None:
    """Parse and type-check FILE and what it imports."""
    with _reported_errors():
        result = check_file(file)
    if result.ok:
        click.echo(f"{file}: ok", err=True)
        return
    if as_json:
        click.echo(to_json_lines(result.diagnostics))
    else:
        click.echo(render_all(result.diagnostics, result.sources) + "\n", err=True)
    _fail(EXIT_DIAGNOSTICS, f"error: {_count(result.diagnostics)} in {file}")


if __name__ == "__main__":  # pragma: no cover
    main()
