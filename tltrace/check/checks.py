"""Checks over recorded compiles: `--expect` on their facts, `--match` FileCheck directives on their texts.

The data behind `tltrace check` and `Compile.check`: every check becomes an `Outcome`
(what was checked, whether it held, why, and for a failed match the lines around the
failure point). Parsing comes first, so a bad expression, directive or fact is a
UsageError (exit 2) before anything is read. Nothing passes vacuously: no compile to
check, or a --match stage that no compile has, is NothingToCheck (exit 7). A match with a
regex runs in a child process under a deadline (`match_bounded`): Python's `re` cannot be
stopped mid-match. Reads through history/runs.py; never prints.
"""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ..errors import NothingToCheck, UsageError
from ..history import runs
from . import expect, filecheck

MATCH_TIMEOUT_S = 10.0  # one --match on one compile's text (`check --match-timeout`)


@dataclass(frozen=True)
class Outcome:
    """One check's result: kind 'expect' or 'match', what was checked, held or not, why, and context lines."""

    kind: str
    check: str  # the --expect text, or 'STAGE: directives'
    ok: bool
    message: str
    stage: str | None = None
    context: tuple[str, ...] = field(default=())
    missing: bool = False  # a --match whose stage this compile does not have

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        del data["missing"]  # `message` says it; not in the JSON (check --json)
        return {**data, "context": list(self.context)}


@dataclass(frozen=True)
class Match:
    """A parsed --match: the stage (a pass reference: format/passref.py's grammar) and its directives."""

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


def stage_text(manifest: Any, run: runs.Run, stage: str) -> tuple[str, str, str]:
    """Return (the pass's reference, its after-text, the pass as lines name it: `#25 Simplify`, the
    number `--pass` and `--match` take) for a STAGE.

    Raises _NoStage when the compile has no such pass (an Outcome with `missing`; the
    closest names said), _NoText when it has no text, UsageError for a reference that names
    several passes or an occurrence past the last, RecordsError when the text is unreadable.

    STAGE is a pass reference (format/passref.py: NAME, phase/NAME, NAME#k, an index): a pass's
    output IR, or for a codegen call (codegen_device, codegen_host) the generated source.
    """
    from ..format.passref import ref_of, resolve

    found = resolve(manifest.records, stage)
    if found.pos < 0 and not found.matches and manifest.status != "complete":
        raise _NoText(f"no pass {stage!r} in this compile: it did not complete ({run.status})")
    if found.pos < 0 and found.matches:  # several passes match, or NAME#k past the last
        raise UsageError(f"--match {stage}: {found.error} in run {run.run_id}")
    if found.pos < 0:
        raise _NoStage(missing_stage(manifest, stage))
    rec = manifest.records[found.pos]
    ref = ref_of(manifest.records, found.pos)
    if rec.after_file is None and rec.after_hash is None:
        raise _NoText(f"#{rec.index} {rec.name} produced no text (the pass failed)")
    return ref, runs.read_text(run, rec, "after"), f"#{rec.index} {rec.name}"


def missing_stage(manifest: Any, stage: str) -> str:
    """Return the line for a --match STAGE a compile does not have: the closest pass names, its codegen stages."""
    from ..format.passref import did_you_mean

    hint = did_you_mean(dict.fromkeys(r.name for r in manifest.records), stage)
    names = sorted({r.name for r in manifest.records if r.phase == "codegen"})
    stages = f"; its codegen stages: {', '.join(names)}" if names else ""
    return f"no pass named {stage!r} in run {manifest.run_id}{hint}{stages}"


def parse_expect(text: str) -> expect.Expectation:
    """Return an --expect parsed and bound to the registry's facts; ExpressionError (exit 2) for an unknown
    fact (the closest names said), before any run is read."""
    from ..facts import NAMES

    return expect.parse(text, NAMES)


class _NoText(Exception):
    pass


class _NoStage(Exception):
    pass


class MatchTimeout(UsageError):
    """A --match whose patterns ran past the deadline (a regex that backtracks without end): exit 2."""


# The child that matches: reads (text, directives) pickled on stdin, writes ("ok", Result) or ("error", line).
_CHILD = """
import pickle, sys
sys.path.insert(0, sys.argv[1])
from tltrace.check import filecheck
text, directives = pickle.loads(sys.stdin.buffer.read())
try:
    out = ("ok", filecheck.match(text, directives))
except filecheck.CheckSyntaxError as exc:
    out = ("error", str(exc))
sys.stdout.buffer.write(pickle.dumps(out))
"""


def match_bounded(
    text: str, directives: Sequence[filecheck.Directive], timeout: float = MATCH_TIMEOUT_S
) -> filecheck.Result:
    """Return filecheck.match(text, directives), or MatchTimeout past `timeout` seconds.

    Literal patterns match here (linear in the text). A pattern with a regex matches in a
    child Python (about 0.1 s to start), killed at the deadline: the only way to stop
    `re` mid-match (a signal is not handled until the match returns, and a thread cannot be
    stopped). Without a child process (no interpreter to start) it matches here, unbounded.
    """
    if not filecheck.has_regex(directives):
        return filecheck.match(text, directives)
    root = str(Path(__file__).resolve().parents[2])
    try:
        # -I -S: isolated (no PYTHON* variables, no cwd or user site on sys.path) and no site
        # (no sitecustomize, such as a traced job's boot directory): the child imports nothing
        # but the standard library and tltrace.check.filecheck, from this tltrace.
        p = subprocess.run(
            [sys.executable, "-I", "-S", "-c", _CHILD, root],
            input=pickle.dumps((text, list(directives))),
            capture_output=True,
            timeout=timeout,
            env=dict(os.environ),
        )
    except subprocess.TimeoutExpired:
        raise MatchTimeout(
            f"the patterns ran over {timeout:g} s and were stopped: a regex that backtracks without end "
            "(nested repeats such as {{(.*)*}}); rewrite it, or give --match-timeout more seconds"
        ) from None
    except OSError:  # no interpreter to start
        return filecheck.match(text, directives)
    try:
        kind, value = pickle.loads(p.stdout)
    except Exception:
        tail = p.stderr.decode("utf-8", "replace").strip().splitlines()[-1:] or ["no output"]
        raise UsageError(
            f"the matcher's child process failed (exit {p.returncode}: {tail[0][:200]})"
        ) from None
    if kind == "error":
        raise filecheck.CheckSyntaxError(value)
    result: filecheck.Result = value
    return result


def check_runs(
    selected: Sequence[runs.Run],
    expectations: Sequence[expect.Expectation],
    matches: Sequence[Match],
    context: int = 2,
    *,
    nothing: str = "no compile selected",
    timeout: float = MATCH_TIMEOUT_S,
) -> list[tuple[runs.Run, list[Outcome]]]:
    """Return (compile, its outcomes) for every compile selected.

    Raises NothingToCheck (exit 7) with `nothing` when no compile is selected, and when a
    --match stage is in none of them (a compile of several that lacks it fails that check);
    UsageError for a bad stage reference, RecordsError for a damaged run.
    """
    if not selected:
        raise NothingToCheck(f"nothing to check: {nothing}")
    results = [(run, run_checks(run, expectations, matches, context, timeout=timeout)) for run in selected]
    for k, m in enumerate(matches):
        per = [[o for o in outs if o.kind == "match"][k] for _, outs in results]
        if all(o.missing for o in per):
            others = f"the other {len(per) - 1} compiles" if len(per) > 2 else "the other compile"
            where = per[0].message if len(per) == 1 else f"{per[0].message}; nor in {others}"
            raise NothingToCheck(f"nothing to check for --match {m.stage}: {where}")
    return results


def run_checks(
    run: runs.Run,
    expectations: Sequence[expect.Expectation],
    matches: Sequence[Match],
    context: int = 2,
    *,
    timeout: float = MATCH_TIMEOUT_S,
) -> list[Outcome]:
    """Return one Outcome per check on `run` (a compile), expectations first, in the order given.

    A --match stage the compile does not have is a failed Outcome with `missing` set.
    Raises UsageError for an unknown fact or a bad stage reference, MatchTimeout for
    patterns past `timeout`, RecordsError for a damaged run.
    """
    manifest = run.require()
    out: list[Outcome] = []
    if expectations:
        from ..facts import MACHINE, facts_of
        from ..format.records import CUT_SHORT

        facts = facts_of(run)
        for e in expectations:
            ok, why = e.evaluate(facts)
            if not ok and any(facts.get(n) is None and n in MACHINE for n in e.names):
                why += "; registers and spills come with 'tltrace run --ptxas' (docs/facts.md)"
            if run.status in CUT_SHORT:  # a dead process's: facts of the records left (as `show --facts`)
                why += f"; the compile was cut short ({run.status}): facts of the records left"
            out.append(Outcome("expect", e.text, ok, why))
    for m in matches:
        try:
            ref, text, label = stage_text(manifest, run, m.stage)
        except _NoText as exc:
            out.append(Outcome("match", m.text, False, str(exc), m.stage))
            continue
        except _NoStage as exc:
            out.append(Outcome("match", m.text, False, str(exc), m.stage, missing=True))
            continue
        try:
            result = match_bounded(text, m.directives, timeout)
        except MatchTimeout as exc:
            raise MatchTimeout(f"--match {m.stage} on {run.run_id}: {exc}") from None
        if result.ok:
            n = len(m.directives)
            said = f"{n} directive{'s' if n != 1 else ''} matched"
            out.append(Outcome("match", m.text, True, f"{label}: {said}", ref))
        else:
            lines = result.explain(text, label, context)
            out.append(Outcome("match", m.text, False, lines[1], ref, tuple([lines[0], *lines[2:]])))
    return out
