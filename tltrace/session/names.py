"""Names from IR (pass, kernel, phase, script) made safe to use as one path component."""

from __future__ import annotations

import re

_UNSAFE = re.compile(r"[^A-Za-z0-9._+-]+")
MAX_LEN = 80


def safe_component(name: object, fallback: str = "unnamed") -> str:
    """Return `name` as a single path component that cannot escape its directory.

    Separators, control characters and anything outside [A-Za-z0-9._+-] become
    '_'; leading dots are dropped (no '..', no hidden files); length is capped.
    """
    text = _UNSAFE.sub("_", str(name)).strip("_")
    text = text.lstrip(".")
    if len(text) > MAX_LEN:
        text = text[:MAX_LEN].rstrip("._")
    return text or fallback


def pass_display_name(name: str) -> str:
    """Return a readable pass name: TileLang's own passes lose their `tl.` namespace; TVM's keep theirs."""
    name = str(name)
    for prefix in ("tl.transform.", "tl."):
        if name.startswith(prefix) and len(name) > len(prefix):
            return name[len(prefix):]
    return name
