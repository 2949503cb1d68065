"""JSON that can sit inside an HTML <script> element: the one encoder every report uses."""

from __future__ import annotations

import json
from typing import Any


def script_json(value: Any) -> str:
    """Return `value` as compact JSON safe inside <script>.

    `<`, `>` and `&` (and U+2028/U+2029) are written as \\uXXXX escapes, so no text
    in the data (IR, names, error messages) can close the element or start a comment;
    JSON.parse restores them unchanged.
    """
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)
    return (
        text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
        .replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")
    )
