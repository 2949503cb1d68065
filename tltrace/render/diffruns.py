"""The diff-runs HTML report: the template in assets/diffruns.html plus the comparison as JSON data."""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path
from typing import Any

PLACEHOLDER = "/*__TLTRACE_DATA__*/null"


def script_json(data: Any) -> str:
    """Return `data` as JSON safe inside <script>: '<', '>', '&' escaped so IR text cannot close the tag."""
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026") \
        .replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")


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
