"""Reading traces from Python: `tltrace.load(path)`.

    t = tltrace.load("tmp/lower_trace_dir")            # a trace dir, a script dir or a run dir
    inv = t.invocations[-1]                               # oldest first
    c = inv.compiles[0]                                   # in the order they started
    p = c.passes[16]                                      # p.name, p.phase, p.status, p.before, p.after
    c.pass_("Simplify#2")                                 # the one pass-name grammar (format/passref.py)
    p.rows                                                # the line alignment (diff rows)
    c.facts["wgmma"]                                      # its facts (docs/facts.md)
    c.check("codegen_device", "CHECK: tl::wgmma_ss")      # FileCheck directives; AssertionError when not

Everything is read through history/runs.py, the one manifest reader (paths stay
inside the run directory; a deleted per-pass file falls back to the stored copy).
Texts are read when asked for. Nothing is written. A compile and an invocation show
their report inline in a notebook (`_repr_html_`: the report in a sandboxed iframe).
"""

from __future__ import annotations

import html as _html
import os
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from ..errors import RecordsError
from ..format.records import PassRecord, RunManifest
from ..history import runs
from ..history.summary import CompileSummary


@dataclass(frozen=True)
class Pass:
    """One recorded pass of a compile: the record's fields, and its texts and diff on demand."""

    compile: Compile = field(repr=False, compare=False)
    record: PassRecord

    index = property(lambda self: self.record.index)
    name = property(lambda self: self.record.name)
    phase = property(lambda self: self.record.phase)
    status = property(lambda self: self.record.status)
    depth = property(lambda self: self.record.depth)
    parent = property(lambda self: self.record.parent)
    added = property(lambda self: self.record.added)
    removed = property(lambda self: self.record.removed)
    duration_s = property(lambda self: self.record.duration_s)
    error = property(lambda self: self.record.error)

    @property
    def ref(self) -> str:
        """Return the name `--pass` and the report's URL use for this pass (`Simplify#2`)."""
        from ..format.passref import ref_of

        return ref_of(self.compile.manifest.records, self.compile._pos[self.index])

    @cached_property
    def before(self) -> str:
        """Return the IR the pass was given."""
        return runs.read_text(self.compile._run, self.record, "before")

    @cached_property
    def after(self) -> str | None:
        """Return what the pass produced (generated source for codegen); None when it failed."""
        if self.record.after_file is None and self.record.after_hash is None:
            return None
        return runs.read_text(self.compile._run, self.record, "after")

    @cached_property
    def diff(self) -> Any:
        """Return the diff of before and after (tltrace.diff.Diff), None when the pass failed."""
        from ..diff import diff

        return None if self.after is None else diff(self.before, self.after)

    @property
    def rows(self) -> list[dict[str, object]]:
        """Return the line alignment as `show --pass P --json` prints it ([] when the pass failed)."""
        return [] if self.diff is None else self.diff.rows_json()

    def unified(self, context: int = 3) -> list[str]:
        """Return the unified diff lines of the pass."""
        if self.diff is None:
            return []
        return [line for _, line in self.diff.unified(context=context, a_name="before", b_name="after")]

    def __repr__(self) -> str:
        return f"<Pass #{self.index} {self.phase}/{self.name} {self.status}>"


class Compile:
    """One compile (a run directory): its manifest's fields, its summary, its passes."""

    def __init__(self, run: runs.Run) -> None:
        self._run = run = run.derived()  # +/- counts and facts, where the reader derives them
        self.manifest: RunManifest = run.require()
        self._pos = {r.index: i for i, r in enumerate(self.manifest.records)}

    path = property(lambda self: self._run.path)
    run_id = property(lambda self: self._run.run_id)
    kernel = property(lambda self: self.manifest.kernel)
    signature = property(lambda self: self.manifest.signature)
    invocation = property(lambda self: self.manifest.invocation)
    launch = property(lambda self: self.manifest.launch)
    params = property(lambda self: self.manifest.params)
    error = property(lambda self: self.manifest.error)

    @property
    def status(self) -> str:
        return self._run.status

    @cached_property
    def summary(self) -> CompileSummary:
        """Return the compile's summary (the model every compile list shows)."""
        return CompileSummary.of(self.manifest, self.run_id, status=self.status)

    @property
    def label(self) -> str:
        return self.summary.label

    @cached_property
    def passes(self) -> list[Pass]:
        """Return the compile's passes in the order they ran (codegen calls included)."""
        return [Pass(self, r) for r in self.manifest.records]

    def pass_(self, ref: str | int) -> Pass:
        """Return the pass a reference names: an index, `[phase/]NAME[#k]`, any case (as `--pass`)."""
        from ..format.passref import resolve

        found = resolve(self.manifest.records, str(ref))
        if found.pos < 0:
            raise KeyError(f"{found.error} in {self.run_id}")
        return self.passes[found.pos]

    @cached_property
    def facts(self) -> dict[str, Any]:
        """Return the compile's facts by name (docs/facts.md): `c.facts["wgmma"]`."""
        from ..facts import facts_of

        return facts_of(self._run)

    def check(self, stage: str | int, *checks: str, context: int = 2, timeout: float = 10.0) -> None:
        """Match FileCheck directives against the text `stage` produced; AssertionError when they fail.

        `stage` is a pass reference (`codegen_device`, `LowerTileOp`, `tl/Simplify#2`, an index),
        `checks` directive lines (`"CHECK: tl::wgmma_ss"`, `"CHECK-NOT: cp_async"`; a text of
        several lines is fine). The error carries FileCheck's message and the lines around
        the failure point. A bad directive raises UsageError; a stage this compile does not
        have, NothingToCheck (the closest pass names said): nothing passes unchecked. A regex
        match is stopped after `timeout` seconds (MatchTimeout, a UsageError).
        """
        __tracebackhide__ = True  # pytest shows the test's line, not this one
        from ..check import checks as checking

        m = checking.parse_match(str(stage), checks)
        ((_, (out,)),) = checking.check_runs(
            [self._run], (), (m,), context=context, nothing=self.label, timeout=timeout
        )
        if not out.ok:
            raise AssertionError(_failure_text(self.label, out))

    def expect(self, expression: str) -> None:
        """Assert a fact expression (`"wgmma >= 1 and max_nreg <= registers"`, as `check --expect`).

        An unknown fact raises ExpressionError (a UsageError) naming the closest ones.
        """
        __tracebackhide__ = True
        from ..check import checks as checking

        (out,) = checking.run_checks(self._run, (checking.parse_expect(expression),), ())
        if not out.ok:
            raise AssertionError(_failure_text(self.label, out))

    def report(self) -> Path:
        """Return the compile's report.html, written from the records when it is not there."""
        from ..format.layout import REPORT

        path = self.path / REPORT
        if not path.is_file():
            from ..history.report_reads import compile_report
            from ..render.html import write_report

            write_report(compile_report(self.path))
        return path

    def _repr_html_(self) -> str:
        return iframe(self.report().read_text(encoding="utf-8"), f"tltrace: {self.label}")

    def __repr__(self) -> str:
        return f"<Compile {self.label!r} {self.status}, {len(self.manifest.records)} passes>"


class Invocation:
    """One invocation (one `tltrace run`, one watch rerun, one enable()..disable() span) of a script."""

    def __init__(self, inv: runs.RecordedInvocation) -> None:
        self._inv = inv
        self.id: str = inv.id
        self.script: str = inv.script_dir.name
        self.script_dir: Path = inv.script_dir
        self.started = inv.started
        self.damaged = [r.path for r in inv.runs if r.manifest is None]  # runs that cannot be read

    @cached_property
    def compiles(self) -> list[Compile]:
        """Return its compiles in the order they started (damaged runs left out: see .damaged)."""
        return [Compile(r) for r in self._inv.runs if r.manifest is not None]

    @property
    def status(self) -> str:
        return self._inv.status

    def compile(self, signature: str) -> Compile:
        """Return the one compile whose signature (or kernel) starts with `signature`."""
        hits = [c for c in self.compiles if (c.signature or c.kernel or "").startswith(signature)]
        if len(hits) != 1:
            names = ", ".join(c.label for c in hits[:5]) or "none"
            raise KeyError(f"{signature!r} names {len(hits)} compiles of {self.id} ({names})")
        return hits[0]

    def index(self) -> Path:
        """Return an index page of this invocation's compiles, written from the records."""
        from ..history.report_reads import index_report
        from ..render.html import write_index

        return write_index(index_report(self.script_dir, [r.path for r in self._inv.runs]))

    def _repr_html_(self) -> str:
        if len(self.compiles) == 1:
            return self.compiles[0]._repr_html_()
        if not self.compiles and self._inv.empty is not None:
            why = _html.escape(self._inv.empty.reason)
            return f"<div>invocation <code>{_html.escape(self.id)}</code>: no TileLang compile was traced ({why})</div>"
        if not self.compiles:
            return f"<div>invocation <code>{_html.escape(self.id)}</code>: no readable compile</div>"
        ordered = _ordered(self.compiles)
        first = next(c for c in self.compiles if c.run_id == ordered[0].run_id)
        rows = "".join(
            f"<tr><td>{_html.escape(s.status)}</td><td><code>{_html.escape(s.label)}</code></td>"
            f"<td>{s.passes}</td><td>{s.changed}</td><td>{s.failed}</td>"
            f"<td>{'' if s.seconds is None else f'{s.seconds:.2f}s'}</td></tr>"
            for s in ordered
        )
        return (
            f"<div><b>{_html.escape(self.script)}</b> invocation <code>{_html.escape(self.id)}</code>: "
            f"{len(self.compiles)} compiles"
            "<table><tr><th>status</th><th>compile</th><th>passes</th><th>changed</th><th>failed</th>"
            f"<th>time</th></tr>{rows}</table>"
            f"<p>Below: <code>{_html.escape(first.label)}</code> (failures first). Open another with "
            "<code>inv.compiles[i]</code> or <code>inv.compile('SIGNATURE')</code>.</p>"
            f"{first._repr_html_()}</div>"
        )

    def __iter__(self) -> Iterator[Compile]:
        return iter(self.compiles)

    def __len__(self) -> int:
        return len(self.compiles)

    def __repr__(self) -> str:
        n = len(self.compiles)
        which = f" ({', '.join(c.label for c in self.compiles)})" if 0 < n <= 3 else ""
        return (
            f"<Invocation {self.script} {self.id}: {n} compile{'s' if n != 1 else ''}{which}, {self.status}>"
        )


def _failure_text(label: str, out: Any) -> str:
    """Return a failed check as an assertion message: what failed, where, the lines around it."""
    head = f"{label}: {'--expect' if out.kind == 'expect' else '--match'} {out.check}"
    lines = [out.message] if out.kind == "expect" else [*out.context[:1], out.message, *out.context[1:]]
    return "\n".join([head, *("  " + line for line in lines)])


def _ordered(compiles: list[Compile]) -> list[CompileSummary]:
    from ..history.summary import order

    return order(
        [CompileSummary.of(c.manifest, c.run_id, status=c.status, position=i) for i, c in enumerate(compiles)]
    )


class Trace:
    """What `tltrace.load` returns: the invocations under a path, oldest first."""

    def __init__(self, path: Path, invocations: list[Invocation]) -> None:
        self.path = path
        self.invocations = invocations

    @property
    def compiles(self) -> list[Compile]:
        """Return every compile of every invocation, in invocation order."""
        return [c for inv in self.invocations for c in inv.compiles]

    def _repr_html_(self) -> str:
        if len(self.invocations) == 1:
            return self.invocations[0]._repr_html_()
        items = "".join(
            f"<li><code>{_html.escape(inv.script)}</code> {_html.escape(inv.id)}: {len(inv.compiles)} compiles, "
            f"{_html.escape(inv.status)}</li>"
            for inv in self.invocations
        )
        return f"<div><b>{len(self.invocations)} invocations</b> under {_html.escape(str(self.path))}<ul>{items}</ul></div>"

    def __repr__(self) -> str:
        return f"<Trace {str(self.path)!r}: {len(self.invocations)} invocations>"


def load(path: str | os.PathLike) -> Trace:
    """Return the traces under `path`: a trace dir, a script's trace dir, or one run dir.

    `.invocations[i].compiles[j].passes[k]`, oldest invocation first. Raises
    RecordsError (a TltraceError) when there are no run records under the path.
    In a process that traces, the compiles traced so far are flushed first (`tltrace.flush()`).
    """
    worker = sys.modules.get("tltrace.session.worker")  # tracing ran here: its records, complete
    if worker is not None:
        worker.drain()
    p = Path(path)
    if not p.is_dir():
        raise RecordsError(f"{p} is not a directory; give a trace dir, a script dir or a run dir")
    loc = runs.locate(p, p)
    if loc.run_dir is not None:
        run = runs.load_run(loc.run_dir)
        invs = [runs.RecordedInvocation(runs.invocation_key(run), (run,), -1)]
    else:
        invs = [inv for sd in loc.script_dirs for inv in runs.invocations(sd)]
        invs.sort(key=lambda inv: (inv.started if inv.started is not None else float("inf"), inv.id))
    return Trace(p, [Invocation(inv) for inv in invs])


def iframe(page: str, title: str = "tltrace report", height: int = 640) -> str:
    """Return a sandboxed iframe that shows a whole report page (`srcdoc`: the report has no external assets).

    The sandbox allows the report's own scripts and nothing else: no same origin, no
    forms, no top navigation; the page's CSP still names its one script by hash.
    """
    return (
        f'<iframe title="{_html.escape(title)}" sandbox="allow-scripts" '
        f'style="width:100%;height:{int(height)}px;border:1px solid #ccc" '
        f'srcdoc="{_html.escape(page, quote=True)}"></iframe>'
    )
