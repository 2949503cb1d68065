"""Checks over one recorded compile: `--expect` on its facts, `--match` FileCheck directives on its texts.

The data behind `tltrace check` and `Compile.check`: every check becomes an `Outcome`
(what was checked, whether it held, why, and for a failed match the lines around the
failure point). Parsing comes first, so a bad expression, directive or stage is a
UsageError (exit 2) before anything is read. Reads through history/runs.py; never prints.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from . import expect, filecheck
from .errors import UsageError
from .history import runs


@dataclass(frozen=True)
class Outcome:
    """One check's result: kind 'expect' or 'match', what was checked, held or not, why, and context lines."""

    kind: str
    check: str  # the --expect text, or 'STAGE: directives'
    ok: bool
    message: str
    stage: str | None = None
    context: tuple[str, ...] = field(default=())

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "check": self.check,
            "ok": self.ok,
            "message": self.message,
            "stage": self.stage,
            "context": list(self.context),
        }


@dataclass(frozen=True)
class Match:
    """A parsed --match: the stage (a pass reference: passref.py's grammar) and its directives."""

    stage: str
    directives: tuple[filecheck.Directive, ...]

    @property
    def text(self) -> str:
        return f"{self.stage}: " + " | ".join(d.text for d in self.directives)


def parse_match(stage: str, directives: Sequence[str]) -> Match:
    """Return the --match of `stage` with its directives parsed; UsageError when there are none or one is bad."""
    if not stage.strip():
        raise UsageError("--match needs a STAGE: a pass name or index, codegen_device, codegen_host, ...")
    return Match(stage, tuple(filecheck.parse(directives)))


def stage_text(manifest: Any, run: runs.Run, stage: str) -> tuple[str, str]:
    """Return (the pass's reference, its after-text) for a STAGE; UsageError when no pass, RecordsError when unreadable.

    STAGE is a pass reference (passref.py: NAME, phase/NAME, NAME#k, an index): a pass's
    output IR, or for a codegen call (codegen_device, codegen_host) the generated source.
    """
    from .passref import ref_of, resolve

    found = resolve(manifest.records, stage)
    if found.pos < 0 and not found.matches and manifest.status != "complete":
        raise _NoText(f"no pass {stage!r} in this compile: it did not complete ({run.status})")
    if found.pos < 0:
        names = sorted({r.name for r in manifest.records if r.phase == "codegen"})
        hint = f" (its codegen stages: {', '.join(names)})" if names else ""
        raise UsageError(f"--match {stage}: {found.error} in run {run.run_id}{hint}")
    rec = manifest.records[found.pos]
    ref = ref_of(manifest.records, found.pos)
    if rec.after_file is None and rec.after_hash is None:
        raise _NoText(f"{ref} (#{rec.index}) produced no text (the pass failed)")
    return ref, runs.read_text(run, rec, "after")


def check_names(expectations: Sequence[expect.Expectation]) -> None:
    """Raise ExpressionError (exit 2) for a fact name the registry does not have, before any run is read."""
    from .facts import NAMES

    for e in expectations:
        unknown = [n for n in e.names if n not in NAMES]
        if unknown:
            raise expect.ExpressionError(
                f"unknown fact {unknown[0]!r} in --expect {e.text!r}; 'tltrace show SCRIPT --facts' lists "
                f"them: {', '.join(NAMES)}"
            )


class _NoText(Exception):
    pass


def run_checks(
    run: runs.Run,
    expectations: Sequence[expect.Expectation],
    matches: Sequence[Match],
    context: int = 2,
) -> list[Outcome]:
    """Return one Outcome per check on `run` (a compile), expectations first, in the order given.

    Raises UsageError for an unknown fact or stage, RecordsError for a damaged run.
    """
    manifest = run.require()
    out: list[Outcome] = []
    if expectations:
        from .facts import MACHINE, facts_of

        facts = facts_of(run)
        for e in expectations:
            ok, why = e.evaluate(facts)
            if not ok and any(facts.get(n) is None and n in MACHINE for n in e.names):
                why += "; registers and spills come with 'tltrace run --ptxas' (docs/facts.md)"
            out.append(Outcome("expect", e.text, ok, why))
    for m in matches:
        try:
            ref, text = stage_text(manifest, run, m.stage)
        except _NoText as exc:
            out.append(Outcome("match", m.text, False, str(exc), m.stage))
            continue
        result = filecheck.match(text, m.directives)
        if result.ok:
            n = len(m.directives)
            said = f"{n} directive{'s' if n != 1 else ''} matched"
            out.append(Outcome("match", m.text, True, said if ref == m.stage else f"{ref}: {said}", ref))
        else:
            lines = result.explain(text, ref, context)
            out.append(Outcome("match", m.text, False, lines[1], ref, tuple([lines[0], *lines[2:]])))
    return out
