"""Glue between one codegen call and its working file: pick the file, reconcile, word the outcome.

session/codegen_call.py calls `reconcile_codegen` for each device/host codegen call when
working files are on; the file work happens in `files.py`, the decision in `decide.py`.

Which file: a working file belongs to one kernel *variant*: the kernel's name plus a
key read from the lowered module's launch shape (`variant.py`), never the order in
which kernels compile. The registry in `files.py` gives the first variant ever seen the
spec's names, a further kernel `codegen_<kernel>_device.cpp`, a further variant of a
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
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from . import files, registry
from .decide import Action
from .merge import marker_line
from .variant import Variant

NOTE = "NOTE"  # a PATCHED edit that was not compiled (kept for the diff view): said, recorded and listed so


@dataclass(frozen=True)
class CodegenOutcome:
    """What to compile for one codegen role, and what to tell the user."""

    compile_text: str  # the source to compile (the generated text when nothing changes)
    tag: str | None = None  # PATCHED, REGENERATED, SYNCED, CONFLICT, INIT-BACKUP, NOTE
    message: str | None = None
    path: Path | None = None
    warnings: tuple[str, ...] = ()
    notices: tuple[tuple[str, str, Path], ...] = ()  # (kind, message, path): e.g. NOT-APPLIED for a sibling
    origin: Path | None = None  # the working file `compile_text` comes from (PATCHED): errors name its lines
    diff: tuple[str, str] | None = None  # (baseline, edit): what PATCHED compiles, as the user changed it
    diff_names: tuple[str, str] = ("before", "after")  # the files `diff` compares: W.original, W
    unsaid: files.WorkingFile | None = None  # `settle` it once the tag was said (see files.settle)


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


# -- per invocation (one Settings object): what was reconciled, and what was said --------------------
@dataclass(frozen=True)
class _Seen:
    """A working file as this invocation's reconcile left it."""

    file: files.WorkingFile
    text: str | None
    stat: tuple[int, int] | None  # (mtime_ns, size): a cheap "not touched since"
    entry: registry.Entry | None = None  # the variant it holds
    tag: str | None = None  # what this invocation decided for it


def _stat(path: Path) -> tuple[int, int] | None:
    try:
        st = path.stat()
    except OSError:
        return None
    return (st.st_mtime_ns, st.st_size)


@dataclass
class Ledger:
    """What one invocation's reconciles left in the working files, and which edits it already reported.

    The invocation owns it (`tracing.invocation.Invocation.ledger`) and hands it to every
    call below; a call given none reconciles with no memory of earlier compiles.
    `claimed`: the working-file suffixes its compiles hold, per registry (the lineage rule
    of `registry.py` never lets a new shape take a file another shape of this
    invocation uses).
    """

    reconciled: dict[Path, _Seen] = field(default_factory=dict)
    told: set[Path] = field(default_factory=set)
    claimed: dict[Path, set[str]] = field(default_factory=dict)  # registry -> suffixes this invocation holds
    problems_said: set[str] = field(default_factory=set)
    lock: threading.Lock = field(default_factory=threading.Lock)


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
    not_compiled: str | None = None,
) -> CodegenOutcome:
    """Return the outcome for one codegen call: the text to compile, a tag and its message.

    `ledger`: the invocation's record of its reconciles (see `Ledger`). `not_compiled`: why
    an edit cannot be compiled, when it is not the backend (said in the NOTE instead).
    """
    wf: files.WorkingFile | None = None
    inv = ledger if ledger is not None else Ledger()
    said: list[str] = []
    try:
        layout = layout_for(settings, claim=True)
        from ..format import scripts

        said += scripts.take_problems(settings.trace_dir)
        with inv.lock:
            claimed = inv.claimed.setdefault(layout.registry_path, set())
        c = registry.claim(layout, kernel, variant, claimed, settings.invocation)
        for w in c.warnings:
            with inv.lock:
                if w in inv.problems_said:
                    continue
                inv.problems_said.add(w)
            said.append(w)
        wf = files.WorkingFile(layout.path_for(c.suffix, role), kernel, role, c.entry.describe() or None)
        # One lstat each: W there or a link; a baseline (a dangling link then fails the reconcile anyway).
        new_file = not (os.path.lexists(wf.path) or os.path.lexists(wf.original))
        applied = files.reconcile(wf, generated)
    except (OSError, ValueError) as exc:
        where = f" ({wf.path})" if wf is not None else ""
        edit = f"; edit in {wf.path} not applied" if wf is not None and wf.edited() else ""
        return CodegenOutcome(
            generated,
            warnings=(*said, f"working files skipped{where}: {getattr(exc, 'strerror', None) or exc}{edit}"),
        )
    warnings = (*said, *applied.warnings)
    d = applied.decision
    action = applied.tag_action
    tag = action.value if action not in (None, Action.UNCHANGED, Action.INIT) else None
    if applied.failed:
        # The decision was not carried out (a full disk): the working file is as it was.
        # Remember that text, so that the run's end does not report it as edited since.
        try:
            left = files.read_text(wf.path)
        except files.Unreadable:
            left = None
        seen = _Seen(wf, left, _stat(wf.path), c.entry)
    else:
        if d is not None and d.action is Action.PATCHED and not compiles_source:
            tag = NOTE  # the one place a working file's status is decided: PATCHED only when compiled
        seen = _Seen(wf, d.working if d is not None else None, _stat(wf.path), c.entry, tag)
    with inv.lock:
        inv.reconciled[wf.path] = seen
    path = wf.path
    notices = _siblings_not_applied(inv, wf)
    if d is None or applied.failed:  # no tag: its message would name files that were not written
        return CodegenOutcome(applied.compile_text, path=path, warnings=warnings, notices=notices)
    if new_file and d.action in (Action.INIT, Action.INIT_BACKUP):
        what = f"{kernel} {c.entry.describe()}".strip()
        role_note = f" ({role} code)" if role == "host" else ""
        notices = (
            (
                "NEW",
                f"working file {path}{role_note}: {what}; edit it and rerun to compile your edit",
                path,
            ),
            *notices,
        )
    message = _message(applied, action)
    if (
        c.continued_from is not None
        and message
        and action
        in (
            Action.REGENERATED,
            Action.SYNCED,
            Action.CONFLICT,
        )
    ):
        old, new = c.continued_from, c.entry
        message = f"{kernel} changed ({old.describe(new)} -> {new.describe(old)}): " + message
    if action is Action.UNRESOLVED:
        line = marker_line(d.working) or 1
        message = (
            f"{path.name}:{line} has conflict markers: the generated code was compiled and "
            f"{path} kept as it is; finish the merge (or 'tltrace resolve-conflict --ours' / "
            "'--theirs'), then rerun"
        )
    compile_text = applied.compile_text
    origin = diff = None
    diff_names = ("before", "after")
    if d.action is Action.PATCHED:
        origin, diff = path, (d.baseline, d.working)
        diff_names = (wf.original.name, path.name)
    if tag == NOTE:
        origin = None
        message = _not_compiled_message(
            path,
            not_compiled
            or f"the {backend or 'current'} backend builds a binary during codegen; use "
            'execution_backend="nvrtc" (CUDA) or "cython" (C, HIP) to compile edits',
        )
    return CodegenOutcome(
        compile_text,
        tag,
        message,
        path,
        warnings,
        notices,
        origin=origin,
        diff=diff,
        diff_names=diff_names,
        unsaid=wf if applied.unsaid else None,
    )


def _not_compiled_message(path: Path, why: str) -> str:
    return f"edits in {path} are kept for the diff view but not compiled: {why}"


def not_compiled(outcome: CodegenOutcome, why: str, ledger: Ledger | None = None) -> CodegenOutcome:
    """Return `outcome` (PATCHED) as NOTE: the edit could not be handed back to the build after all.

    The ledger's status of the working file changes with it, so the end-of-run list says NOTE too.
    An outcome that is not PATCHED comes back as it is.
    """
    if outcome.tag != Action.PATCHED.value or outcome.path is None:
        return outcome
    if ledger is not None:
        with ledger.lock:
            seen = ledger.reconciled.get(outcome.path)
            if seen is not None:
                ledger.reconciled[outcome.path] = replace(seen, tag=NOTE)
    return replace(outcome, tag=NOTE, origin=None, message=_not_compiled_message(outcome.path, why))


def settle(outcome: CodegenOutcome) -> None:
    """Call once the outcome's tag was said: a CONFLICT is then no longer reported again. Never raises."""
    if outcome.unsaid is None:
        return
    try:
        files.settle(outcome.unsaid)
    except OSError:
        pass


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
            x
            for p, x in inv.reconciled.items()
            if p != wf.path and p not in inv.told and x.file.kernel == wf.kernel and x.file.role == wf.role
        ]
        mine = inv.reconciled.get(wf.path)
    out = []
    for other in others:
        if _edited_since(inv, other.file, fast=True):
            with inv.lock:
                inv.told.add(other.file.path)
            at = _at(wf.kernel, mine.entry if mine else None, other.entry)
            out.append(
                (
                    "NOT-APPLIED",
                    f"edit in {other.file.path} not applied: {at}; this compile uses {wf.path}"
                    + _onto_hint(other.file, wf),
                    other.file.path,
                )
            )
    return tuple(out)


def _at(kernel: str, compiled: registry.Entry | None, held: registry.Entry | None) -> str:
    """Say "add compiled at 2048, not at 1024" when both variants are known."""
    if compiled is not None and held is not None and compiled.parts and held.parts:
        return f"{kernel} compiled at {compiled.describe(held)}, not at {held.describe(compiled)}"
    return f"it belongs to another variant of {kernel}"


def _onto_hint(src: files.WorkingFile, dst: files.WorkingFile) -> str:
    return f"; to carry the edit over: tltrace resolve-conflict --onto {dst.path.name} --from {src.path.name}"


def unapplied_edits(
    settings: Any, ledger: Ledger | None = None, *, cached: set[str] | frozenset[str] = frozenset()
) -> list[Unapplied]:
    """Return the edits waiting in working files that this invocation did not compile (nothing is written).

    `ledger`: the invocation's reconciles (None: it reconciled nothing). `cached`: kernels
    that came from TileLang's kernel cache (they ran no codegen).
    """
    on = settings.working_files_enabled()
    try:
        layout = layout_for(settings) if on else layout_at(settings.script_dir)
        known = registry.known_working_files(layout)
        entries = {e.suffix: e for e in registry.entries_of(layout).entries.values()}
    except (OSError, ValueError):
        return []
    inv = ledger if ledger is not None else Ledger()
    with inv.lock:
        compiled = list(inv.reconciled.values())
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
        elif wf.kernel is None:
            why = "no record says which kernel it belongs to"
        else:
            hit = layout.suffix_of(wf.path.name)
            held = entries.get(hit[0]) if hit else None
            ran = [x for x in compiled if x.file.kernel == wf.kernel and x.file.role == wf.role]
            if ran:
                why = _at(k, ran[0].entry, held) + _onto_hint(wf, ran[0].file)
            else:
                why = f"{k} was not compiled by tltrace in this run"
        out.append(Unapplied(wf.path, wf.kernel, why))
    return out


@dataclass(frozen=True)
class HeldVariant:
    """One working file and the variant it holds, for the end-of-run list."""

    path: Path
    kernel: str | None
    role: str | None
    variant: str  # e.g. "1024 f32 grid 8 thr 128"
    tag: str | None


def working_files_held(inv: Ledger) -> list[HeldVariant]:
    """Return the working files this invocation compiled into, with the variant each holds."""
    with inv.lock:
        seen = sorted(inv.reconciled.values(), key=lambda x: (x.file.path.name, str(x.file.role)))
    return [
        HeldVariant(
            x.file.path,
            x.file.kernel,
            x.file.role,
            x.entry.describe() if x.entry is not None else "",
            x.tag,
        )
        for x in seen
    ]


def held_by_others(settings: Any, runs: Any, have: set[Path]) -> list[HeldVariant]:
    """Return the working files the compiles of the job's other processes (a process pool, torchrun
    ranks) wrote, read from their records, leaving out those in `have`; the newest write wins."""
    try:
        layout = layout_for(settings)
        entries = {e.suffix: e for e in registry.entries_of(layout).entries.values()}
    except (OSError, ValueError):
        return []
    out: dict[Path, HeldVariant] = {}
    for m in runs:
        for r in m.records:
            if not r.working_file or Path(r.working_file) in have:
                continue
            path = Path(r.working_file)
            hit = layout.suffix_of(path.name)
            entry = entries.get(hit[0]) if hit else None
            role = r.role or (hit[1] if hit else None)
            out[path] = HeldVariant(
                path, m.kernel, role, entry.describe() if entry is not None else "", r.reconcile
            )
    return sorted(out.values(), key=lambda h: (h.path.name, str(h.role)))


def report_unapplied(
    settings: Any,
    emit: Any,
    ledger: Ledger | None = None,
    *,
    cached: set[str] | frozenset[str] = frozenset(),
    others: Any = (),
) -> int:
    """The edit loop's end-of-invocation report: which file holds which variant, then every edit not compiled.

    Emits one WorkingFiles event (when this invocation compiled into working files, in this
    process or, read from `others`' records, in the job's other processes), and one
    NOT-APPLIED notice per edit `unapplied_edits` finds; returns how many. Never raises.
    """
    from ..session.events import Notice

    try:
        held = working_files_held(ledger) if ledger is not None else []
        if others:
            held += held_by_others(settings, others, {h.path for h in held})
        if held:
            from ..session.events import WorkingFiles

            emit(WorkingFiles(held[0].path.parent, tuple(held)))
    except Exception:
        pass
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
            "the run before was killed before it said this CONFLICT; "
            if a.recovered is Action.CONFLICT
            and a.decision is not None
            and a.decision.action is not Action.CONFLICT
            else ""
        )
        # resolve-conflict moves both to their next numbered slot (reconcile/resolve.py): name
        # those too, so the file the line names is the one there after the rebase.
        n = files._next_number(a.file.bak, a.file.original_bak)
        kept = f"{files.free_slot(a.file.bak, n).name} and {files.free_slot(a.file.original_bak, n).name}"
        return (
            f"{again}codegen changed and {p} was edited: edits saved to {bak}, "
            f"old baseline to {obak}; {p.name} regenerated and the new code runs. "
            f"Rebase your edits with 'tltrace resolve-conflict' (which keeps them as {kept})"
        )
    if action is Action.INIT_BACKUP:
        return f"{p} had no baseline: saved it to {p.name}.bak, then initialised from codegen"
    return None
