"""Glue between one codegen call and its working file: pick the file, reconcile, word the outcome.

session/codegen_call.py calls `reconcile_codegen` for each device/host codegen call when
working files are on; the file work happens in `files.py`, the decision in `decide.py`.

Which file: a working file belongs to one kernel *variant*: the kernel's name plus a
key read from the lowered module's launch shape (`variant.py`), never the order in
which kernels compile. The registry in `files.py` gives the first variant ever seen the
documented names (docs/edit-recompile.md), a further kernel `codegen_<kernel>_device.cpp`, a further variant of a
kernel `codegen_<kernel>_<shape>_device.cpp`. Two compiles of one kernel at one launch shape
share a file: a change of their code goes through the decision table, in one run (a
notebook recompiling) as across runs.

Nothing is skipped without a word: an edit tltrace cannot apply (its kernel is not
compiled in this run, came from the kernel cache, or working files are off) is listed
by `unapplied_edits`, which `tltrace run` and `tltrace.disable()` report at the end.
"""

from __future__ import annotations

import errno
import os
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import files
from .decide import Action
from .variant import Variant


@dataclass(frozen=True)
class CodegenOutcome:
    """What to compile for one codegen role, and what to tell the user."""

    compile_text: str  # the source to compile (the generated text when nothing changes)
    tag: str | None = None  # PATCHED, REGENERATED, SYNCED, CONFLICT, INIT-BACKUP, NOTE
    message: str | None = None
    path: Path | None = None
    warnings: tuple[str, ...] = ()
    notices: tuple[tuple[str, str, Path], ...] = ()  # (kind, message, path): e.g. NOT-APPLIED for a sibling


@dataclass(frozen=True)
class Unapplied:
    """An edit waiting in a working file that this run did not compile."""

    path: Path
    kernel: str | None
    reason: str

    @property
    def message(self) -> str:
        return f"edit in {self.path} not applied: {self.reason}"


# -- where the working files are ------------------------------------------------------------------------
def layout_at(script_dir: Path, codegen_output: Any = None) -> files.Layout:
    """Return the working-file layout of a script dir, or of an explicit --codegen-output path.

    Which script dir an argument names is history.resolve's job (`script_dir`).
    """
    from ..config import DEFAULT

    if codegen_output is None or codegen_output is DEFAULT:
        return files.Layout.default(Path(script_dir))
    return files.Layout.custom_path(Path(codegen_output).absolute())


def layout_for(settings: Any, *, claim: bool = False) -> files.Layout:
    """Return where `settings` puts working files; `claim` records the script dir (before writing)."""
    from ..config import DEFAULT

    out = settings.codegen_output
    if out is not DEFAULT and out is not None:
        return layout_at(Path(out), out)
    script_dir = settings.claim_script_dir() if claim else settings.script_dir
    if claim and os.path.islink(script_dir):  # the one symlink rule: never written through
        raise OSError(errno.ELOOP, f"{script_dir} is a symbolic link; tltrace writes nothing through it")
    return layout_at(script_dir)


# -- per invocation: what was reconciled, and what was said --------------------
@dataclass(frozen=True)
class _Seen:
    """A working file as this invocation's reconcile left it."""

    file: files.WorkingFile
    text: str | None
    stat: tuple[int, int] | None  # (mtime_ns, size): a cheap "not touched since"


def _stat(path: Path) -> tuple[int, int] | None:
    try:
        st = path.stat()
    except OSError:
        return None
    return (st.st_mtime_ns, st.st_size)


@dataclass
class Ledger:
    """What one invocation's reconciles left in the working files, and which edits it already reported.

    The invocation owns it (`session.invocation.Invocation.ledger`) and hands it to every
    call below; a call given none reconciles with no memory of earlier compiles.
    """

    reconciled: dict[Path, _Seen] = field(default_factory=dict)
    told: set[Path] = field(default_factory=set)
    lock: threading.Lock = field(default_factory=threading.Lock)


def _pick(layout: files.Layout, kernel: str, role: str | None, variant: Variant | None) -> files.WorkingFile:
    if variant is None:
        return files.working_file(layout, kernel, role)
    return files.working_file(layout, kernel, role, variant.key, variant.label)


def reconcile_codegen(
    settings: Any,
    *,
    kernel: str,
    role: str | None,
    generated: str,
    compiles_source: bool,
    backend: str | None,
    variant: Variant | None = None,
    ledger: Ledger | None = None,
) -> CodegenOutcome:
    """Return the outcome for one codegen call: the text to compile, a tag and its message.

    `ledger`: the invocation's record of its reconciles (see `Ledger`).
    """
    wf: files.WorkingFile | None = None
    try:
        layout = layout_for(settings, claim=True)
        wf = _pick(layout, kernel, role, variant)
        applied = files.reconcile(wf, generated)
    except (OSError, ValueError) as exc:
        where = f" ({wf.path})" if wf is not None else ""
        edit = f"; edit in {wf.path} not applied" if wf is not None and wf.edited() else ""
        return CodegenOutcome(
            generated,
            warnings=(f"working files skipped{where}: {getattr(exc, 'strerror', None) or exc}{edit}",),
        )
    inv = ledger if ledger is not None else Ledger()
    if applied.failed:
        # The decision was not carried out (a full disk): the working file is as it was.
        # Remember that text, so that the run's end does not report it as edited since.
        try:
            left = files.read_text(wf.path)
        except files.Unreadable:
            left = None
        seen = _Seen(wf, left, _stat(wf.path))
    else:
        seen = _Seen(wf, applied.decision.working if applied.decision is not None else None, _stat(wf.path))
    with inv.lock:
        inv.reconciled[wf.path] = seen
    d = applied.decision
    path = wf.path
    notices = _siblings_not_applied(inv, wf)
    if d is None or applied.failed:  # no tag: its message would name files that were not written
        return CodegenOutcome(applied.compile_text, path=path, warnings=applied.warnings, notices=notices)
    action = applied.tag_action
    tag = action.value if action not in (None, Action.UNCHANGED, Action.INIT) else None
    message = _message(applied, action)
    compile_text = applied.compile_text
    if d.action is Action.PATCHED and not compiles_source:
        tag = "NOTE"
        message = (
            f"edits in {path} are kept for the diff view but not compiled: the "
            f"{backend or 'current'} backend builds a binary during codegen; use "
            'execution_backend="nvrtc" (CUDA) or "cython" (C, HIP) to compile edits'
        )
    return CodegenOutcome(compile_text, tag, message, path, applied.warnings, notices)


def _edited_since(inv: Ledger, wf: files.WorkingFile, *, fast: bool = False) -> bool:
    """Return True when `wf` was reconciled in this invocation and has been edited since.

    `fast` trusts an unchanged (mtime, size) for "not edited": cheap enough for every compile.
    """
    with inv.lock:
        seen = inv.reconciled.get(wf.path)
    if seen is None or (fast and seen.stat is not None and _stat(wf.path) == seen.stat):
        return False
    try:
        now = files.read_text(wf.path)
    except files.Unreadable:
        return False
    return now is not None and now != seen.text and wf.edited()


def _siblings_not_applied(inv: Ledger, wf: files.WorkingFile) -> tuple[tuple[str, str, Path], ...]:
    """Say at once when another variant of this kernel was edited during this run and is now passed over.

    A notebook that compiles a kernel, has its working file edited, then recompiles the
    kernel at a new size gets a new working file; the edit is then not applied, and the
    user hears it now, once. (A variant merely not compiled yet is said at the run's end.)
    """
    if wf.kernel is None:
        return ()
    with inv.lock:  # only a file reconciled earlier in this run can have been edited during it
        others = [
            x.file
            for p, x in inv.reconciled.items()
            if p != wf.path and p not in inv.told and x.file.kernel == wf.kernel and x.file.role == wf.role
        ]
    out = []
    for other in others:
        if _edited_since(inv, other, fast=True):
            with inv.lock:
                inv.told.add(other.path)
            out.append(
                (
                    "NOT-APPLIED",
                    f"edit in {other.path} not applied: it belongs to another variant of "
                    f"{wf.kernel}; this compile uses {wf.path}",
                    other.path,
                )
            )
    return tuple(out)


def unapplied_edits(
    settings: Any, ledger: Ledger | None = None, *, cached: set[str] | frozenset[str] = frozenset()
) -> list[Unapplied]:
    """Return the edits waiting in working files that this invocation did not compile (nothing is written).

    `ledger`: the invocation's reconciles (None: it reconciled nothing). `cached`: kernels that came from TileLang's kernel cache (they ran no codegen).
    """
    on = settings.working_files_enabled()
    try:
        layout = layout_for(settings) if on else layout_at(settings.script_dir)
        known = files.known_working_files(layout)
    except (OSError, ValueError):
        return []
    inv = ledger if ledger is not None else Ledger()
    out = []
    for wf in known:
        with inv.lock:
            if wf.path in inv.told:
                continue
            seen = wf.path in inv.reconciled
        if seen and not _edited_since(inv, wf):
            continue
        if not wf.edited():
            continue
        k = wf.kernel or "its kernel"
        if not on:
            why = (
                "working files are off in this run (--mode terminal or --no-codegen-output); "
                "use --mode both to compile it"
            )
        elif seen:
            why = f"it was edited after {k} compiled in this run; it applies when {k} compiles again"
        elif wf.kernel in cached:
            why = f"{k} came from TileLang's kernel cache (drop --use-cache to compile the edit)"
        else:
            why = f"{k} was not compiled by tltrace in this run"
        out.append(Unapplied(wf.path, wf.kernel, why))
    return out


def report_unapplied(
    settings: Any, emit: Any, ledger: Ledger | None = None, *, cached: set[str] | frozenset[str] = frozenset()
) -> int:
    """Emit one NOT-APPLIED notice per edit `unapplied_edits` finds; return how many. Never raises."""
    from ..session.events import Notice

    try:
        found = unapplied_edits(settings, ledger, cached=cached)
        for u in found:
            emit(Notice("NOT-APPLIED", u.message, kernel=u.kernel, path=u.path))
        return len(found)
    except Exception:
        return 0


def _message(a: files.Applied, action: Action | None) -> str | None:
    p = a.file.path
    if action is Action.PATCHED:
        return f"from {p}"
    if action is Action.REGENERATED:
        return f"codegen changed; {p} regenerated"
    if action is Action.SYNCED:
        return f"your edits match the new codegen; baseline advanced ({p})"
    if action is Action.CONFLICT:
        bak = a.backup.name if a.backup else a.file.bak.name
        obak = a.baseline_backup.name if a.baseline_backup else a.file.original_bak.name
        again = (
            "the run before was killed while it saved this CONFLICT; "
            if a.recovered is Action.CONFLICT
            and a.decision is not None
            and a.decision.action is not Action.CONFLICT
            else ""
        )
        return (
            f"{again}codegen changed and {p} was edited: edits saved to {bak}, "
            f"old baseline to {obak}; {p.name} regenerated. Rebase your edits with 'tltrace resolve-conflict'"
        )
    if action is Action.INIT_BACKUP:
        return f"{p} had no baseline: saved it to {p.name}.bak, then initialised from codegen"
    return None
