"""What the commands that read the .run_records tree share: options and small formatters.

The commands live one per module: show.py (its listing, compile, pass, HTML, profile
modes), diffruns.py and clean.py. Each parses, makes one call into the core (history:
runs, compare, retention), prints a table or JSON, and exits. Errors are one line on
stderr: `tltrace: error: ...`.
"""

from __future__ import annotations

import shlex
import sys
from typing import Any

from .shared import fail as _fail
from .shared import kernel_option, no_such_option, trace_dir_option


def _check_args(args: list[str]) -> None:
    for a in args:
        if a.startswith("--") or (a.startswith("-") and not a[1:].isdigit() and len(a) > 1):
            raise _fail(no_such_option(a))


def _print_json(data: Any) -> None:
    from ..render.safejson import dumps

    sys.stdout.write(dumps(data, indent=2, default=str) + "\n")


def _when(ts: object) -> str:
    from ..history.runs import format_time

    return format_time(ts)


def _command_line(command: list[str] | None) -> str:
    """Return a recorded command line as one shell-quoted string (copy-pastable)."""
    return shlex.join([str(c) for c in command or []])


def _t(value: object, style: str = "") -> Any:
    """Return data as a Rich Text: never parsed as markup (names may hold '[/x]')."""
    from rich.text import Text

    return Text("" if value is None else str(value), style=style)


def _ms(seconds: object) -> str:
    """Return a pass duration in ms for the table; '?' for a hand-edited NaN, Infinity or 1e300."""
    from ..history.profile import _finite

    if not _finite(seconds) or seconds < 0:  # type: ignore[operator]
        return "?"
    return f"{float(seconds) * 1000:.2f}"  # type: ignore[arg-type]


def _size(n: int) -> str:
    from ..render.terminal import human_size  # the one byte formatter; imported late, like the views

    return human_size(n)


TRACE_DIR_OPT = trace_dir_option()

KERNEL_OPT = kernel_option("Only compiles of kernel NAME (a script may compile several).")

_STATUS_STYLE = {
    "complete": "green",
    "error": "red",
    "damaged": "bold red",
    "interrupted": "yellow",
    "running": "cyan",
}
