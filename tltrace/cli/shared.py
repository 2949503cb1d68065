"""What the CLI modules share: the one-line error, the warning line, the --trace-dir option.

Only the CLI prints; these are its common pieces, so that every command says
errors the same way and declares --trace-dir once.
"""

from __future__ import annotations

from typing import Any

import typer

from ..config import DEFAULT_TRACE_DIR
from ..errors import EXIT_USAGE

TRACE_DIR_HELP = f"Trace directory [default: TL_LOWER_TRACE_DIR, else {DEFAULT_TRACE_DIR}]."


def trace_dir_option(help: str = TRACE_DIR_HELP) -> Any:
    """Return the --trace-dir option (one definition for every command)."""
    return typer.Option(None, "--trace-dir", metavar="DIR", help=help)


def error_line(message: str) -> str:
    """Return the one line an error prints: `tltrace: error: <first line of message>`."""
    first = str(message).strip().splitlines()[0] if str(message).strip() else "unknown error"
    return f"tltrace: error: {first}"


def fail(message: str, code: int = EXIT_USAGE) -> typer.Exit:
    """Print one error line on stderr and return the Exit to raise."""
    typer.echo(error_line(message), err=True)
    return typer.Exit(code)


def warn(message: str) -> None:
    typer.echo(f"tltrace: warning: {message}", err=True)
