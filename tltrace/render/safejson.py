"""JSON that can sit inside an HTML <script> element: the one encoder every report uses."""

from __future__ import annotations

import json
import math
from typing import Any


def finite(value: Any) -> Any:
    """Return `value` with every NaN or infinite float replaced by None (JSON has no such numbers)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite(v) for v in value]
    return value


def dumps(value: Any, **kwargs: Any) -> str:
    """Return strict JSON (NaN and infinities written as null), as json.dumps with `kwargs`."""
    try:
        return json.dumps(value, allow_nan=False, **kwargs)
    except ValueError:
        return json.dumps(finite(value), allow_nan=False, **kwargs)


def script_json(value: Any) -> str:
    """Return `value` as compact JSON safe inside <script>.

    `<`, `>` and `&` (and U+2028/U+2029) are written as \\uXXXX escapes, so no text
    in the data (IR, names, error messages) can close the element or start a comment;
    JSON.parse restores them unchanged.
    """
    text = dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)
    return (
        text.replace("<", "\\u003c")
        .replace(">", "\\u003e")
        .replace("&", "\\u0026")
        .replace("\u2028", "\\u2028")
        .replace("\u2029", "\\u2029")
    )
