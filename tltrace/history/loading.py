"""One run on disk: where a script's runs are, loading a manifest, and whether its writer still lives.

Layout (format/layout.py)::

    <trace_dir>/<script>/.run_records/run_<YYYYMMDD_HHMMSS_ffffff>Z_<pid>_<uid>/manifest.json

A *run* is one compile's record directory. Everything here reads; nothing writes (but the
cache of derived views, history/derived.py, when a reader asks for them). A
damaged run raises RecordsError with one line that names the path and says what to do
(`load_manifest`), or is a `Run` carrying that line (`load_run`).
"""

from __future__ import annotations

import datetime as _dt
import json
import math
import os
import stat
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ..errors import RecordsError
from ..format import liveness, notes
from ..format.derived import DERIVED
from ..format.ids import id_time_is_absolute, is_run_name, time_of_id
from ..format.layout import MANIFEST, RECORDS_LOG, RUN_RECORDS
from ..format.records import (
    EXITED,
    READABLE_SCHEMA_VERSIONS,
    RUNNING,
    SCHEMA_VERSION,
    PassRecord,
    RunManifest,
    readable_schema,
)
from ..format.writer import writer_alive, writer_token
from ..fs import safe_read
from ..proc.shell import command

INTERRUPTED = "interrupted"  # shown for a run whose process is gone but never finished

DAMAGED = "damaged"
NOTHING_RECORDED = "the process ended before the compile recorded anything (killed as it began)"

_LATEST_TIME = 1e11  # year ~5138: any later 'started' is garbage, not a time


@dataclass(frozen=True)
class Run:
    """One run directory and, once loaded, its manifest (or why it could not be read)."""

    path: Path
    manifest: RunManifest | None = None
    problem: str | None = None  # one line when the run is damaged
    size: int = 0

    @property
    def run_id(self) -> str:
        return self.path.name

    @property
    def script_dir(self) -> Path:
        return self.path.parent.parent

    @property
    def status(self) -> str:
        if self.manifest is None:
            return DAMAGED
        return self.manifest.status

    def to_json(self) -> dict[str, Any]:
        """Return where the run is on disk and what state it is in, as JSON data.

        What `show --json` adds to a compile's summary (history/summary.py) in its rows.
        """
        return {
            "run_id": self.run_id,
            "script": self.script_dir.name,
            "path": str(self.path),
            "status": self.status,
            "size": self.size,
            "problem": self.problem,
        }

    def measured(self) -> Run:
        """Return this run with `size` measured: the bytes its directory holds on disk."""
        return replace(self, size=tree_bytes(self.path))

    def derived(self) -> Run:
        """Return this run with its derived views filled in (history/derived.py: +/- counts, facts)."""
        if self.manifest is None:
            return self
        from .derived import complete

        return replace(self, manifest=complete(self.path, self.manifest))

    def require(self) -> RunManifest:
        """Return the manifest, or raise RecordsError when the run is damaged."""
        if self.manifest is None:
            raise RecordsError(self.problem or f"run {self.path} cannot be read")
        return self.manifest


def is_run_dir(path: Path) -> bool:
    return path.is_dir() and is_run_name(path.name) and path.parent.name == RUN_RECORDS


def real_dir(path: Path) -> bool:
    """True when `path` itself is a directory: a link to one is never followed (the one symlink rule)."""
    try:
        return stat.S_ISDIR(os.lstat(path).st_mode)
    except OSError:
        return False


def is_script_dir(path: Path) -> bool:
    """True when `path` holds run records; a link (or a linked .run_records) is not followed."""
    return real_dir(path) and real_dir(path / RUN_RECORDS)


def run_dirs(script_dir: Path) -> list[Path]:
    """Return the run directories of one script, oldest first by the time in their ids."""
    root = Path(script_dir) / RUN_RECORDS
    try:
        entries = [p for p in root.iterdir() if is_run_name(p.name) and real_dir(p)]
    except FileNotFoundError:
        return []
    except OSError as exc:
        raise RecordsError(f"cannot read {root} ({exc.strerror or exc})") from None
    return sorted(entries, key=lambda p: (time_of_id(p.name) or 0.0, p.name))


def start_of(run: Run) -> float:
    """Return when a run started, as an absolute time (epoch seconds) wherever one is known.

    A UTC ("Z") run id first (a damaged manifest cannot move it); for an older id of naive
    local time, its manifest's `started` (absolute); else the id read as local time.
    """
    if id_time_is_absolute(run.run_id):
        return time_of_id(run.run_id) or 0.0
    t = safe_time(run.manifest.started) if run.manifest is not None else None
    return t if t is not None else (run_id_time(run.run_id) or 0.0)


def load_manifest(run_dir: Path, *, derive: bool = False) -> RunManifest:
    """Return the run's manifest, with records.jsonl merged in while it is running.

    `derive`: with the views a reader derives from the texts filled in (history/derived.py:
    +/- counts left to the reader, the facts of an ended run), computed on first read and
    cached beside the run. The readers that show them ask for it; listings and the pruner
    do not (they read only the manifest).

    Raises RecordsError (one line, names the file, says what to do) when it is
    missing, truncated, of another schema, or not a manifest at all.
    """
    run_dir = Path(run_dir)
    mpath = run_dir / MANIFEST
    log = run_dir / RECORDS_LOG
    hint = f"remove it with: {command('rm', '-r', run_dir)} (or tltrace clean)"
    if run_dir.is_symlink():
        raise RecordsError(f"run directory {run_dir} is a symbolic link; tltrace does not follow links")
    if not run_dir.is_dir():
        raise RecordsError(f"run directory {run_dir} does not exist")
    try:
        text = safe_read.read_text(mpath)  # never waits on a FIFO, never follows a link
    except FileNotFoundError:
        # records.jsonl alone: the manifest lost. Nothing at all, and its writer (the pid its id names)
        # gone: made, then killed before its first write (a kill -9 as the compile began).
        if log.is_file() or (_nothing_captured(run_dir) and _writer_gone(run_dir)):
            return _from_log_only(run_dir)
        raise RecordsError(
            f"run {run_dir.name} has no {MANIFEST} (damaged or never started); {hint}"
        ) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise RecordsError(f"cannot read {mpath} ({getattr(exc, 'strerror', None) or exc}); {hint}") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        if log.is_file():
            return _from_log_only(run_dir)
        what = "empty" if not text.strip() else f"truncated or not JSON ({exc.msg} at char {exc.pos})"
        raise RecordsError(f"manifest {mpath} is {what}; {hint}") from None
    if not isinstance(data, dict):
        raise RecordsError(f"manifest {mpath} is not a run manifest; {hint}")
    if readable_schema(data) is None:
        raise RecordsError(
            f"manifest {mpath} has schema version {data.get('schema_version')!r}; this tltrace reads versions "
            f"{READABLE_SCHEMA_VERSIONS} (writes {SCHEMA_VERSION}) (use the tltrace that wrote it, or {hint})"
        )
    try:
        manifest = RunManifest.from_json(data)
    except (TypeError, ValueError, KeyError) as exc:
        raise RecordsError(f"manifest {mpath} is damaged ({type(exc).__name__}: {exc}); {hint}") from None
    if manifest.status == RUNNING:
        manifest = _merge_log(run_dir, manifest)
    if derive:
        from .derived import complete

        manifest = complete(run_dir, manifest)
    return manifest


def _read_log(run_dir: Path) -> list[PassRecord]:
    """Return the records in records.jsonl; a torn last line (a killed writer) is skipped."""
    out: dict[int, PassRecord] = {}
    try:
        lines = safe_read.read_text(run_dir / RECORDS_LOG, errors="replace").splitlines()
    except OSError:
        return []
    for line in lines:
        try:
            rec = PassRecord.from_json(json.loads(line))
        except (ValueError, TypeError, KeyError):
            continue
        out[rec.index] = rec
    return [out[k] for k in sorted(out)]


def _merge_log(run_dir: Path, manifest: RunManifest) -> RunManifest:
    logged = _read_log(run_dir)
    if logged:
        known = {r.index: r for r in manifest.records}
        known.update({r.index: r for r in logged})
        manifest = manifest.with_records([known[k] for k in sorted(known)])
    if not writer_may_live(run_dir, manifest):
        # A process that died left its notes (session/fatal.py wrote them; format/notes.py): where, and of what.
        note = None if manifest.error else notes.note_of(run_dir)
        if note is None and not manifest.error and not manifest.records:
            note = NOTHING_RECORDED  # no note, no record: it died before its first pass
        # Its compile had ended: only the records were cut (session/exits.py), not the compile.
        status = EXITED if notes.ended(run_dir) else INTERRUPTED
        manifest = replace(manifest, status=status, error=note or manifest.error)
    return manifest


def run_id_time(run_id: str) -> float | None:
    """Return the start time (epoch seconds) encoded in a run or invocation id, or None when it holds none."""
    return safe_time(time_of_id(run_id))


def safe_time(value: object) -> float | None:
    """Return `value` as epoch seconds when it is a plausible time (finite, 0 < t < year 5000), else None."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    t = float(value)
    if not math.isfinite(t) or t <= 0 or t >= _LATEST_TIME:
        return None
    return t


def format_time(value: object) -> str:
    """Return a local 'YYYY-MM-DD HH:MM:SS' for a manifest time, '?' for a missing or impossible one."""
    t = safe_time(value)
    if t is None:
        return "?"
    try:
        return _dt.datetime.fromtimestamp(t).strftime("%Y-%m-%d %H:%M:%S")
    except (ValueError, OverflowError, OSError):
        return "?"


def _nothing_captured(run_dir: Path) -> bool:
    """True when the run directory holds nothing the capture writes, only what a reader wrote since
    (reports of `show --html`, the derived views' cache and its temporary), or nothing at all: made,
    then killed before its first write."""
    try:
        return all(_a_readers(e.name) and e.is_file(follow_symlinks=False) for e in os.scandir(run_dir))
    except OSError:
        return False


def _a_readers(name: str) -> bool:
    """True for a file a reader writes into a run directory (never the capture)."""
    return (
        name.endswith(".html")
        or name == DERIVED
        or (name.startswith(f".{DERIVED}.") and name.endswith(".tmp"))
    )


def _writer_gone(run_dir: Path) -> bool:
    """True when the run's id names its writer's pid and that process is gone (nothing else to ask)."""
    return is_run_name(run_dir.name) and not writer_alive(None, run_dir.name)


def _from_log_only(run_dir: Path) -> RunManifest:
    started = run_id_time(run_dir.name) or 0.0
    manifest = RunManifest(run_id=run_dir.name, script=run_dir.parent.parent.name, started=started)
    return _merge_log(run_dir, manifest)


def writer_may_live(run_dir: Path, manifest: RunManifest | None, *, force: bool = False) -> bool:
    """True while the invocation that writes the run may still write it.

    The lock its writers hold decides (`format/liveness.py`), whatever host wrote it. A run
    from before that lock falls back to the writer's pid, process start and host; a
    writer on another host then counts as alive unless `force` (it cannot be asked).
    """
    run_dir = Path(run_dir)
    key = (manifest.invocation if manifest is not None else None) or run_dir.name
    held = liveness.state(run_dir.parent, key)
    if held is not None:
        return held
    writer = manifest.writer if manifest is not None else None
    if force and isinstance(writer, dict) and writer.get("host") not in (None, "", writer_token()["host"]):
        return False
    return writer_alive(writer, run_dir.name)


def is_active(run: Run) -> bool:
    """Return True while the process that writes this run may still be writing it."""
    return run.status == RUNNING and run.manifest is not None and writer_may_live(run.path, run.manifest)


def load_run(run_dir: Path, *, size: bool = False, derive: bool = False) -> Run:
    """Return the Run at run_dir; a damaged one carries `problem` instead of raising (`derive`: load_manifest's)."""
    try:
        manifest, problem = load_manifest(run_dir, derive=derive), None
    except RecordsError as exc:
        manifest, problem = None, str(exc)
    return Run(Path(run_dir), manifest, problem, tree_bytes(run_dir) if size else 0)


def tree_bytes(path: Path, *, unique: bool = False) -> int:
    """Return the bytes of the regular files under `path`, never following a symbolic link.

    unique=True counts only files with no other hard link: what removing `path`
    frees at once (a stored text linked from another run stays).
    """
    total = 0
    stack = [os.fspath(path)]
    while stack:
        d = stack.pop()
        try:
            with os.scandir(d) as it:
                for e in it:
                    try:
                        if e.is_dir(follow_symlinks=False):
                            stack.append(e.path)
                        elif e.is_file(follow_symlinks=False):
                            st = e.stat(follow_symlinks=False)
                            if not unique or st.st_nlink <= 1:
                                total += st.st_size
                    except OSError:
                        pass
        except OSError:
            pass
    return total
