"""Glue between one codegen call and its working file: pick the file, reconcile, word the outcome.

session/tool.py calls `reconcile_codegen` for each device/host codegen call when
working files are on; the file work happens in `files.py`, the decision in `decide.py`.

Several kernels in one script: the registry in `files.py` gives the first kernel ever
seen the spec's names and every further kernel its own (`codegen_<kernel>_device.cpp`).
A kernel name compiled twice in one run with different source (e.g. one factory at
two sizes) is a different kernel: its second variant is registered as `<name>#2`.
"""

from __future__ import annotations

import hashlib
import threading
import weakref
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import files
from .decide import Action


@dataclass(frozen=True)
class CodegenOutcome:
    """What to compile for one codegen role, and what to tell the user."""

    compile_text: str  # the source to compile (the generated text when nothing changes)
    tag: str | None = None  # PATCHED, REGENERATED, SYNCED, CONFLICT, INIT-BACKUP, NOTE
    message: str | None = None
    path: Path | None = None
    warnings: tuple[str, ...] = ()


def layout_for(settings: Any) -> files.Layout:
    """Return where `settings` puts working files (the caller checks they are enabled)."""
    from ..config import DEFAULT

    out = settings.codegen_output
    if out is DEFAULT or out is None:
        return files.Layout.default(settings.script_dir)
    return files.Layout.custom_path(Path(out))


# Per run (one Settings object), the distinct sources seen for each (kernel, role), in order.
_variants_lock = threading.Lock()
_variants: dict[int, tuple[Any, dict[tuple[str, str | None], list[str]]]] = {}


def kernel_key(settings: Any, kernel: str, role: str | None, generated: str) -> str:
    """Return the registry key of this compile: `kernel`, or `kernel#N` for its Nth distinct source this run."""
    digest = hashlib.sha1(generated.encode("utf-8", "surrogatepass")).hexdigest()
    with _variants_lock:
        entry = _variants.get(id(settings))
        if entry is None or entry[0]() is not settings:
            try:
                ref = weakref.ref(settings)
            except TypeError:
                return kernel
            for key in [k for k, (r, _) in _variants.items() if r() is None]:
                del _variants[key]
            entry = (ref, {})
            _variants[id(settings)] = entry
        seen = entry[1].setdefault((kernel, role), [])
        if digest not in seen:
            seen.append(digest)
        n = seen.index(digest) + 1
    return kernel if n == 1 else f"{kernel}#{n}"


def reconcile_codegen(settings, *, kernel: str, role: str | None, generated: str,
                      compiles_source: bool, backend: str | None) -> CodegenOutcome:
    """Return the outcome for one codegen call: the text to compile, a tag and its message."""
    try:
        layout = layout_for(settings)
        wf = files.working_file(layout, kernel_key(settings, kernel, role, generated), role)
        applied = files.reconcile(wf, generated)
    except OSError as exc:
        return CodegenOutcome(generated, warnings=(f"working files skipped: {exc.strerror or exc}",))
    d = applied.decision
    path = wf.path
    if d is None:
        return CodegenOutcome(generated, path=path, warnings=applied.warnings)
    tag, message = d.tag, _message(applied)
    compile_text = applied.compile_text
    if d.action is Action.PATCHED and not compiles_source:
        tag = "NOTE"
        message = (f"edits in {path} are kept for the diff view but not compiled: the "
                   f"{backend or 'current'} backend builds a binary during codegen; use "
                   "execution_backend=\"nvrtc\" (CUDA) or \"cython\" (C, HIP) to compile edits")
    return CodegenOutcome(compile_text, tag, message, path, applied.warnings)


def _message(a: files.Applied) -> str | None:
    d, p = a.decision, a.file.path
    assert d is not None
    if d.action is Action.PATCHED:
        return f"from {p}"
    if d.action is Action.REGENERATED:
        return f"codegen changed; {p} regenerated"
    if d.action is Action.SYNCED:
        return f"your edits match the new codegen; baseline advanced ({p})"
    if d.action is Action.CONFLICT:
        return (f"codegen changed and {p} was edited: edits saved to {a.backup.name if a.backup else '.bak'}, "
                f"old baseline to {a.baseline_backup.name if a.baseline_backup else '.original.bak'}; "
                f"{p.name} regenerated. Rebase your edits with 'tltrace resolve-conflict'")
    if d.action is Action.INIT_BACKUP:
        return f"{p} had no baseline: saved it to {p.name}.bak, then initialised from codegen"
    return None
