"""`tltrace bisect`: find the first pass whose skipping turns a wrong kernel right.

1. Two steps: nothing skipped (must be wrong), then every candidate skipped.
   Candidates are the top-level passes after position 0 that changed the IR in the
   recorded run (a pass that left the IR text as it was cannot have made it wrong), less
   those known to be required: the probe (probe.py, one process that recompiles the
   recorded kernel) tries each alone first, and later each window before its step.
2. A binary search over windows of the candidates (search.py): a step that does not
   compile is untestable, and the search goes on around it. What the steps learn (a
   candidate that cannot be skipped alone is required; candidates skipped in a step that
   compiled are skippable) is kept per pipeline signature in
   `<trace dir>/.bisect/learned.json`: a later bisection of that pipeline leaves the
   required ones out from the start.
3. A single suspect no step has shown right is verified alone.
4. The deciding steps are run again (a flaky script gives two outcomes for one step): for
   a found pass, the last right step that skipped it and the last wrong step; for "still
   wrong with every candidate skipped", that step. Two outcomes for one skip set make the
   answer FLAKY (exit 8), never a pass to blame.
5. The result: the first bad pass (position, record index, phase, name) in the recorded
   run; its record index is the `#` every line prints and `show --pass` and `repro` take.

The core returns data and reports each step through `on_step`; cli/bisect.py prints.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..format.ids import new_invocation_id
from ..format.records import CHANGED, RunManifest
from ..fs.atomic import atomic_write
from .probe import Probe, Probed
from .recheck import Recheck
from .search import RIGHT, UNTESTABLE, WRONG, WindowSearch
from .steps import Spec, Step, TopPass, manifests, run_step, top_passes, untestable_start

__all__ = [
    "FLAKY",
    "FOUND",
    "NOT_WRONG",
    "UNSKIPPABLE",
    "UNSETTLED",
    "Bisection",
    "Recheck",
    "Result",
    "Spec",
    "Step",
    "bisect",
]

FOUND = "found"  # exit 0
UNSKIPPABLE = "unskippable"  # exit 1: still wrong with every candidate skipped
UNSETTLED = "unsettled"  # exit 1: untestable steps left more than one suspect
NOT_WRONG = "not-wrong"  # exit 6: right with nothing skipped
FLAKY = "flaky"  # exit 8: a deciding step, run again, gave another outcome


@dataclass(frozen=True)
class Progress:
    """What one finished step leaves: the step, the suspects left, time so far, steps still expected."""

    step: Step
    suspects: int
    elapsed: float
    steps_left: int


@dataclass
class Result:
    """A bisection's answer, as data: `to_json()` is `bisect --json`'s shape."""

    kind: str
    steps: list[Step]
    candidates: list[TopPass] = field(default_factory=list)
    required: list[TopPass] = field(default_factory=list)
    culprit: TopPass | None = None
    suspects: list[TopPass] = field(default_factory=list)
    good_run: Path | None = None  # the first compile of step 1 (nothing skipped)
    kernel: str | None = None
    learned_from_cache: bool = False
    seconds: float = 0.0
    probes: list[Step] = field(default_factory=list)  # skip sets the probe found untestable (no script run)
    probe_compiles: int = 0  # compiles the probe ran (in one process)
    probe_seconds: float = 0.0
    probe_off: str | None = None  # why the probe gave no answers, if it did not
    rechecks: list[Recheck] = field(default_factory=list)  # the deciding steps, run again
    answer: TopPass | None = None  # FLAKY: the pass the search would have blamed

    @property
    def compiles(self) -> int:
        return len(self.steps)

    def to_json(self) -> dict[str, Any]:
        def p(t: TopPass | None) -> dict[str, Any] | None:
            if t is None:
                return None
            return {"position": t.position, "index": t.index, "phase": t.phase, "name": t.name, "ref": t.ref}

        return {
            "kind": self.kind,
            "culprit": p(self.culprit),
            "suspects": [p(t) for t in self.suspects],
            "kernel": self.kernel,
            "recorded_run": str(self.good_run) if self.good_run else None,
            "candidates": [p(t) for t in self.candidates],
            "required": [p(t) for t in self.required],
            "learned_from_cache": self.learned_from_cache,
            "steps": [s.to_json() for s in self.steps],
            "seconds": round(self.seconds, 3),
            "rechecks": [r.to_json() for r in self.rechecks],
            "answer_before_recheck": p(self.answer),
            "probe": {
                "compiles": self.probe_compiles,
                "seconds": round(self.probe_seconds, 3),
                "untestable": [s.to_json() for s in self.probes],
                "off": self.probe_off,
            },
        }


class Bisection(Probed[Result]):
    """One `tltrace bisect`: owns the steps so far and the learned cache."""

    def __init__(self, spec: Spec, on_step: Callable[[Progress], None] | None = None) -> None:
        self.spec = spec
        self.on_step = on_step or (lambda p: None)
        self.steps: list[Step] = []
        self.t0 = time.perf_counter()
        self.dir = spec.trace_dir.absolute() / ".bisect"
        self.logs = self.dir / new_invocation_id()
        self.search: WindowSearch | None = None
        self.probe: Probe | None = None
        self.probed: list[Step] = []

    def step(
        self, purpose: str, skip: tuple[int, ...] | None, suspects: int, recheck_of: int | None = None
    ) -> Step:
        """Run one step (a script run); a skip set the probe says does not compile is untestable without one."""
        a = self.probe.ask(skip) if self.probe is not None and skip and recheck_of is None else None
        if a is not None and not a.ok:
            s = Step(0, purpose, tuple(skip or ()), UNTESTABLE, seconds=a.seconds, why=a.why, probe=True)
            self.probed.append(s)
            left = self.search.steps_left() if self.search is not None else 0
            self.on_step(Progress(s, suspects, time.perf_counter() - self.t0, left))
            return s
        s = run_step(
            self.spec, len(self.steps) + 1, purpose, skip, self.logs / f"step_{len(self.steps) + 1:02d}.log"
        )
        s.recheck_of = recheck_of
        self.steps.append(s)
        left = self.search.steps_left() if self.search is not None else 0
        self.on_step(Progress(s, suspects, time.perf_counter() - self.t0, left))
        return s

    def _run(self) -> Result:
        good = self.step("nothing skipped", None, 0)
        if good.outcome == UNTESTABLE:
            raise untestable_start(good, self.spec, "nothing skipped")
        ms = manifests(good)
        pipelines = [top_passes(m) for m in ms]
        ref = pipelines[0]
        # The first compile of step 1 (in start order) is the reference the result names.
        first = next((p for p in good.runs if p.name == ms[0].run_id), good.runs[0])
        out = Result(NOT_WRONG, self.steps, good_run=first, kernel=ms[0].kernel)
        if good.outcome == RIGHT:
            return self._done(out)
        sig = signature(ms)
        learned = self._load(sig)
        out.learned_from_cache = bool(learned)
        changed = sorted(
            {t.position for pl in pipelines for t in pl if t.status == CHANGED and t.position > 0}
        )
        required = set(learned.get("required", ()))
        known = required | set(learned.get("skippable", ()))
        # One process that recompiles the recorded kernel answers "does this skip set compile?"
        # in a fraction of a step: first for each candidate alone (untestable alone = required).
        by_id = {p.name: p for p in good.runs}
        self.probe = Probe(
            [by_id[m.run_id] for m in ms if m.run_id in by_id],
            [[t.name for t in pl] for pl in pipelines],
            self.logs / "probe.log",
        )
        out.probe_off = self.probe.off
        for p in changed:
            if p not in known and (a := self.probe.ask((p,))) is not None and not a.ok:
                required.add(p)
        cands = [p for p in changed if p not in required]
        every = self.step("every candidate skipped", tuple(cands), len(cands))
        out.candidates = [_at(ref, p) for p in cands]
        if every.outcome == WRONG:
            out.kind = UNSKIPPABLE
            out.required = [_at(ref, p) for p in [0, *sorted(required)] if p < len(ref)]
            if not self._recheck(out, [every]):
                out.kind = FLAKY
            return self._done(out)
        self.search = search = WindowSearch(len(cands), proven=every.outcome == RIGHT)
        skippable = set(learned.get("skippable", ()))
        if every.outcome == RIGHT:
            skippable.update(cands)
        while (window := search.next()) is not None:
            skip = tuple(cands[i] for i in window)
            what = _name(ref, skip[0]) + (f" .. {_name(ref, skip[-1])}" if len(skip) > 1 else " alone")
            s = self.step(f"skip {len(skip)}: {what}", skip, len(search.suspects))
            search.record(window, s.outcome)
            if s.outcome != UNTESTABLE:
                skippable.update(skip)
        required |= {cands[i] for i in search.required}
        self._save(sig, sorted(required), sorted(skippable - required))
        out.required = [_at(ref, p) for p in [0, *sorted(required)] if p < len(ref)]
        found = search.found()
        if found is not None:
            out.kind, out.culprit = FOUND, out.candidates[found]
            if not self._recheck(out, self._deciding(cands[found])):
                out.kind, out.culprit, out.answer = FLAKY, None, out.culprit
        elif not search.suspects or set(search.suspects) <= search.required:
            out.kind = UNSKIPPABLE  # every suspect left is required: skipping cannot tell
        else:
            out.kind = UNSETTLED
            out.suspects = [out.candidates[i] for i in search.suspects]
        return self._done(out)

    def _deciding(self, culprit: int) -> list[Step]:
        """Return the steps an answer blaming position `culprit` rests on: the last right step that skipped
        it, then the last wrong step (step 1 at least)."""
        ran = [s for s in self.steps if s.recheck_of is None]
        right = next((s for s in reversed(ran) if s.outcome == RIGHT and culprit in s.skipped), None)
        wrong = next((s for s in reversed(ran) if s.outcome == WRONG), None)
        return [s for s in (right, wrong) if s is not None]

    def _recheck(self, out: Result, deciding: list[Step]) -> bool:
        """Run each deciding step again; return False as soon as one gives another outcome (flaky)."""
        for s in deciding:
            again = self.step(f"re-check step {s.number}", s.skipped or None, 1, recheck_of=s.number)
            r = Recheck(s.number, s.outcome, again.number, again.outcome, s.skipped)
            out.rechecks.append(r)
            if not r.agrees:
                return False
        return True

    def _done(self, out: Result) -> Result:
        out.seconds = time.perf_counter() - self.t0
        out.probes = self.probed
        if self.probe is not None:
            out.probe_compiles, out.probe_seconds = self.probe.count, self.probe.seconds
            out.probe_off = self.probe.off
        return out

    # -- the learned cache: <trace dir>/.bisect/learned.json, by pipeline signature --------------------
    def _load(self, sig: str) -> dict[str, Any]:
        try:
            data = json.loads((self.dir / "learned.json").read_text())
            entry = data.get(sig) if isinstance(data, dict) else None
        except (OSError, ValueError):
            return {}
        if not isinstance(entry, dict):
            return {}
        return {
            k: [p for p in entry.get(k, ()) if isinstance(p, int) and not isinstance(p, bool)]
            for k in ("required", "skippable")
        }

    def _save(self, sig: str, required: list[int], skippable: list[int]) -> None:
        path = self.dir / "learned.json"
        try:
            data = json.loads(path.read_text())
            if not isinstance(data, dict):
                data = {}
        except (OSError, ValueError):
            data = {}
        data[sig] = {"required": required, "skippable": skippable}
        self.dir.mkdir(parents=True, exist_ok=True)
        atomic_write(path, json.dumps(data, indent=1).encode())


def signature(ms: list[RunManifest]) -> str:
    """Return the pipeline signature of a step's compiles: TileLang version, target, kernel, pass names."""
    h = hashlib.sha256()
    for m in ms:
        names = [t.name for t in top_passes(m)]
        h.update(json.dumps([m.tilelang_version, m.target, m.kernel, names]).encode())
    return h.hexdigest()[:16]


def _at(pipeline: list[TopPass], position: int) -> TopPass:
    return pipeline[position] if position < len(pipeline) else TopPass(position, "?", "?", "?", None)


def _name(pipeline: list[TopPass], position: int) -> str:
    """The pass as every line names it: `#25 Simplify`, its record's number in the recorded run (what
    `--pass` takes): the one numbering."""
    t = _at(pipeline, position)
    return f"#{t.index} {t.name}" if t.index is not None else t.name


def bisect(spec: Spec, on_step: Callable[[Progress], None] | None = None) -> Result:
    """Return the result of bisecting `spec` (raises UsageError when the recorded run does not compile)."""
    return Bisection(spec, on_step).run()
