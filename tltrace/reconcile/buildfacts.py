"""What each build of `tltrace watch` made, and which facts changed against the build before it.

After each rerun, `build_compiles(runs)` reads the compiles the run recorded (their manifests'
facts: docs/facts.md) and `compare_builds(previous, compiles)` names, per compile, the facts
that changed since the previous build of the same compile: `registers 168 → 176`. A compile is
"the same" as one of the previous build when it is of the same kernel and comes at the same
place among that kernel's compiles in the run (so a new size of a kernel compares with its old
size). A build that failed keeps the previous build as the one the next build compares with.
Pure data: the CLI prints it (`cli/edit.py`), as a line under the run's or as JSON.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import Any

from ..facts import changes, describe, facts_of
from ..format.records import COMPLETE, CUT_SHORT

Key = tuple[str, int]  # (kernel, its place among that kernel's compiles in the run)


@dataclass(frozen=True)
class BuildCompile:
    """One compile of a watched build: its kernel, facts, and what changed against the previous build."""

    kernel: str
    run_id: str
    signature: str | None
    status: str
    reconcile: tuple[str, ...]  # what the run decided for its working files: "PATCHED", "host: CONFLICT"
    facts: dict[str, Any]  # {fact name: value} (docs/facts.md; null where not known)
    key: Key = ("", 0)
    # None: no previous build of this compile to compare with (the first build, a new kernel,
    # or a failed build); else each changed fact as {name, a, b} (a: before, b: now).
    changed: tuple[dict[str, Any], ...] | None = None
    previous_run_id: str | None = None  # the compile compared with

    @property
    def ok(self) -> bool:
        return self.status == COMPLETE

    def line(self) -> str | None:
        """Return what changed, as printed under the run's line: `registers 168 → 176, spill_bytes 0 → 64`;
        for a compile the run's death cut short (a kill -9), that it was."""
        if self.status in CUT_SHORT:
            return f"cut short ({self.status}): its records stop where the process died ({self.run_id})"
        if self.changed is None:
            return None
        return describe(list(self.changed)) if self.changed else "no fact changed"

    def to_json(self) -> dict[str, Any]:
        return {
            "kernel": self.kernel,
            "run_id": self.run_id,
            "signature": self.signature,
            "status": self.status,
            "reconcile": list(self.reconcile),
            "compared_with": self.previous_run_id,
            "changed": None if self.changed is None else [dict(c) for c in self.changed],
            "facts": dict(self.facts),
        }


@dataclass
class BuildHistory:
    """The last good build of each compile a watch has seen: what the next build is compared with."""

    last: dict[Key, BuildCompile] = field(default_factory=dict)

    def compare(self, compiles: Iterable[BuildCompile]) -> tuple[BuildCompile, ...]:
        """Return `compiles` with what changed against the last good build of each; remember the good ones."""
        out = []
        for c in compiles:
            before = self.last.get(c.key)
            if c.ok and before is not None:
                c = replace(c, changed=tuple(changes(before.facts, c.facts)), previous_run_id=before.run_id)
            if c.ok:
                self.last[c.key] = c
            out.append(c)
        return tuple(out)


def build_compiles(runs: Iterable[Any]) -> tuple[BuildCompile, ...]:
    """Return the compiles of one build from its runs (`history.loading.Run`, oldest first), with their facts."""
    seen: dict[str, int] = {}
    out = []
    for run in runs:
        m = run.manifest
        if m is None:
            continue
        kernel = m.kernel_name or "?"
        n = seen.get(kernel, 0)
        seen[kernel] = n + 1
        try:
            values = facts_of(run)
        except Exception:  # a damaged text: the build's facts are not known, the watch goes on
            values = {}
        tags = tuple(
            (f"{r.role}: " if r.role == "host" else "") + r.reconcile for r in m.records if r.reconcile
        )
        out.append(
            BuildCompile(
                kernel, run.path.name, m.signature, m.status, tuple(dict.fromkeys(tags)), values, (kernel, n)
            )
        )
    return tuple(out)
