"""`resolve-conflict` core: rebase the edits a CONFLICT saved onto the new codegen (three-way merge).

old baseline = W.original.bak, saved edits = W.bak, new codegen = W.latest (else W.original).
Afterwards W holds the merge, W.original the new codegen (so the next run PATCHes W in), and
the consumed .bak / .original.bak move to numbered slots: nothing is deleted. Returns data; no printing.

Crash safety, as in files.py: W is written before its baseline, the backups are archived
last (a kill before that leaves the CONFLICT pending, and resolving again is harmless),
and temp files a killed write left behind are removed under the lock.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..errors import RecordsError, UsageError
from . import files
from .merge import merge3

STRATEGIES = ("merge", "ours", "theirs")


@dataclass(frozen=True)
class Resolution:
    """The result of resolving one working file."""

    file: files.WorkingFile
    text: str  # what the working file holds (or would hold, with dry_run)
    conflicts: int  # conflict regions left in `text` (0 for ours/theirs)
    strategy: str
    written: bool
    saved_copy: Path | None = None  # where edits made after the CONFLICT were saved first
    archived: tuple[Path, ...] = ()


def pending(wf: files.WorkingFile) -> bool:
    """Return True when `wf` has an unresolved CONFLICT (both .bak and .original.bak)."""
    return all(p.is_file() and not p.is_symlink() for p in (wf.bak, wf.original_bak))


def find_pending(layout: files.Layout, *, role: str | None = None, kernel: str | None = None
                 ) -> list[files.WorkingFile]:
    """Return the working files under `layout` with an unresolved CONFLICT, filtered by role/kernel."""
    out = []
    for wf in files.known_working_files(layout):
        if role is not None and wf.role != role:
            continue
        if kernel is not None and wf.kernel != kernel:
            continue
        if pending(wf):
            out.append(wf)
    return out


def _read(path: Path) -> str:
    try:
        text = files.read_text(path)
    except files.Unreadable as exc:
        raise RecordsError(str(exc)) from None
    if text is None:
        raise RecordsError(f"{path} is missing")
    return text


def resolve(wf: files.WorkingFile, *, strategy: str = "merge", dry_run: bool = False) -> Resolution:
    """Rebase the saved edits of `wf` onto its new codegen; write unless `dry_run`."""
    if strategy not in STRATEGIES:
        raise UsageError(f"unknown strategy {strategy!r}; use one of {', '.join(STRATEGIES)}")
    with files.locked(wf.lock_path):
        links = [p for p in wf.companions() if p.is_symlink()]
        if links:
            raise RecordsError(f"{links[0]} is a symbolic link; tltrace neither reads nor writes through links")
        if not dry_run:
            files.clean_temps(wf)
        base = _read(wf.original_bak)
        ours = _read(wf.bak)
        theirs = files.read_text(wf.latest) if wf.latest.is_file() else None
        if theirs is None:
            theirs = _read(wf.original)
        if strategy == "ours":
            text, conflicts = ours, 0
        elif strategy == "theirs":
            text, conflicts = theirs, 0
        else:
            m = merge3(base, ours, theirs, ours_label=f"your edits ({wf.bak.name})",
                       theirs_label=f"new codegen ({wf.latest.name})")
            text, conflicts = m.text, m.conflicts
        if dry_run:
            return Resolution(wf, text, conflicts, strategy, written=False)
        try:
            current = files.read_text(wf.path)
        except files.Unreadable as exc:
            raise RecordsError(f"{exc}; move it away and run resolve-conflict again") from None
        try:
            baseline = files.read_text(wf.original)
        except files.Unreadable:
            baseline = None
        number = files._next_number(wf.bak, wf.original_bak)
        saved = None
        if current is not None and current not in (baseline, theirs, text):
            # edits made after the CONFLICT: keep them as the newest numbered backup
            saved = files.free_slot(wf.bak, number)
            files.write_atomic(saved, current)
            number = int(saved.name.rsplit(".", 1)[1]) + 1
        if current != text:
            files.write_atomic(wf.path, text)
        if baseline != theirs:
            files.write_atomic(wf.original, theirs)
        archived = tuple(p for p in (files.archive(wf.bak, number), files.archive(wf.original_bak, number)) if p)
        return Resolution(wf, text, conflicts, strategy, written=True, saved_copy=saved, archived=archived)
