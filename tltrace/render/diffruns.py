"""The diff-runs HTML report: assets/diffruns.{html,css,js} plus the comparison as JSON data.

Built like the pass report (one page builder, `html._page_head`): the CSS (palette.css, shared
with it, then diffruns.css) and the script are inlined and allowed by their hashes in the page's
Content-Security-Policy, the data sits in a <script type="application/json"> block, and the
script renders it with textContent.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .pages import _page_head
from .safejson import script_json  # one encoder for every report

PLACEHOLDER = "/*__TLTRACE_DATA__*/null"


def page() -> str:
    """Return the page with its CSS and script inlined and the CSP naming their hashes (data not filled)."""
    return _page_head(
        "diffruns.html", ("palette.css", "diffruns.css", "layouts.css"), ("diffruns.js",)
    ).decode("utf-8")


def render(data: dict[str, Any]) -> str:
    """Return the report page for `data` (the template with the data block filled in)."""
    return page().replace(PLACEHOLDER, script_json(data), 1)


def write(data: dict[str, Any], out: Path) -> Path:
    """Write the report to `out` (through a temporary file) and return its path."""
    from ..fs.atomic import atomic_write

    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(out, render(data).encode("utf-8", "surrogatepass"))
    return out


__all__ = ["PLACEHOLDER", "page", "render", "script_json", "write"]
