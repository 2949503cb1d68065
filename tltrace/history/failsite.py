"""Where a failed pass failed, at the user's line: the tile operation, not the buffer the error names.

TileLang's error for a layout it cannot infer points (`--> k.py:9:1`) at the buffer's
allocation (`frag = T.alloc_fragment(...)`), while what failed is an operation on it (the
`T.copy` at line 10). The failed pass's input IR, with its source map, says which
operations use that buffer and at which Python line: the first one is the site. Where the
error's line is not an allocation, or no use of the buffer maps to a line, the site is the
error's own line. Data only: `show --pass` (cli/passes.py), `show --source-map --json`
and the report (render/pages.py: the error's "at k.py:10" button) read it.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from ..format.records import FAILED, PassRecord, RunManifest
from ..sourcemap.lines import error_location

# The error's quoted source line (` 9 |     frag = T.alloc_fragment(...)`) and an allocation in it or in the IR.
_QUOTED = re.compile(r"^\s*(\d+)\s*\|\s?(.*)$", re.M)
_ALLOC = re.compile(r"^\s*(\w+)\s*(?::[^=]*)?=\s*T\.\w*alloc\w*\s*\(")
_OP = re.compile(r"\bT\.(\w+)\s*\(")


@dataclass(frozen=True)
class FailSite:
    """The Python line a failed pass failed at: its file, line, and the operation there."""

    file: str
    line: int
    op: str | None = None  # "T.copy": the tile operation at that line (None: the error's own line)
    buffer: str | None = None  # the buffer the error names by its allocation
    error_line: int | None = None  # the line the error's `-->` points at (the allocation's)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    def describe(self) -> str:
        """Return `T.copy, the first use of frag (the error points at its allocation, line 9)`, or ''."""
        if self.op is None or self.buffer is None:
            return ""
        return f"{self.op}, the first use of {self.buffer} (the error points at its allocation, line {self.error_line})"


def _buffer(error: str, line: int, lines: list[dict[str, Any]], file: str) -> str | None:
    """Return the buffer allocated at the error's line: from its quoted source, else from the IR mapped there."""
    for m in _QUOTED.finditer(error):
        if int(m.group(1)) == line:
            a = _ALLOC.match(m.group(2))
            if a:
                return a.group(1)
    for x in lines:
        src = x.get("src")
        if src and src.get("file") == file and src.get("line") == line:
            a = _ALLOC.match(x["text"])
            if a:
                return a.group(1)
    return None


def site_from(error: str | None, lines: list[dict[str, Any]]) -> FailSite | None:
    """Return where a pass failed from its error and its input's lines ([{text, src}], history/sourcemaps.annotated).

    Pure. None when the error names no line of the user's.
    """
    at = error_location(error)
    if at is None or error is None:
        return None
    file, line = at
    buffer = _buffer(error, line, lines, file)
    if buffer is None:
        return FailSite(file, line)
    use = re.compile(rf"(?<![\w.]){re.escape(buffer)}\b")
    for x in lines:
        src = x.get("src")
        text = x["text"]
        if not src or src.get("file") != file or src.get("line") == line or _ALLOC.match(text):
            continue
        if use.search(text):
            op = _OP.search(text)
            return FailSite(file, int(src["line"]), f"T.{op.group(1)}" if op else None, buffer, line)
    return FailSite(file, line)


def fail_site(run_dir: Path, manifest: RunManifest, rec: PassRecord | None = None) -> FailSite | None:
    """Return where failed pass `rec` (default: the compile's first) failed; None: no failed pass, or
    its error names no line.

    Reads the pass's recorded input and the run's source map, inside the run directory.
    """
    from . import runs
    from . import sourcemaps as V

    if rec is None:
        rec = next((r for r in manifest.records if r.status == FAILED and r.error), None)
    if rec is None or rec.status != FAILED:
        return None
    if error_location(rec.error) is None:
        return None
    maps = V.load(run_dir)
    try:
        lines = V.annotated(runs.Run(Path(run_dir), manifest), rec, "before", maps) if maps else []
    except Exception:  # the input not recorded, or unreadable: the error's own line
        lines = []
    return site_from(rec.error, lines)
