"""The three-way decision of edit-and-recompile, as a pure function over texts.

`decide(baseline, working, generated)` implements the table in docs/edit-recompile.md:

==============================  =====================  ==================  ============
situation                       working vs baseline    generated vs base   tag
==============================  =====================  ==================  ============
no change                       identical              identical           (none)
codegen changed only            identical              differs             REGENERATED
user edited only                differs                identical           PATCHED
  ... with conflict markers     differs                identical           UNRESOLVED
both changed, working == gen    differs                differs             SYNCED
both changed, working != gen    differs                differs             CONFLICT
first run (no baseline)         (no working file)                          (init)
working file without baseline                                              INIT-BACKUP
==============================  =====================  ==================  ============

A working file holding conflict markers (a merge not finished) is never compiled: the
generated source is, and the file stays as it is (UNRESOLVED). A working file that was
deleted while its baseline exists is re-created, as if it still held the baseline (no
edit to keep). No I/O happens here: the file layer
(`files.py`) reads the texts, calls `decide`, and carries out the Decision.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from .merge import marker_line


class Action(str, Enum):
    UNCHANGED = "unchanged"
    INIT = "init"
    INIT_BACKUP = "INIT-BACKUP"
    REGENERATED = "REGENERATED"
    PATCHED = "PATCHED"
    SYNCED = "SYNCED"
    CONFLICT = "CONFLICT"
    UNRESOLVED = "UNRESOLVED"  # an edit with conflict markers: never compiled, kept as it is


@dataclass(frozen=True)
class Decision:
    """What one reconcile step does: which text to compile, and what each file holds afterwards."""

    action: Action
    compile_text: str  # the source to compile
    baseline: str  # the baseline (.original) afterwards
    working: str  # the working file afterwards
    backup_working: bool = False  # save the current working text to .bak first
    backup_baseline: bool = False  # save the current baseline to .original.bak first

    @property
    def tag(self) -> str | None:
        """Return the console tag, or None for a silent step (no change, first run)."""
        if self.action in (Action.UNCHANGED, Action.INIT):
            return None
        return self.action.value

    @property
    def edited(self) -> bool:
        """Return True when the text to compile is the user's, not the generated one."""
        return self.action is Action.PATCHED


def decide(baseline: str | None, working: str | None, generated: str) -> Decision:
    """Return the Decision for one codegen role; None means the file does not exist."""
    if baseline is None:
        if working is None:
            return Decision(Action.INIT, generated, generated, generated)
        return Decision(Action.INIT_BACKUP, generated, generated, generated, backup_working=True)
    if working is None:
        working = baseline  # deleted working file: nothing of the user's to keep; re-create it
    user_edited = working != baseline
    codegen_changed = generated != baseline
    if not user_edited and not codegen_changed:
        return Decision(Action.UNCHANGED, generated, baseline, baseline)
    if not user_edited:
        return Decision(Action.REGENERATED, generated, generated, generated)
    if not codegen_changed:
        if marker_line(working) is not None:
            return Decision(Action.UNRESOLVED, generated, baseline, working)
        return Decision(Action.PATCHED, working, baseline, working)
    if working == generated:
        return Decision(Action.SYNCED, generated, generated, working)
    return Decision(
        Action.CONFLICT, generated, generated, generated, backup_working=True, backup_baseline=True
    )
