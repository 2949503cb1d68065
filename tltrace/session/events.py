"""Progress leaves the capture engine as events; listeners (terminal, HTML) turn them into output."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..format.records import PassRecord, RunManifest
from ..format.sourcemap import LineMap


@dataclass(frozen=True)
class RunStarted:
    """A compilation opened its run directory. `manifest` holds what is known so far."""

    manifest: RunManifest
    run_dir: Path
    script_dir: Path


@dataclass(frozen=True)
class PassRecorded:
    """One pass or codegen call finished (or failed) and is on disk."""

    manifest: RunManifest  # header only; records are not repeated here
    record: PassRecord
    before: str
    after: str
    run_dir: Path
    before_map: LineMap | None = None  # source maps of the two texts (sourcemap/lines.py)
    after_map: LineMap | None = None
    # The (i, j) lines of `after` that are line i of `before` (diff.line_changes, from the +/-
    # count): the report stores `after` as its changes (render/delta.py). None: not known.
    same_lines: list[tuple[int, int]] | None = None


class _HeaderLater(PassRecorded):
    """A PassRecorded whose `manifest` is made when it is first read (`pass_recorded`): made per
    record, the header asked every recorder for its field, and with `--quiet` no listener reads it
    (issue 51, round 6). PassRecorded's own `__init__`, `__repr__`, `dataclasses.replace` and
    `fields` go through the property as through the field."""

    @property  # type: ignore[override]
    def manifest(self) -> RunManifest:
        d = self.__dict__
        m = d.get("_manifest")
        if m is None:
            m = d["_manifest"] = d["_header"]()
            d.pop("_header", None)  # made: the session it came from is not held by the event
        return m

    @manifest.setter
    def manifest(self, value: RunManifest) -> None:
        self.__dict__["_manifest"] = value


def pass_recorded(
    header: Callable[[], RunManifest],
    record: PassRecord,
    before: str,
    after: str,
    run_dir: Path,
    before_map: LineMap | None = None,
    after_map: LineMap | None = None,
    same_lines: list[tuple[int, int]] | None = None,
) -> PassRecorded:
    """A PassRecorded whose `manifest` is `header()`, called when a listener first reads it (on the
    thread that reads it, in the job that tells the listeners: the header as it stands then)."""
    event = object.__new__(_HeaderLater)
    event.__dict__.update(
        _header=header,
        record=record,
        before=before,
        after=after,
        run_dir=run_dir,
        before_map=before_map,
        after_map=after_map,
        same_lines=same_lines,
    )
    return event


@dataclass(frozen=True)
class Notice:
    """Something a person should see once: a reconcile tag, a cache hit, a tltrace warning.

    kind: "warning", "cached", "info", or a reconcile tag ("PATCHED", "CONFLICT", ...).
    """

    kind: str
    message: str
    kernel: str | None = None
    path: Path | None = None
    diff: tuple[str, str] | None = None  # (before, after): PATCHED shows the user's edit as a diff
    diff_names: tuple[str, str] = ("before", "after")  # the diff's header: the files it compares
    label: str | None = None  # the compile's short label (`add 512`, signature.short_label), where known


@dataclass(frozen=True)
class RunFinished:
    manifest: RunManifest
    run_dir: Path
    script_dir: Path


@dataclass(frozen=True)
class Pruned:
    """Retention removed old invocations of a script (or tried to: `failed` says what stayed)."""

    script_dir: Path
    runs: int
    invocations: int
    bytes_freed: int
    kept_invocations: int
    keep: int
    failed: tuple[str, ...] = ()


# How a compile not finished as its invocation ends is called: the notice that says so and the
# summary line or table row that lists it use the same words.
STILL_RUNNING = "still running"  # its compile had not returned yet
NOT_FINALISED = "finished, not finalised"  # it returned, but its final manifest could not be written


@dataclass(frozen=True)
class InvocationFinished:
    """The invocation (one `tltrace run`, one enable()..disable() span) is over; `runs` are its compiles."""

    invocation: str
    runs: tuple[RunManifest, ...]
    interrupted: bool = False
    # Run ids of compiles that ended but whose run tltrace could not finalise (the final manifest
    # write failed): on disk they still say running. Views call them "finished, not finalised".
    not_finalised: tuple[str, ...] = ()
    # An invocation that traced no compile: what was recorded of it (session/empty.EmptyInvocation)
    # and where (None when the record could not be written); `show -1` then names this run.
    empty: Any = None
    empty_path: Path | None = None


@dataclass(frozen=True)
class ScriptOutput:
    """What Python itself would print as the script ends: its traceback, a SystemExit message."""

    text: str


@dataclass(frozen=True)
class WorkingFiles:
    """At an invocation's end: which working file holds which kernel variant (reconcile.workflow.HeldVariant)."""

    directory: Path
    held: tuple  # of HeldVariant: path, kernel, role, variant, tag


Event = (
    RunStarted
    | PassRecorded
    | Notice
    | RunFinished
    | Pruned
    | InvocationFinished
    | ScriptOutput
    | WorkingFiles
)


class TltraceWarning(RuntimeWarning):
    """What tltrace must say when no listener can say it (the listener itself failed)."""


def fallback_warning(message: str) -> None:
    """Say `message` (its first line) through Python's warnings, for when no listener can.

    The one fallback of the core: it never writes to a stream itself, and a program
    can filter TltraceWarning like any other warning.
    """
    try:
        warnings.warn(
            message.splitlines()[0][:500] if message else "tltrace warning", TltraceWarning, stacklevel=3
        )
    except Exception:
        pass
