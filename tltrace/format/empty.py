"""An invocation that traced no compile: recorded, so that `show -1` is that run and says why.

A `tltrace run` whose script compiled nothing (or whose `--kernels` filter matched no
kernel it compiled) leaves no run directory. Without a record, `-1` would name the
invocation before it, as if this one had worked. The record is one small JSON file
beside the run directories::

    <script>/.run_records/inv_<YYYYMMDD_HHMMSS_ffffff>Z_<pid>_<uid>.json

Its name is the invocation id. The readers group it with the runs (history/invocations.py),
retention counts and removes it like an invocation (history/retention.py).
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..fs import safe_read
from ..fs.atomic import atomic_write

EMPTY_STATUS = "empty"
_NAME = re.compile(r"^inv_[0-9A-Za-z_]+\.json$")
_LIMIT = 1 << 20  # a record is a few hundred bytes; anything larger is not ours


@dataclass(frozen=True)
class EmptyInvocation:
    """What tltrace knows of an invocation that traced no compile, and why it traced none."""

    invocation: str
    script: str
    started: float = 0.0
    finished: float | None = None
    command: list[str] = field(default_factory=list)
    cwd: str | None = None
    kernels: str | None = None  # the --kernels pattern, if any
    skipped: tuple[str, ...] = ()  # kernels that compiled untraced because --kernels did not match them
    cached: tuple[str, ...] = ()  # kernels that came from TileLang's kernel cache (--use-cache)
    imported: bool = True  # False: the script never imported tilelang
    interrupted: bool = False

    @property
    def reason(self) -> str:
        """Why nothing was traced, in words (no leading capital, no full stop)."""
        if self.skipped and self.kernels is not None:
            n = len(self.skipped)
            names = ", ".join(self.skipped[:5]) + (", ..." if n > 5 else "")
            return (
                f"--kernels {self.kernels!r} matched none of the {n} kernel{'s' if n != 1 else ''} "
                f"it compiled ({names})"
            )
        if self.cached:
            names = ", ".join(self.cached[:5]) + (", ..." if len(self.cached) > 5 else "")
            return f"every kernel came from TileLang's kernel cache ({names}); drop --use-cache to trace them"
        why = "the script never imported tilelang" if not self.imported else "the script compiled no kernel"
        if self.interrupted:
            why = "interrupted before any compile"
        if self.kernels is not None:
            why += f" (--kernels {self.kernels!r} skipped none)"
        return why

    def to_json(self) -> dict[str, Any]:
        return {
            "status": EMPTY_STATUS,
            "invocation": self.invocation,
            "script": self.script,
            "started": self.started,
            "finished": self.finished,
            "command": list(self.command),
            "cwd": self.cwd,
            "kernels": self.kernels,
            "skipped": list(self.skipped),
            "cached": list(self.cached),
            "imported": self.imported,
            "interrupted": self.interrupted,
            "reason": self.reason,
        }

    @classmethod
    def from_json(cls, data: Any) -> EmptyInvocation:
        """Return the record; ValueError when `data` is not one."""
        if not isinstance(data, dict) or data.get("status") != EMPTY_STATUS:
            raise ValueError("not an empty-invocation record")
        inv, script = data.get("invocation"), data.get("script")
        if not isinstance(inv, str) or not isinstance(script, str):
            raise ValueError("an empty-invocation record names no invocation or script")

        def names(key: str) -> tuple[str, ...]:
            v = data.get(key)
            return tuple(x for x in v if isinstance(x, str)) if isinstance(v, list) else ()

        started = data.get("started")
        finished = data.get("finished")
        cmd = data.get("command")
        return cls(
            invocation=inv,
            script=script,
            started=float(started) if isinstance(started, (int, float)) else 0.0,
            finished=float(finished) if isinstance(finished, (int, float)) else None,
            command=[x for x in cmd if isinstance(x, str)] if isinstance(cmd, list) else [],
            cwd=data.get("cwd") if isinstance(data.get("cwd"), str) else None,
            kernels=data.get("kernels") if isinstance(data.get("kernels"), str) else None,
            skipped=names("skipped"),
            cached=names("cached"),
            imported=data.get("imported") is not False,
            interrupted=data.get("interrupted") is True,
        )


def record_path(records_root: Path, invocation: str) -> Path:
    """Return where the record of `invocation` lives under a script's `.run_records`."""
    if not _NAME.match(f"{invocation}.json"):
        raise ValueError(f"not an invocation id: {invocation!r}")
    return Path(records_root) / f"{invocation}.json"


def write(records_root: Path, record: EmptyInvocation) -> Path:
    """Write the record (atomically) and return its path.

    Never through a symbolic link: a linked script directory or `.run_records` is refused
    (OSError), as the run store refuses it: nothing is written outside the trace dir.
    """
    path = record_path(records_root, record.invocation)
    for d in (Path(records_root).parent, Path(records_root)):
        if d.is_symlink():
            raise OSError(f"{d} is a symbolic link; tltrace writes nothing through it")
    Path(records_root).mkdir(parents=True, exist_ok=True)
    atomic_write(path, (json.dumps(record.to_json(), indent=1) + "\n").encode())
    return path


def read_all(records_root: Path) -> list[tuple[Path, EmptyInvocation]]:
    """Return the records under a script's `.run_records` (unreadable or foreign files are left out)."""
    try:
        names = sorted(e.name for e in os.scandir(records_root) if _NAME.match(e.name))
    except OSError:
        return []
    out = []
    for name in names:
        path = Path(records_root) / name
        try:
            rec = EmptyInvocation.from_json(json.loads(safe_read.read_bytes(path, _LIMIT)))
        except (OSError, ValueError):
            continue
        if f"{rec.invocation}.json" == name:
            out.append((path, rec))
    return out
