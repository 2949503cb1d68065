"""Names from IR, records and the command line made safe to use as one path component.

One rule set for every name tltrace turns into a file or directory name (scripts,
kernels, phases, passes), whether it comes from IR or is read back from disk:
letters and digits of any script stay (`ü` is kept), so do `.`, `_`, `+` and `-`;
anything else (separators, spaces, control and format characters, quotes) becomes `_`.
The same rule also checks names read back from disk (`is_safe_component`).
"""

from __future__ import annotations

import os
import re
import sys
import unicodedata
from pathlib import Path

MAX_BYTES = 120  # well under the 255-byte limit of a file name, with room for suffixes

_UNSAFE = re.compile(r"[^\w.+-]+")  # \w: letters and digits of every script, and '_'


def safe_component(name: object, fallback: str = "unnamed") -> str:
    """Return `name` as a single path component that cannot escape its directory.

    NFC-normalised; every character that is not a letter, digit, '.', '_', '+' or '-'
    becomes '_' (a run of them one '_'); leading dots are dropped (no '..', no
    hidden files); the UTF-8 length is capped. Applying it twice changes nothing.
    """
    text = unicodedata.normalize("NFC", str(name))
    text = _UNSAFE.sub("_", text).strip("_").lstrip("._")
    if len(text.encode("utf-8")) > MAX_BYTES:
        text = text.encode("utf-8")[:MAX_BYTES].decode("utf-8", "ignore").rstrip("._")
    return text or fallback


def is_safe_component(name: str) -> bool:
    """Return True when `name`, e.g. read back from a registry on disk, is already a safe component."""
    return bool(name) and safe_component(name, fallback="") == name


def pass_display_name(name: str) -> str:
    """Return a readable pass name: TileLang's own passes lose their `tl.` namespace; TVM's keep theirs."""
    name = str(name)
    for prefix in ("tl.transform.", "tl."):
        if name.startswith(prefix) and len(name) > len(prefix):
            return name[len(prefix) :]
    return name


def script_name_from_argv(argv0: str | None = None) -> str:
    """Return the trace name for a program: the script's stem, never '-c'."""
    argv0 = sys.argv[0] if argv0 is None else argv0
    if not argv0 or argv0 in ("-c", "-"):
        return "python_c" if argv0 == "-c" else "interactive"
    stem = Path(argv0).stem
    if stem == "ipykernel_launcher":  # a Jupyter kernel: the notebook's name (Jupyter Server sets it)
        return safe_component(Path(os.environ.get("JPY_SESSION_NAME") or "notebook").stem, "notebook")
    if stem == "__main__":
        stem = Path(argv0).resolve().parent.name or stem
    return stem or "interactive"
