"""Retention: remove old run directories, then the stored texts no run links to any more.

Only `run_*` directories under `.run_records` are ever removed (and unreferenced
files in `.run_records/.objects`). Working files (codegen_*.cpp), their baselines,
`.latest` files and backups are never touched. A run whose process is still
writing it is never removed.
"""

from __future__ import annotations

import re
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path

from .errors import UsageError
from .runs import is_active, load_run, run_dirs
from .session.store import RUN_RECORDS, collect_garbage

_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
_PART = re.compile(r"(\d+(?:\.\d+)?)\s*([smhdw])")


def parse_duration(text: str) -> float:
    """Return seconds for a duration such as '30s', '10m', '2h', '7d', '1w', '1d12h' (bare number: days)."""
    t = text.strip().lower()
    if re.fullmatch(r"\d+(?:\.\d+)?", t):
        return float(t) * 86400
    pos, total = 0, 0.0
    for m in _PART.finditer(t):
        if t[pos:m.start()].strip():
            break
        total += float(m.group(1)) * _UNITS[m.group(2)]
        pos = m.end()
    if pos == 0 or t[pos:].strip():
        raise UsageError(f"--older-than {text!r} is not a duration; use e.g. 30m, 12h, 7d, 2w or 1d12h")
    return total


@dataclass
class CleanResult:
    """What clean removed (or would remove, in a dry run)."""

    removed: list[Path] = field(default_factory=list)
    kept: int = 0
    skipped_active: list[Path] = field(default_factory=list)
    objects_removed: int = 0
    bytes_freed: int = 0
    dry_run: bool = False

    def to_json(self) -> dict:
        return {
            "removed": [str(p) for p in self.removed], "kept": self.kept,
            "skipped_active": [str(p) for p in self.skipped_active],
            "objects_removed": self.objects_removed, "bytes_freed": self.bytes_freed, "dry_run": self.dry_run,
        }


def _run_time(path: Path) -> float:
    """Return when the run started: from its id, else the directory's mtime."""
    m = re.match(r"run_(\d{8})_(\d{6})_", path.name)
    if m:
        import datetime as _dt

        try:
            return _dt.datetime.strptime(m.group(1) + m.group(2), "%Y%m%d%H%M%S").timestamp()
        except ValueError:
            pass
    try:
        return path.stat().st_mtime
    except OSError:
        return time.time()


def _tree_bytes_unique(path: Path) -> int:
    """Bytes that removing `path` frees right away (files with no other hard link)."""
    total = 0
    for p in path.rglob("*"):
        try:
            st = p.lstat()
        except OSError:
            continue
        if p.is_file() and st.st_nlink <= 1:
            total += st.st_size
    return total


def clean(script_dirs: list[Path] | tuple[Path, ...], *, keep: int | None = None,
          older_than: float | None = None, remove_all: bool = False, dry_run: bool = False,
          now: float | None = None) -> CleanResult:
    """Remove runs of each script dir: beyond the newest `keep`, older than `older_than` seconds, or all.

    With both limits a run goes when either says so. Returns what was removed.
    """
    if keep is None and older_than is None and not remove_all:
        raise UsageError("say what to remove: --keep N, --older-than DURATION, or --all")
    if keep is not None and keep < 1:
        raise UsageError("--keep 0 would remove every run; say --all for that (--keep N keeps the newest N)")
    now = time.time() if now is None else now
    result = CleanResult(dry_run=dry_run)
    for sd in script_dirs:
        runs = run_dirs(sd)
        doomed: list[Path] = []
        for i, path in enumerate(runs):
            newer = len(runs) - 1 - i  # how many runs are newer than this one
            go = remove_all
            if keep is not None and newer >= keep:
                go = True
            if older_than is not None and now - _run_time(path) > older_than:
                go = True
            if go:
                doomed.append(path)
        gone = 0
        for path in doomed:
            if is_active(load_run(path)):
                result.skipped_active.append(path)
                continue
            result.removed.append(path)
            gone += 1
            if dry_run:
                continue
            result.bytes_freed += _tree_bytes_unique(path)
            shutil.rmtree(path, ignore_errors=True)
        result.kept += len(runs) - gone
        if gone and not dry_run:
            objects = Path(sd) / RUN_RECORDS / ".objects"
            before = _tree_bytes_unique(objects) if objects.is_dir() else 0
            result.objects_removed += collect_garbage(Path(sd) / RUN_RECORDS)
            after = _tree_bytes_unique(objects) if objects.is_dir() else 0
            result.bytes_freed += max(0, before - after)
    return result
