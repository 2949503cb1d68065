"""`resolve-conflict` core: rebase the edits a CONFLICT saved onto the new codegen (three-way merge).

old baseline = W.original.bak, saved edits = W.bak, new codegen = W.latest (else W.original).
Afterwards W holds the merge, W.original the new codegen (so the next run PATCHes W in), and
the consumed .bak / .original.bak move to numbered slots: nothing is deleted. Returns data; no printing.

Crash safety, as in files.py: W is written before its baseline, the backups are archived
last (a kill before that leaves the CONFLICT pending, and resolving again is harmless),
and temp files a killed write left behind are removed under the lock.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ..errors import RecordsError, UsageError
from . import files, registry
from .merge import marker_line, merge3, take_side

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
    markers_at: int | None = None  # a merge done before left markers here, untouched (strategy merge)


def pending(wf: files.WorkingFile) -> bool:
    """Return True when `wf` has an unresolved CONFLICT (both .bak and .original.bak)."""
    return all(p.is_file() and not p.is_symlink() for p in (wf.bak, wf.original_bak))


def markers_at(wf: files.WorkingFile) -> int | None:
    """Return the line of the first conflict marker region left in W (a merge not finished), else None."""
    try:
        text = files.read_text(wf.path)
    except files.Unreadable:
        return None
    return marker_line(text) if text is not None else None


def unresolved(wf: files.WorkingFile) -> bool:
    """A CONFLICT not merged yet, or a merge whose markers are still in W."""
    return pending(wf) or markers_at(wf) is not None


def find_pending(
    layout: files.Layout, *, role: str | None = None, kernel: str | None = None
) -> list[files.WorkingFile]:
    """Return the working files under `layout` with an unresolved CONFLICT, filtered by role/kernel."""
    out = []
    for wf in registry.known_working_files(layout):
        if role is not None and wf.role != role:
            continue
        if kernel is not None and wf.kernel != kernel:
            continue
        if unresolved(wf):
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
    with files.transaction(wf, tidy=not dry_run):  # removes the temps a killed write left
        links = [p for p in wf.companions() if p.is_symlink()]
        if links:
            raise RecordsError(
                f"{links[0]} is a symbolic link; tltrace neither reads nor writes through links"
            )
        if not pending(wf):
            return _finish_markers(wf, strategy, dry_run)
        number = files._next_number(wf.bak, wf.original_bak)
        base = _read(wf.original_bak)
        ours = _read(wf.bak)
        theirs = files.read_text(wf.latest) if wf.latest.is_file() else None
        if theirs is None:
            theirs = _read(wf.original)
        current = baseline = None
        if not dry_run:
            try:
                current = files.read_text(wf.path)
            except files.Unreadable as exc:
                raise RecordsError(f"{exc}; move it away and run resolve-conflict again") from None
            try:
                baseline = files.read_text(wf.original)
            except files.Unreadable:
                baseline = None
        saved = None
        if current is not None and current not in (baseline, theirs):
            # edits made after the CONFLICT: kept as the newest numbered backup (below)
            saved = files.free_slot(wf.bak, number)
            number = int(saved.name.rsplit(".", 1)[1]) + 1
        # The labels name the files as they are after this resolve: the backup's numbered
        # name, and the baseline (which then holds the new codegen).
        text, conflicts = _pick(
            strategy,
            base,
            ours,
            theirs,
            lambda: f"your edits ({files.free_slot(wf.bak, number).name})",
            f"new codegen ({wf.original.name})",
        )
        if dry_run:
            return Resolution(wf, text, conflicts, strategy, written=False)
        if saved is not None and current != text:
            files.write_atomic(saved, current)  # type: ignore[arg-type]
        else:
            saved = None
        if current != text:
            files.write_atomic(wf.path, text)
        if baseline != theirs:
            files.write_atomic(wf.original, theirs)
        archived = tuple(
            p for p in (files.archive(wf.bak, number), files.archive(wf.original_bak, number)) if p
        )
        return Resolution(wf, text, conflicts, strategy, written=True, saved_copy=saved, archived=archived)


def _finish_markers(wf: files.WorkingFile, strategy: str, dry_run: bool) -> Resolution:
    """Resolve-conflict on a W whose merge left markers: --ours/--theirs take a side of each region."""
    text = _read(wf.path)
    line = marker_line(text)
    if line is None:
        raise RecordsError(f"{wf.path.name} has no unresolved CONFLICT")
    if strategy == "merge":
        regions = take_side(text, "ours")[1]
        return Resolution(wf, text, regions, strategy, written=False, markers_at=line)
    out, _ = take_side(text, strategy)
    if not dry_run:
        files.write_atomic(wf.path, out)
    return Resolution(wf, out, 0, strategy, written=not dry_run)


# -- carrying an edit over to another variant (`resolve-conflict --onto`) ---------------------------------
def find_variant(layout: files.Layout, spec: str, *, role: str = "device") -> files.WorkingFile:
    """Return the working file VARIANT names: its file name, its variant ("2048", "1024 f32 grid 8 thr 128")."""
    known = [wf for wf in registry.known_working_files(layout) if wf.role == role]
    hits = [wf for wf in known if wf.path.name == spec]
    if not hits:
        hits = [wf for wf in known if wf.label == spec]
    if not hits:
        hits = [
            wf for wf in known if wf.label and (wf.label.split(" ")[0] == spec or spec in wf.label.split(" "))
        ]
    if len(hits) == 1:
        return hits[0]
    listed = ", ".join(f"{wf.path.name} ({wf.kernel} {wf.label})" for wf in known) or "none"
    if hits:
        raise UsageError(f"{spec!r} names several working files: name one by its file name ({listed})")
    raise UsageError(f"no working file holds a variant {spec!r} in {layout.directory}; there are: {listed}")


def edited_sources(layout: files.Layout, dst: files.WorkingFile) -> list[files.WorkingFile]:
    """Return the other variants of dst's kernel whose working file holds an edit."""
    return [
        wf
        for wf in registry.known_working_files(layout)
        if wf.path != dst.path and wf.kernel == dst.kernel and wf.role == dst.role and wf.edited()
    ]


def carry_over(
    src: files.WorkingFile, dst: files.WorkingFile, *, strategy: str = "merge", dry_run: bool = False
) -> Resolution:
    """Three-way merge of src's edit (src.original -> src) onto dst's codegen; dst then holds it.

    The next run compiles it into dst's variant (PATCHED). src keeps its edit for its own
    variant. Refused when dst holds an edit of its own (nothing is ever overwritten).
    """
    if strategy not in STRATEGIES:
        raise UsageError(f"unknown strategy {strategy!r}; use one of {', '.join(STRATEGIES)}")
    base, ours = _read(src.original), _read(src.path)
    if base == ours:
        raise UsageError(f"{src.path.name} holds no edit (it equals {src.original.name})")
    with files.transaction(dst, tidy=not dry_run):
        links = [p for p in (*src.companions(), *dst.companions()) if p.is_symlink()]
        if links:
            raise RecordsError(
                f"{links[0]} is a symbolic link; tltrace neither reads nor writes through links"
            )
        theirs = files.read_text(dst.latest) if dst.latest.is_file() else None
        if theirs is None:
            theirs = _read(dst.original)
        current = files.read_text(dst.path)
        baseline = files.read_text(dst.original)
        if current is not None and current not in (baseline, theirs):
            raise UsageError(
                f"{dst.path.name} holds an edit of its own; carry the edit over by hand, or move "
                f"{dst.path.name} away first (its edit would be overwritten)"
            )
        text, conflicts = _pick(
            strategy,
            base,
            ours,
            theirs,
            lambda: f"your edit ({src.path.name})",
            f"codegen of this variant ({dst.original.name})",
        )
        if dry_run:
            return Resolution(dst, text, conflicts, strategy, written=False)
        if current != text:
            files.write_atomic(dst.path, text)
        if baseline != theirs:
            files.write_atomic(dst.original, theirs)
        return Resolution(dst, text, conflicts, strategy, written=True)


def _pick(
    strategy: str, base: str, ours: str, theirs: str, ours_label: Callable[[], str], theirs_label: str
) -> tuple[str, int]:
    """Return the resolved text and its conflict count: one side whole, or the three-way merge."""
    if strategy == "ours":
        return ours, 0
    if strategy == "theirs":
        return theirs, 0
    m = merge3(base, ours, theirs, ours_label=ours_label(), theirs_label=theirs_label)
    return m.text, m.conflicts
