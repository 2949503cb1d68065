"""Invocations: one script's runs grouped by the invocation that made them.

An *invocation* is one `tltrace run`, one watch rerun, one enable()..disable()
span: every compile of it carries the same manifest `invocation`. A run without
one (schema 1) is an invocation of its own. Invocations are ordered by an absolute
start time (`loading.start_of`), so time zones never reorder them.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..format.records import RUNNING, RunManifest
from .loading import DAMAGED, INTERRUPTED, Run, load_run, run_dirs, start_of


def label(m: RunManifest | None, run_id: str = "?") -> str:
    """Return how a compile is named to a person: its signature, else its kernel, else its run id."""
    if m is None:
        return run_id
    return m.signature or m.kernel or run_id


@dataclass(frozen=True)
class RecordedInvocation:
    """One invocation of a script: its compiles (runs) in the order they started."""

    id: str
    runs: tuple[Run, ...]
    position: int = 0  # -1 the newest invocation of its script, -2 the one before, ...

    @property
    def script_dir(self) -> Path:
        return self.runs[0].script_dir

    @property
    def legacy(self) -> bool:
        """True for a run that names no invocation (schema 1): it is an invocation of its own."""
        m = self.runs[0].manifest
        return len(self.runs) == 1 and (m is None or not m.invocation)

    @property
    def started(self) -> float | None:
        times = [t for t in (start_of(r) for r in self.runs) if t > 0]
        return min(times) if times else None

    @property
    def status(self) -> str:
        """running while any compile runs; error/damaged/interrupted when any is; else complete."""
        statuses = {r.status for r in self.runs}
        for s in (RUNNING, DAMAGED, INTERRUPTED, "error"):
            if s in statuses:
                return s
        return next(iter(statuses)) if len(statuses) == 1 else "complete"

    @property
    def counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for r in self.runs:
            out[r.status] = out.get(r.status, 0) + 1
        return out

    def to_json(self) -> dict[str, Any]:
        """Return the invocation as JSON data, without its compiles (a view lists those it shows)."""
        return {
            "position": self.position,
            "script": self.script_dir.name,
            "invocation": self.id,
            "legacy": self.legacy,
            "started": self.started,
            "status": self.status,
            "counts": self.counts,
        }


def invocation_key(run: Run) -> str:
    m = run.manifest
    return m.invocation if m is not None and m.invocation else run.run_id


def group_invocations(runs: list[Run]) -> list[RecordedInvocation]:
    """Group one script's runs into invocations, oldest first, each with its compiles in start order.

    Positions count from the newest (-1). Runs are ordered by an absolute start time
    (`start_of`), never by an id's local time: a time zone or DST change cannot reorder them.
    """
    groups: dict[str, list[Run]] = {}
    for r in sorted(runs, key=lambda r: (start_of(r), r.run_id)):
        groups.setdefault(invocation_key(r), []).append(r)
    ordered = list(groups.items())  # first compile's run id order
    n = len(ordered)
    return [RecordedInvocation(k, tuple(v), i - n) for i, (k, v) in enumerate(ordered)]


def invocations(script_dir: Path, *, size: bool = False) -> list[RecordedInvocation]:
    """Return the invocations of one script, oldest first."""
    return group_invocations([load_run(p, size=size) for p in run_dirs(script_dir)])
