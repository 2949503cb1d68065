"""The diff-runs HTML report: assets/diffruns.{html,css,js} plus the comparison as JSON data.

Built like the pass report: the CSS (palette.css, shared with it, then diffruns.css) and the
script are inlined and allowed by their hashes in the page's Content-Security-Policy, the data
sits in a <script type="application/json"> block, and the script renders it with textContent.
"""

from __future__ import annotations

import re
from importlib import resources
from pathlib import Path
from typing import Any

from .html import _json_for_script as script_json
from .html import _sha256_b64

PLACEHOLDER = "/*__TLTRACE_DATA__*/null"


def _asset(name: str) -> str:
    return resources.files("tltrace.render").joinpath("assets", name).read_text(encoding="utf-8")


def page() -> str:
    """Return the page with its CSS and script inlined and the CSP naming their hashes (data not filled)."""
    css = _asset("palette.css") + _asset("diffruns.css")
    js = _asset("diffruns.js")
    for text in (css, js):
        if re.search(r"</(script|style)|<!--", text, re.I):
            raise RuntimeError("diff-runs assets must not contain </script, </style or <!--")
    out = _asset("diffruns.html")
    out = out.replace("script-src 'unsafe-inline'", f"script-src 'sha256-{_sha256_b64(js)}'", 1)
    out = out.replace("style-src 'unsafe-inline'", f"style-src 'sha256-{_sha256_b64(css)}'", 1)
    return out.replace("/*TLTRACE_CSS*/", css, 1).replace("/*TLTRACE_JS*/", js, 1)


def render(data: dict[str, Any]) -> str:
    """Return the report page for `data` (the template with the data block filled in)."""
    return page().replace(PLACEHOLDER, script_json(data), 1)


def write(data: dict[str, Any], out: Path) -> Path:
    """Write the report to `out` (through a temporary file) and return its path."""
    from ..session.store import atomic_write_text

    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(out, render(data))
    return out


__all__ = ["PLACEHOLDER", "page", "render", "script_json", "write"]
