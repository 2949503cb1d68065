"""Trace settings: what the flags and TL_LOWER_TRACE / TL_LOWER_TRACE_DIR ask for."""

from __future__ import annotations

import os
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

from .errors import UsageError

MODES = ("terminal", "html", "both")
DEFAULT_TRACE_DIR = "./tmp/lower_trace_dir"
DEFAULT_KEEP = 20

_ON = {"1", "on", "true", "yes"}
_OFF = {"0", "off", "false", "no", ""}


class _Default:
    """Marker for "derive the working-file path from the script directory"."""

    def __repr__(self) -> str:
        return "<default>"


DEFAULT = _Default()


def parse_mode(value: str | None, *, source: str = "--mode") -> str | None:
    """Return the trace mode named by `value` (None = off), as TL_LOWER_TRACE reads it."""
    if value is None:
        return None
    v = value.strip().lower()
    if v in _OFF:
        return None
    if v in _ON:
        return "html"
    if v in MODES:
        return v
    raise UsageError(
        f"{source}={value!r} is not a trace mode; use one of terminal, html, both (or 1/on, 0/off)"
    )


def env_mode(environ: dict[str, str] | None = None) -> str | None:
    env = os.environ if environ is None else environ
    return parse_mode(env.get("TL_LOWER_TRACE"), source="TL_LOWER_TRACE")


def env_trace_dir(environ: dict[str, str] | None = None) -> str:
    env = os.environ if environ is None else environ
    return env.get("TL_LOWER_TRACE_DIR") or DEFAULT_TRACE_DIR


def script_name_from_argv(argv0: str | None = None) -> str:
    """Return the trace name for a program: the script's stem, never '-c'."""
    argv0 = sys.argv[0] if argv0 is None else argv0
    if not argv0 or argv0 in ("-c", "-"):
        return "python_c" if argv0 == "-c" else "interactive"
    stem = Path(argv0).stem
    if stem == "__main__":
        stem = Path(argv0).resolve().parent.name or stem
    return stem or "interactive"


@dataclass(frozen=True)
class Settings:
    """One snapshot of how to trace; a compilation keeps the snapshot it started with."""

    mode: str = "terminal"
    trace_dir: Path = Path(DEFAULT_TRACE_DIR)
    script_name: str = "interactive"
    codegen_output: object = DEFAULT  # DEFAULT, None (no working files) or a path
    keep: int = DEFAULT_KEEP
    context: int = 3
    ignore_whitespace: bool = False  # terminal diffs: hide re-indent-only changes
    only: re.Pattern[str] | None = None
    skip: re.Pattern[str] | None = None
    quiet: bool = False
    use_cache: bool = False
    command: tuple[str, ...] = field(default_factory=tuple)

    @property
    def terminal(self) -> bool:
        return self.mode in ("terminal", "both")

    @property
    def html(self) -> bool:
        return self.mode in ("html", "both")

    @property
    def script_dir(self) -> Path:
        from .session.names import safe_component

        return Path(self.trace_dir) / safe_component(self.script_name)

    def working_files_enabled(self) -> bool:
        """Working files are written in html/both mode, or whenever a path was given."""
        if self.codegen_output is None:
            return False
        if self.codegen_output is DEFAULT:
            return self.html
        return True


def compile_regex(value: str | None, flag: str) -> re.Pattern[str] | None:
    if value is None:
        return None
    try:
        return re.compile(value)
    except re.error as exc:
        raise UsageError(f"{flag} {value!r} is not a valid regular expression: {exc}") from None
