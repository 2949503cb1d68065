"""`run --sanitize`'s errors kept beside a compile's records: `sanitizer.json` in its run directory.

Written once, after the sanitized script ended, by the parent process (runtime/sanitize.py), with
one atomic rename (a reader sees the whole file or none). Each error group is kept in the run
directory of the compile it was named at; errors that name no traced compile (a CUDA API error,
an untraced kernel) in the invocation's newest run. Plain JSON that `jq` reads::

    {"schema": 1, "tool": "memcheck", "report": "sanitizer.xml", "problem": null,
     "errors": [{"what": "invalid __global__ writes of 4 bytes", "count": 24, "kernel": "main_kernel",
                 "pc": "0xf0", "cuda_line": 19, "python": {"file": ..., "line": 15, "text": ...}, ...}]}

`read` returns None for a run without the file, and raises ValueError for one that is not ours.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..fs import safe_read
from ..fs.atomic import atomic_write
from .layout import SANITIZER

SCHEMA = 1
_LIMIT = 16 << 20


def write(
    run_dir: Path, tool: str, errors: list[dict[str, Any]], report: str | None, problem: str | None
) -> Path:
    """Write the run's sanitizer record (replacing one there); return its path."""
    doc = {"schema": SCHEMA, "tool": tool, "report": report, "problem": problem, "errors": errors}
    path = Path(run_dir) / SANITIZER
    atomic_write(path, (json.dumps(doc, indent=1) + "\n").encode())
    return path


def read(run_dir: Path) -> dict[str, Any] | None:
    """Return the run's sanitizer record, None when it has none; ValueError when it is damaged."""
    try:
        data = safe_read.read_bytes(Path(run_dir) / SANITIZER, _LIMIT + 1)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise ValueError(f"{SANITIZER}: cannot read it ({exc.strerror or exc})") from None
    if len(data) > _LIMIT:
        raise ValueError(f"{SANITIZER}: over {_LIMIT >> 20} MiB, not a record of tltrace's")
    try:
        doc = json.loads(data)
    except ValueError:
        raise ValueError(f"{SANITIZER}: not JSON (damaged)") from None
    if (
        not isinstance(doc, dict)
        or doc.get("schema") != SCHEMA
        or not isinstance(doc.get("tool"), str)
        or not isinstance(doc.get("errors"), list)
        or not all(isinstance(e, dict) for e in doc["errors"])
    ):
        raise ValueError(f"{SANITIZER}: not a sanitizer record of schema {SCHEMA}")
    return doc
