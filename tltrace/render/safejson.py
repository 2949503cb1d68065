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


# Written as \uXXXX escapes (inside JSON strings, the only place they can be): what could close the
# element or open a comment, DEL and the C1 controls (an HTML parse error in a page), and U+2028,
# U+2029 (line terminators to JavaScript before ES2019). json.dumps escapes 0x00-0x1f itself.
_SCRIPT_ESCAPES = {c: f"\\u{c:04x}" for c in (*map(ord, "<>&"), *range(0x7F, 0xA0), 0x2028, 0x2029)}


# script_json's encoder, made once: json.dumps(value, allow_nan=False, ensure_ascii=False,
# separators=(",", ":"), default=str), without the check for a container holding itself (a dict
# entry per list and object: a report's values are trees that tltrace builds).
_SCRIPT_ENCODE = json.JSONEncoder(
    ensure_ascii=False, separators=(",", ":"), default=str, allow_nan=False, check_circular=False
).encode


class Encoded(dict):  # type: ignore[type-arg]
    """A chunk object that carries its JSON, made already (`json`: safe in a script as script_json's,
    the object as script_json writes it or in other escapes): script_json writes that text
    (render/sourcemap.py's maps, whose JSON the run's log made once)."""

    __slots__ = ("json",)

    def __init__(self, value: dict[str, Any], json_text: str) -> None:
        super().__init__(value)
        self.json = json_text


def script_safe(text: str) -> str:
    """Return JSON `text` with what script_json escapes written as \\uXXXX escapes."""
    if text.isascii():  # nearly every report's data (IR is ASCII): four C-speed replaces, same result
        return (
            text.replace("&", "\\u0026")
            .replace("<", "\\u003c")
            .replace(">", "\\u003e")
            .replace("\x7f", "\\u007f")
        )
    return text.translate(_SCRIPT_ESCAPES)


def script_json(value: Any) -> str:
    """Return `value` as compact JSON safe inside <script>: the one escaper of what a report embeds.

    `<`, `>` and `&`, DEL and the C1 controls, and U+2028/U+2029 are written as \\uXXXX
    escapes (the C0 controls are, by JSON itself), so no text in the data (IR, names, error
    messages) can close the element, start a comment or put a control character in the page;
    JSON.parse restores them unchanged.
    """
    if type(value) is Encoded:
        return value.json
    if type(value) is list and any(type(v) is Encoded for v in value):  # a batch: its objects' JSON
        return "[" + ",".join(script_json(v) for v in value) + "]"
    try:
        text = _SCRIPT_ENCODE(value)
    except ValueError:  # NaN or an infinity: written as null
        text = _SCRIPT_ENCODE(finite(value))
    return script_safe(text)
