"""The diff-runs HTML report: the template in assets/diffruns.html plus the comparison as JSON data."""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import Any

from .safejson import script_json  # one encoder for every report

PLACEHOLDER = "/*__TLTRACE_DATA__*/null"


def render(data: dict[str, Any]) -> str:
    """Return the report page for `data` (the template with the data block filled in)."""
    template = resources.files("tltrace.render").joinpath("assets/diffruns.html").read_text(encoding="utf-8")
    return template.replace(PLACEHOLDER, script_json(data), 1)


def write(data: dict[str, Any], out: Path) -> Path:
    """Write the report to `out` (through a temporary file) and return its path."""
    from ..session.store import atomic_write_text

    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(out, render(data))
    return out
