"""Notebooks: `%load_ext tltrace`, then a `%%tltrace` cell traces the cell's compiles and shows them.

    %%tltrace [--mode html|both|terminal] [--trace-dir DIR] [--codegen-output FILE]
    kernel = tilelang.compile(func, ...)

The cell runs as it would without the magic; its compiles are one invocation
(enable() .. disable()), and at the end the invocation is displayed (reading.py's
`_repr_html_`: the compile's report in a sandboxed iframe, or a table of several)
and kept in the namespace as `_tltrace` (`_tltrace.compiles[0].passes[16].after`).
"""

from __future__ import annotations

import argparse
import shlex
from typing import Any


class _BadArgs(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    """argparse that raises instead of printing usage and exiting (SystemExit(2) read as `error: 2`)."""

    def error(self, message: str):  # type: ignore[override]
        raise _BadArgs(message)


_PARSER = _Parser(prog="%%tltrace", add_help=False, exit_on_error=False)
_PARSER.add_argument("--mode", default="html", choices=("html", "both", "terminal"))
_PARSER.add_argument("--trace-dir", default=None)
_PARSER.add_argument("--codegen-output", default=None)
_USAGE = "usage: %%tltrace [--mode html|both|terminal] [--trace-dir DIR] [--codegen-output FILE]"


def tltrace_cell(line: str, cell: str, shell: Any) -> Any:
    """Run `cell` in `shell` with tracing on; return the invocation it made (None when it compiled nothing)."""
    from ..errors import TltraceError
    from . import trace as api
    from .reading import load

    try:
        args = _PARSER.parse_args(shlex.split(line))
    except (argparse.ArgumentError, _BadArgs, ValueError) as exc:  # ValueError: shlex (an open quote)
        print(f"tltrace: error: %%tltrace: {exc}; {_USAGE}")
        return None
    if api.enabled() is not None:
        print("tltrace: error: tracing is already on (tltrace.enable()); %%tltrace would end that span")
        return None
    try:
        api.enable(
            mode=args.mode,
            trace_dir=args.trace_dir,
            codegen_output=args.codegen_output,
            quiet=args.mode == "html",
        )
    except TltraceError as exc:  # a refused --trace-dir or --codegen-output: one line, the cell not run
        print(f"tltrace: error: {exc}")
        return None
    settings = api.enabled()
    try:
        shell.run_cell(cell, store_history=False)
    finally:
        api.disable()
    if settings is None:
        return None
    try:
        trace = load(settings.trace_dir)
    except Exception:
        print(f"tltrace: the cell compiled no kernel (nothing under {settings.trace_dir})")
        return None
    mine = [inv for inv in trace.invocations if inv.id == settings.invocation]
    if not mine:
        print("tltrace: the cell compiled no kernel (a cache hit traces nothing)")
        return None
    return mine[0]


def load_ipython_extension(ipython: Any) -> None:
    """Register the `%%tltrace` cell magic (`%load_ext tltrace`)."""

    def tltrace(line: str, cell: str) -> None:
        inv = tltrace_cell(line, cell, ipython)
        if inv is not None:
            from IPython.display import display

            ipython.user_ns["_tltrace"] = inv
            display(inv)

    tltrace.__doc__ = __doc__
    ipython.register_magic_function(tltrace, "cell", "tltrace")
