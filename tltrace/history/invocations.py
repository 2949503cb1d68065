"""Invocations: one script's runs grouped by the invocation that made them.

An *invocation* is one `tltrace run`, one watch rerun, one enable()..disable()
span: every compile of it carries the same manifest `invocation`. A run without
one (schema 1) is an invocation of its own. Invocations are ordered by an absolute
start time (`loading.start_of`), so time zones never reorder them. An invocation that
traced no compile has no runs: its record (format/empty.py) stands in, so that `-1`
is that run.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..format import empty as _empty
from ..format.empty import EMPTY_STATUS, EmptyInvocation
from ..format.layout import RUN_RECORDS
from ..format.records import EXITED, RUNNING, RunManifest
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
    empty: EmptyInvocation | None = None  # an invocation that traced no compile: its record
    where: Path | None = None  # the script dir, for an invocation with no runs

    @property
    def script_dir(self) -> Path:
        return self.runs[0].script_dir if self.runs else Path(self.where or ".")

    @property
    def legacy(self) -> bool:
        """True for a run that names no invocation (schema 1): it is an invocation of its own."""
        if not self.runs:
            return False
        m = self.runs[0].manifest
        return len(self.runs) == 1 and (m is None or not m.invocation)

    @property
    def started(self) -> float | None:
        times = [t for t in (start_of(r) for r in self.runs) if t > 0]
        if not times and self.empty is not None and self.empty.started > 0:
            return self.empty.started
        return min(times) if times else None

    @property
    def status(self) -> str:
        """running while any compile runs; error/damaged/interrupted when any is; else complete."""
        if not self.runs:
            return EMPTY_STATUS
        statuses = {r.status for r in self.runs}
        for s in (RUNNING, DAMAGED, INTERRUPTED, EXITED, "error"):
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
        out = {
            "position": self.position,
            "script": self.script_dir.name,
            "invocation": self.id,
            "legacy": self.legacy,
            "started": self.started,
            "status": self.status,
            "counts": self.counts,
        }
        if self.empty is not None:
            out["empty"] = self.empty.to_json()
        return out


def invocation_key(run: Run) -> str:
    m = run.manifest
    return m.invocation if m is not None and m.invocation else run.run_id


def group_invocations(
    runs: list[Run], empties: Iterable[EmptyInvocation] = (), script_dir: Path | None = None
) -> list[RecordedInvocation]:
    """Group one script's runs into invocations, oldest first, each with its compiles in start order.

    Positions count from the newest (-1). Runs are ordered by an absolute start time
    (`start_of`), never by an id's local time: a time zone or DST change cannot reorder them.
    `empties`: the records of invocations that traced no compile, placed by their start.
    """
    groups: dict[str, list[Run]] = {}
    for r in sorted(runs, key=lambda r: (start_of(r), r.run_id)):
        groups.setdefault(invocation_key(r), []).append(r)
    items: list[tuple[float, str, RecordedInvocation]] = [
        (start_of(v[0]), k, RecordedInvocation(k, tuple(v))) for k, v in groups.items()
    ]
    for e in empties:
        if e.invocation not in groups:
            items.append((e.started, e.invocation, RecordedInvocation(e.invocation, (), 0, e, script_dir)))
    items.sort(key=lambda x: x[0])  # stable: compiles keep their start order
    n = len(items)
    return [
        RecordedInvocation(inv.id, inv.runs, i - n, inv.empty, inv.where)
        for i, (_, _, inv) in enumerate(items)
    ]


def empty_invocations(script_dir: Path) -> list[EmptyInvocation]:
    """Return the records of the script's invocations that traced no compile."""
    return [rec for _, rec in _empty.read_all(Path(script_dir) / RUN_RECORDS)]


def invocations(script_dir: Path, *, size: bool = False) -> list[RecordedInvocation]:
    """Return the invocations of one script, oldest first (those that traced no compile included)."""
    return group_invocations(
        [load_run(p, size=size) for p in run_dirs(script_dir)],
        empty_invocations(script_dir),
        Path(script_dir),
    )
