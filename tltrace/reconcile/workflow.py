"""Glue between a codegen call and the working files (placeholder until the reconcile layer lands)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class CodegenOutcome:
    """What to compile for one codegen role, and what to tell the user."""

    compile_text: str  # the source to compile (the generated text when nothing changes)
    tag: str | None = None  # PATCHED, REGENERATED, SYNCED, CONFLICT, INIT-BACKUP, NOTE
    message: str | None = None
    path: Path | None = None
    warnings: tuple[str, ...] = ()


def reconcile_codegen(settings, *, kernel: str, role: str | None, generated: str,
                      compiles_source: bool, backend: str | None) -> CodegenOutcome:
    """Return the outcome for one codegen call; the working-file layer fills this in."""
    return CodegenOutcome(compile_text=generated)
