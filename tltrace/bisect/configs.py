"""`tltrace bisect --configs`: which boolean pass configs, flipped, turn the outcome (wrong into right, or right into wrong).

1. Step 1 sets nothing: its outcome (right or wrong) is the one to turn; its compile is the
   recorded run, whose PassContext config (repro_context.json) says each config's value.
2. One step per boolean pass config of the installed TileLang (tilelang.transform.PassConfigKey,
   read at run time, kept to the configs rerun/trust.py knows as booleans, that TVM has
   registered and that write no files), flipped alone: set to the opposite of its recorded value (an unset one counts as
   off). A flip the probe cannot compile is untestable without a script run.
3. A flip that turns the outcome alone is the answer (every such flip is named). Otherwise
   every testable flip at once; when that turns it, ddmin narrows the set to a 1-minimal
   one: leaving out any config of it loses the turn.

Each step is a traced child invocation (steps.py) with the configs in TLTRACE_BISECT; the
child's skipping tool applies them through the seam (bisect/skipping.py). Each step after the
first carries the facts (docs/facts.md) its compiles changed against step 1's (`facts_changed`):
what the flip did (`smem_dynamic 49152 → 16384`), which the CLI prints on the step's line.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import UsageError
from ..format.ids import new_invocation_id
from .ddmin import ddmin
from .probe import Probe, Probed, repro_file
from .recheck import Recheck
from .search import RIGHT, UNTESTABLE, WRONG
from .steps import Spec, Step, manifests, run_step, top_passes, untestable_start

FOUND = "found"  # exit 0: a set of flips turns the outcome
NONE = "none"  # exit 1: no flip, alone or together, turns it
FLAKY = "flaky"  # exit 8: a deciding step, run again, gave another outcome

Value = bool | int | float


@dataclass(frozen=True)
class Flip:
    """One finished config step, as the CLI prints it."""

    step: Step
    elapsed: float
    alone: bool  # a flip of one config (else a set, from ddmin)


@dataclass
class ConfigResult:
    """What `bisect --configs` found: the recorded outcome, each flip's, and the smallest set that turns it."""

    kind: str
    recorded: str  # step 1's outcome
    steps: list[Step]
    flips: dict[str, str] = field(default_factory=dict)  # config -> outcome flipped alone
    values: dict[str, Value] = field(default_factory=dict)  # config -> the value it was flipped to
    culprits: list[str] = field(default_factory=list)  # the 1-minimal set (or each single flip that turns it)
    single: bool = False  # culprits are single flips, each enough alone
    good_run: Path | None = None
    seconds: float = 0.0
    probe_compiles: int = 0
    probe_off: str | None = None
    rechecks: list[Recheck] = field(default_factory=list)  # the deciding steps, run again
    answer: list[str] = field(default_factory=list)  # FLAKY: the flips the search would have named
    facts: dict[str, list[dict[str, Any]] | None] = field(
        default_factory=dict
    )  # config -> its step's facts diff

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "mode": "configs",
            "recorded": self.recorded,
            "turns_to": RIGHT if self.recorded == WRONG else WRONG,
            "culprits": {c: self.values.get(c) for c in self.culprits},
            "single": self.single,
            "flips": {
                k: {"value": self.values.get(k), "outcome": v, "facts": self.facts.get(k)}
                for k, v in self.flips.items()
            },
            "recorded_run": str(self.good_run) if self.good_run else None,
            "steps": [s.to_json() for s in self.steps],
            "seconds": round(self.seconds, 3),
            "probe": {"compiles": self.probe_compiles, "off": self.probe_off},
            "rechecks": [r.to_json() for r in self.rechecks],
            "answer_before_recheck": {c: self.values.get(c) for c in self.answer},
        }


def facts_changed(base: list[Path], runs: list[Path]) -> list[dict[str, Any]]:
    """Return, for each compile of a step, the facts (docs/facts.md) that differ from the same compile of
    step 1: [{kernel, run, base_run, changes: [{name, a, b}]}]. Compiles pair in start order (a flip
    changes what a compile makes, not which kernels the script compiles); a compile of one side only
    pairs with none and is left out. A compile whose facts cannot be read counts as unchanged."""
    from ..facts import changes, facts_of
    from ..history.loading import load_run

    def ordered(paths: list[Path]) -> list[Any]:
        loaded = [load_run(p) for p in paths]
        return sorted((r for r in loaded if r.manifest is not None), key=lambda r: r.manifest.started)

    out = []
    for a, b in zip(ordered(base), ordered(runs)):
        try:
            changed = changes(facts_of(a), facts_of(b))
        except Exception:  # a damaged text: its facts are not worth the bisection's answer
            changed = []
        out.append(
            {"kernel": b.manifest.kernel, "run": str(b.path), "base_run": str(a.path), "changes": changed}
        )
    return out


def describe_facts(facts: list[dict[str, Any]] | None) -> str | None:
    """Return a step's facts diff as one line (`smem_dynamic 49152 → 16384, num_stages 3 → 1`; with
    several compiles, each changed one as `kernel: ...`), 'no fact changed', or None when not compared."""
    from ..facts import describe

    if facts is None:
        return None
    changed = [f for f in facts if f.get("changes")]
    if not changed:
        return "no fact changed"
    if len(facts) == 1:
        return describe(changed[0]["changes"])
    return "; ".join(f"{f.get('kernel') or '?'}: {describe(f['changes'])}" for f in changed)


def flippable(pattern: str | None = None) -> list[str]:
    """Return the boolean pass configs of the installed TileLang that a flip may set (matching `pattern`)."""
    from tilelang.transform import PassConfigKey  # type: ignore[import-not-found]

    from ..rerun.trust import BOOL, PASS_CONFIGS, WRITES_FILES

    names = [str(getattr(k, "value", k)) for k in PassConfigKey]
    out = [n for n in names if PASS_CONFIGS.get(n) == BOOL and n not in WRITES_FILES]
    try:  # a key TVM has not registered is refused by every PassContext: nothing to flip
        from tilelang import tvm  # type: ignore[import-not-found]

        registered = {str(k) for k in tvm.transform.PassContext.list_configs()}
        out = [n for n in out if n in registered]
    except Exception:
        pass
    if pattern is not None:
        out = [n for n in out if re.search(pattern, n)]
    return sorted(dict.fromkeys(out))


def _recorded_config(run: Path) -> dict[str, Any]:
    try:
        where = repro_file(run, "context")
        if where is None:
            return {}
        data = json.loads(where.read_text())
        config = data.get("config") if isinstance(data, dict) else None
        return config if isinstance(config, dict) else {}
    except (OSError, ValueError):
        return {}


class ConfigBisection(Probed[ConfigResult]):
    """One `tltrace bisect --configs`."""

    def __init__(
        self, spec: Spec, on_step: Callable[[Flip], None] | None = None, pattern: str | None = None
    ) -> None:
        self.spec = spec
        self.on_step = on_step or (lambda f: None)
        self.pattern = pattern
        self.steps: list[Step] = []
        self.t0 = time.perf_counter()
        self.logs = spec.trace_dir.absolute() / ".bisect" / new_invocation_id()
        self.probe: Probe | None = None

    def step(
        self, purpose: str, configs: dict[str, Value] | None, alone: bool, recheck_of: int | None = None
    ) -> Step:
        a = self.probe.ask((), configs) if self.probe is not None and configs and recheck_of is None else None
        if a is not None and not a.ok:
            s = Step(
                0,
                purpose,
                (),
                UNTESTABLE,
                seconds=a.seconds,
                why=a.why,
                probe=True,
                configs=dict(configs or {}),
            )
        else:
            n = len(self.steps) + 1
            s = run_step(self.spec, n, purpose, None, self.logs / f"step_{n:02d}.log", configs)
            s.recheck_of = recheck_of
            if self.steps and s.runs:  # what the flip did to the compile, against step 1's
                s.facts = facts_changed(self.steps[0].runs, s.runs)
            self.steps.append(s)
        self.on_step(Flip(s, time.perf_counter() - self.t0, alone))
        return s

    def _run(self) -> ConfigResult:
        names = flippable(self.pattern)
        if not names:
            raise UsageError(
                f"no boolean pass config of this TileLang matches --configs-matching {self.pattern!r}"
                if self.pattern
                else "this TileLang has no boolean pass config tltrace knows"
            )
        base = self.step("nothing flipped", None, True)
        if base.outcome == UNTESTABLE:
            raise untestable_start(base, self.spec, "no config flipped")
        ms = manifests(base)
        first = next((p for p in base.runs if ms and p.name == ms[0].run_id), base.runs[0])
        recorded = _recorded_config(first)
        values: dict[str, Value] = {}
        for n in names:
            v = recorded.get(n)
            values[n] = not bool(v) if isinstance(v, (bool, int)) else True
        out = ConfigResult(NONE, base.outcome, self.steps, values=values, good_run=first)
        target = RIGHT if base.outcome == WRONG else WRONG
        by_id = {p.name: p for p in base.runs}
        self.probe = Probe(
            [by_id[m.run_id] for m in ms if m.run_id in by_id],
            [[t.name for t in top_passes(m)] for m in ms],
            self.logs / "probe.log",
        )
        for n in names:
            s = self.step(f"flip {n}={values[n]}", {n: values[n]}, True)
            out.flips[n] = s.outcome
            out.facts[n] = s.facts
        hits = [n for n in names if out.flips[n] == target]
        if hits:
            out.kind, out.culprits, out.single = FOUND, hits, True
            return self._done(self._recheck(out, base, {hits[0]: values[hits[0]]}))
        pool = [n for n in names if out.flips[n] != UNTESTABLE]
        if len(pool) > 1:
            every = self.step(f"flip all {len(pool)} testable configs", {n: values[n] for n in pool}, False)
            if every.outcome == target:

                def turns(subset: tuple[str, ...]) -> bool:
                    if len(subset) == 1:
                        return out.flips.get(subset[0]) == target
                    if subset == tuple(pool):
                        return True
                    what = ", ".join(subset) if len(subset) <= 3 else f"{subset[0]} .. {subset[-1]}"
                    s = self.step(f"flip {len(subset)}: {what}", {n: values[n] for n in subset}, False)
                    return s.outcome == target

                out.kind, out.culprits = FOUND, list(ddmin(pool, turns))
                return self._done(self._recheck(out, base, {n: values[n] for n in out.culprits}))
        return self._done(out)

    def _recheck(self, out: ConfigResult, base: Step, flips: dict[str, Value]) -> ConfigResult:
        """Run the deciding steps again (nothing flipped, then the answer's flips); two outcomes for one
        step make the answer FLAKY."""
        turned = next(
            (s for s in reversed(self.steps) if s.configs == flips and s.recheck_of is None),
            None,
        )
        for s in (base, turned):
            if s is None:
                continue
            what = "nothing flipped" if s is base else ", ".join(f"{k}={v}" for k, v in flips.items())
            again = self.step(f"re-check step {s.number} ({what})", s.configs or None, s is base, s.number)
            r = Recheck(s.number, s.outcome, again.number, again.outcome, ())
            out.rechecks.append(r)
            if not r.agrees:
                out.kind, out.answer, out.culprits = FLAKY, out.culprits, []
                break
        return out

    def _done(self, out: ConfigResult) -> ConfigResult:
        out.seconds = time.perf_counter() - self.t0
        if self.probe is not None:
            out.probe_compiles, out.probe_off = self.probe.count, self.probe.off
        return out


def bisect_configs(
    spec: Spec, on_step: Callable[[Flip], None] | None = None, pattern: str | None = None
) -> ConfigResult:
    """Return which pass configs, flipped, turn the script's outcome (raises UsageError when it does not compile)."""
    return ConfigBisection(spec, on_step, pattern).run()
