"""One step of `tltrace bisect`: the user's script run once, traced, with a skip set; its outcome.

A step is `python -m tltrace run --quiet ...` in a child process with TLTRACE_BISECT set
(bisect/skipping.py), so each step is an invocation of its own that `show` and
`diff-runs` read. "Right" is `--check CMD` exiting 0 (CMD runs through the shell, as
the user typed it), else the script's own exit status 0. A step whose compile (of a
kernel `--kernels` matches) raised is untestable.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..config import CHILD_ENV
from ..errors import EXIT_TIMEOUT, UsageError
from ..format.layout import RUN_RECORDS
from ..format.names import pass_display_name
from ..format.passref import ref_of
from ..format.records import CODEGEN, COMPLETE, RunManifest
from ..history.loading import is_run_dir, is_script_dir, load_run
from ..proc import group as procgroup
from .search import RIGHT, UNTESTABLE, WRONG
from .skipping import ENV, SkipPlan


@dataclass(frozen=True)
class Spec:
    """What to bisect: the script and its arguments, how to judge a step, where the steps go."""

    script: str
    args: tuple[str, ...] = ()
    check: str | None = None
    kernels: str | None = None
    trace_dir: Path = Path("./tmp/lower_trace_dir")
    module: bool = False
    timeout: float | None = None  # seconds a step may run (`run --timeout`); None: no limit
    on_timeout: str = "bad"  # a step that timed out counts as: "bad" (wrong), "good" (right) or "skip"


ON_TIMEOUT = {"bad": WRONG, "good": RIGHT, "skip": UNTESTABLE}
TIMED_OUT_MARK = "tltrace: timed out after"  # tracing/watchdog.MARK: the line `run --timeout` says


@dataclass(frozen=True)
class TopPass:
    """One top-level pass of a compile: its position (skipped ones counted), name, phase, record."""

    position: int
    name: str
    phase: str
    status: str  # the record's status, or "skipped"
    index: int | None  # the record's index (None: skipped, no record)
    ref: str | None = (
        None  # how `--pass` names its record in its run (passref: `Simplify#3`); None: no record
    )


@dataclass
class Step:
    """One step: what it skipped, what it gave, and where its records are."""

    number: int
    purpose: str
    skipped: tuple[int, ...]
    outcome: str = UNTESTABLE
    script_rc: int | None = None
    check_rc: int | None = None
    seconds: float = 0.0
    runs: list[Path] = field(default_factory=list)
    invocation: str | None = None
    why: str | None = None  # untestable: the compile error's first line
    log: Path | None = None
    probe: bool = False  # untestable by the probe's compile: the script did not run
    configs: dict[str, bool | int | float] = field(default_factory=dict)  # pass configs set (--configs)
    recheck_of: int | None = None  # this step runs step N's skip set again (a deciding step, re-checked)
    # --configs: the facts this step's compiles changed against step 1's (bisect/configs.py facts_changed);
    # None: not compared (no compile, or a pass bisection)
    facts: list[dict[str, Any]] | None = None
    timed_out: str | None = None  # the watchdog's line when the step ran past --timeout

    def to_json(self) -> dict[str, Any]:
        return {
            "number": self.number,
            "purpose": self.purpose,
            "skipped": list(self.skipped),
            "outcome": self.outcome,
            "script_rc": self.script_rc,
            "check_rc": self.check_rc,
            "seconds": round(self.seconds, 3),
            "runs": [str(p) for p in self.runs],
            "invocation": self.invocation,
            "why": self.why,
            "log": str(self.log) if self.log else None,
            "probe": self.probe,
            "configs": dict(self.configs),
            "recheck_of": self.recheck_of,
            "facts": self.facts,
            "timed_out": self.timed_out,
        }


def top_passes(manifest: RunManifest) -> list[TopPass]:
    """Return a compile's top-level passes in order, the skipped ones (manifest `skipped`) put back in place."""
    recs = [r for r in manifest.records if r.depth == 0 and r.status != CODEGEN]
    at = {id(r): i for i, r in enumerate(manifest.records)}
    skipped = {
        int(s["position"]): s for s in manifest.skipped or () if isinstance(s, dict) and "position" in s
    }
    out: list[TopPass] = []
    it = iter(recs)
    pos = 0
    while True:
        if pos in skipped:
            s = skipped[pos]
            name = pass_display_name(str(s.get("name")))  # as the records spell it (TVM's says `tl.`)
            out.append(TopPass(pos, name, str(s.get("phase")), "skipped", None))
        else:
            r = next(it, None)
            if r is None:
                break
            out.append(TopPass(pos, r.name, r.phase, r.status, r.index, ref_of(manifest.records, at[id(r)])))
        pos += 1
    return out


def _run_dirs(trace_dir: Path) -> set[Path]:
    out: set[Path] = set()
    try:
        scripts = [d for d in trace_dir.iterdir() if is_script_dir(d)]
    except OSError:
        return out
    for d in scripts:
        try:
            out.update(p for p in (d / RUN_RECORDS).iterdir() if is_run_dir(p))
        except OSError:
            pass
    return out


def run_step(
    spec: Spec,
    number: int,
    purpose: str,
    skip: tuple[int, ...] | None,
    log: Path,
    configs: dict[str, bool | int | float] | None = None,
) -> Step:
    """Run the script once with `skip` and `configs` set (both None: the normal trace path, no
    TLTRACE_BISECT); return the step."""
    step = Step(number, purpose, tuple(skip or ()), log=log, configs=dict(configs or {}))
    trace_dir = spec.trace_dir.absolute()
    before = _run_dirs(trace_dir)
    cmd = [sys.executable, "-m", "tltrace", "run", "--quiet", "--mode", "terminal", "--keep", "0"]
    cmd += ["--no-codegen-output", "--trace-dir", str(trace_dir)]
    if spec.kernels is not None:
        cmd += ["--kernels", spec.kernels]
    if spec.timeout is not None:
        cmd += ["--timeout", repr(spec.timeout)]
    cmd += ["-m", spec.script] if spec.module else [spec.script]
    cmd += ["--", *spec.args] if spec.args else []
    env = dict(os.environ)
    env.pop(CHILD_ENV, None)
    env.pop(ENV, None)
    if skip is not None or configs:
        env[ENV] = SkipPlan.of(skip or (), spec.kernels, configs).to_env()
    t0 = time.perf_counter()
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "wb") as out:
        # Its own process group, taken down with whatever the script left running (proc/group).
        step.script_rc = procgroup.run(cmd, stdout=out, stderr=subprocess.STDOUT, env=env).returncode
        runs = sorted(_run_dirs(trace_dir) - before)
        loaded = [load_run(p) for p in runs]
        errors = [
            r.manifest.error or r.manifest.status
            for r in loaded
            if r.manifest and r.manifest.status != COMPLETE
        ]
        damaged = [r.problem for r in loaded if r.manifest is None]
        step.runs = runs
        step.invocation = next((r.manifest.invocation for r in loaded if r.manifest), None)
        step.timed_out = _timed_out(log, step.script_rc) if spec.timeout is not None else None
        if step.timed_out is not None:
            step.outcome = ON_TIMEOUT[spec.on_timeout]
            step.why = step.timed_out
        elif errors or damaged or not loaded:
            step.outcome = UNTESTABLE
            first = (errors or damaged or ["the script compiled no kernel"])[0] or "?"
            step.why = first.strip().splitlines()[-1][:200] if first.strip() else "?"
        elif spec.check is not None:
            out.write(f"\n$ {spec.check}\n".encode())
            out.flush()
            step.check_rc = procgroup.run(
                spec.check, shell=True, stdout=out, stderr=subprocess.STDOUT
            ).returncode
            step.outcome = RIGHT if step.check_rc == 0 else WRONG
        else:
            step.outcome = RIGHT if step.script_rc == 0 else WRONG
    step.seconds = time.perf_counter() - t0
    return step


def _timed_out(log: Path, rc: int | None) -> str | None:
    """Return the watchdog's line from a step's log when the step timed out (exit 124 and the line), else None."""
    if rc != EXIT_TIMEOUT:
        return None
    try:
        text = log.read_bytes()[-65536:].decode("utf-8", "replace")
    except OSError:
        return None
    at = text.rfind(TIMED_OUT_MARK)
    if at < 0:
        return None
    return text[at + len("tltrace: ") :].splitlines()[0][:300]


def manifests(step: Step) -> list[RunManifest]:
    """Return the manifests of the step's compiles, in start order."""
    out = []
    for p in step.runs:
        r = load_run(p)
        if r.manifest is not None:
            out.append(r.manifest)
    return sorted(out, key=lambda m: m.started)


def untestable_start(step: Step, spec: Spec, unchanged: str) -> UsageError:
    """Return the error for a first step (`unchanged`: "nothing skipped") that tests nothing."""
    if step.runs:
        return UsageError(f"the script does not compile with {unchanged} ({step.why}); see {step.log}")
    matching = " matching --kernels" if spec.kernels else ""
    return UsageError(f"the script compiled no kernel{matching}; see {step.log}")
