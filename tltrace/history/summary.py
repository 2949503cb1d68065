"""One compile, summed up: the model every compile list renders, and its one order.

The terminal's end-of-run table (render/terminal.py), `show`'s listings and JSON
(cli/show.py), the CI markdown (cli/profile.py), the invocation index (render/index.py
index_row, read by index.js) all build a CompileSummary and sort with `order`; the JSON
ones are its `to_json` with what the view adds (docs/show.schema.json):
compiles that did not finish well first (failed, interrupted, damaged), then the
unfinished, then the complete ones, each group in the order the compiles started.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, fields
from typing import Any

from ..format import build as fbuild
from ..format.records import CHANGED, CODEGEN, COMPLETE, FAILED, RUNNING, RunManifest
from .loading import safe_time

INTERRUPTED = "interrupted"
DAMAGED = "damaged"
# The rank of a status in every compile list: failures first, complete last.
_RANK = {COMPLETE: 2, RUNNING: 1}


def _finite(x: object) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) and abs(x) < 1e11


@dataclass(frozen=True)
class CompileSummary:
    """What a list of compiles shows about one: its name, how it ended, its counts, where it failed."""

    run_id: str
    kernel: str | None
    signature: str | None
    status: str  # complete | error | interrupted | running | damaged
    passes: int | None
    changed: int | None
    failed: int | None
    codegen: int | None
    failed_at: str | None = None  # the first failed pass; "build (g++)": the backend build after codegen
    error: str | None = None  # the first line of the compile's error (a failed build: its first error)
    started: float | None = None  # epoch seconds; None when missing or implausible (loading.safe_time)
    seconds: float | None = None  # compile time: finished - started
    invocation: str | None = None
    target: str | None = None
    backend: str | None = None
    position: int = 0  # the order it started in, among the compiles it is listed with
    edit: str | None = (
        None  # the reconcile tag of its codegen that says most about an edit (PATCHED, CONFLICT, ...)
    )
    stack: list[dict[str, Any]] | None = (
        None  # its call site: the user's frames, outermost first (manifest `stack`)
    )

    @property
    def label(self) -> str:
        """Return how a compile is named to a person: its signature, else its kernel, else its run id."""
        return self.signature or self.kernel or self.run_id

    @property
    def ok(self) -> bool:
        return self.status == COMPLETE

    @property
    def rank(self) -> int:
        """0 for a compile that ended badly, 1 for one still running, 2 for a complete one."""
        return _RANK.get(self.status, 0)

    @classmethod
    def of(
        cls,
        manifest: RunManifest | None,
        run_id: str | None = None,
        status: str | None = None,
        position: int = 0,
    ) -> CompileSummary:
        """Return the summary of a compile's manifest (None: a damaged run, known by its id only)."""
        m = manifest
        if m is None:
            return cls(
                run_id or "?", None, None, status or DAMAGED, None, None, None, None, position=position
            )
        c = m.counts
        first_failed = next((r for r in m.records if r.status == FAILED), None)
        st = status or m.status
        if status is None and st != COMPLETE and (m.error or "").startswith("KeyboardInterrupt"):
            st = INTERRUPTED
        error = None
        if m.error:
            error = m.error.strip().splitlines()[0][:300] if m.error.strip() else m.error
        failed_at = first_failed.name if first_failed else None
        build = fbuild.of(m)
        if first_failed is None and fbuild.failed(build):  # the backend build: a stage of its own
            failed_at = f"build ({fbuild.compiler(build)})"
            first = fbuild.errors(build)
            error = fbuild.at(first[0])[:300] if first else error
        seconds = None
        if _finite(m.started) and m.finished is not None and _finite(m.finished) and m.finished >= m.started:
            seconds = round(m.finished - m.started, 4)
        return cls(
            run_id=run_id or m.run_id,
            kernel=m.kernel,
            signature=m.signature,
            status=st,
            passes=len(m.records),
            changed=c.get(CHANGED, 0),
            failed=c.get(FAILED, 0),
            codegen=c.get(CODEGEN, 0),
            failed_at=failed_at,
            error=error,
            started=safe_time(m.started),
            seconds=seconds,
            invocation=m.invocation,
            target=m.target,
            backend=m.backend,
            position=position,
            edit=edit_tag(m),
            stack=m.stack if isinstance(m.stack, list) else None,
        )

    def to_json(self) -> dict[str, Any]:
        """Return the summary as JSON data (None fields kept: a reader sees every key).

        Every compile list that prints JSON starts from this dict: `show --json`'s rows
        (adding where the run is on disk) and the invocation index's rows (render/index.py).
        `position` is left out: it is the order among the compiles listed together, which
        `order` uses; `show` gives the invocation's position instead.
        """
        data = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "position"}
        data["label"] = self.label
        return data


_EDIT_RANK = ("CONFLICT", "UNRESOLVED", "PATCHED", "NOTE", "SYNCED", "REGENERATED", "INIT-BACKUP")


def edit_tag(m: RunManifest) -> str | None:
    """Return the reconcile tag of a compile's codegen that says most about the user's edit, or None.

    CONFLICT and UNRESOLVED first, then PATCHED (the edit was compiled), NOTE (an edit kept for the
    diff view, not compiled), SYNCED, REGENERATED.
    """
    tags = {r.reconcile for r in m.records if r.reconcile}
    return next((t for t in _EDIT_RANK if t in tags), None) or (min(tags) if tags else None)


def order(summaries: Sequence[CompileSummary]) -> list[CompileSummary]:
    """Return the compiles in the one order: ended badly, running, complete; each by start, then position."""
    return sorted(
        summaries,
        key=lambda s: (s.rank, s.started if s.started is not None else math.inf, s.position),
    )
