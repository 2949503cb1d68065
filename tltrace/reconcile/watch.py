"""`tltrace watch` core: rerun a script in a fresh process whenever it or one of its working files is saved.

`watch_runs(spec)` yields events (a run starting, each output line, a run done, watching);
the CLI prints them. What each run decided for its working files (PATCHED, CONFLICT, ...)
is read from the run records it wrote (the codegen records' `reconcile` field), not
from its output. A change means new *content*, measured against a snapshot taken
before each run starts: a save made while a run is going leads to the next run, while
the working files a run itself rewrites (created, REGENERATED, CONFLICT) never trigger
another; a burst of saves is one change once the files stay still for `debounce_ms`.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import time
from collections.abc import Generator, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ..config import script_name_from_argv, trace_dir_of
from ..proc import group as procgroup
from . import files
from .buildfacts import BuildCompile, BuildHistory, build_compiles
from .workflow import layout_at


@dataclass(frozen=True)
class WatchSpec:
    """What to run and where its working files are."""

    script: Path
    args: tuple[str, ...] = ()
    mode: str = "both"
    trace_dir: Path | None = None
    codegen_output: Path | None = None
    run_options: tuple[str, ...] = ("--quiet",)
    python: str = field(default_factory=lambda: sys.executable)

    def resolved_trace_dir(self) -> Path:
        return trace_dir_of(self.trace_dir).absolute()

    def script_dir(self) -> Path:
        """The script's directory under the trace dir, as the runs find it (format/scripts.py)."""
        from ..format import scripts

        return scripts.lookup(
            self.resolved_trace_dir(),
            script_name_from_argv(str(self.script)),
            scripts.identity_of(str(self.script)),
        )

    def layout(self) -> files.Layout:
        return layout_at(self.script_dir(), self.codegen_output)

    def command(self) -> list[str]:
        cmd = [
            self.python,
            "-m",
            "tltrace",
            "run",
            "--mode",
            self.mode,
            "--trace-dir",
            str(self.resolved_trace_dir()),
        ]
        if self.codegen_output is not None:
            cmd += ["--codegen-output", str(self.codegen_output.absolute())]
        return [*cmd, *self.run_options, str(self.script), *self.args]


@dataclass(frozen=True)
class RunStarting:
    number: int  # 1 = the first run
    changed: tuple[Path, ...]  # the files whose content changed (empty for the first run)


@dataclass(frozen=True)
class OutputLine:
    number: int
    text: str  # one line of the run's stdout+stderr, without the newline


@dataclass(frozen=True)
class RunDone:
    number: int
    exit_code: int
    tags: tuple[str, ...]  # what the run decided per working file, from its records: "add: PATCHED"
    pid: int | None = None  # the run's process (its run dirs carry it)
    # A failed backend build's errors, from its records: "add: build failed (g++, 1 error)", then each at its line.
    errors: tuple[str, ...] = ()
    # Each compile the run recorded, with its facts and (from the second build on) the facts that
    # changed against the previous build of the same compile (reconcile/buildfacts.py).
    compiles: tuple[BuildCompile, ...] = ()
    saved: tuple[Path, ...] = ()  # the files whose saves started the run (its RunStarting's `changed`)


@dataclass(frozen=True)
class Watching:
    paths: tuple[Path, ...]  # the directories watched


WatchEvent = RunStarting | OutputLine | RunDone | Watching


def watched_files(spec: WatchSpec) -> list[Path]:
    """Return the files whose saves trigger a rerun: the script and every working file now on disk."""
    out = [spec.script.absolute()]
    layout = spec.layout()
    d = layout.directory
    if d.is_dir():
        out += sorted(p for p in d.iterdir() if layout.is_working_name(p.name) and p.is_file())
    return out


def snapshot(spec: WatchSpec) -> dict[Path, str]:
    """Return a content hash for each watched file."""
    snap = {}
    for p in watched_files(spec):
        try:
            snap[p] = hashlib.sha1(p.read_bytes()).hexdigest()
        except OSError:
            continue
    return snap


# What a run leaves in a working file it rewrote itself: the generated source (its .original).
_REWRITING = (None, "REGENERATED", "CONFLICT", "INIT-BACKUP", "SYNCED")


def absorb_own_writes(
    spec: WatchSpec, before: dict[Path, str], after: dict[Path, str], pid: int | None
) -> dict[Path, str]:
    """Return the snapshot the next change is measured against: `before`, plus the run's own writes.

    A file that changed while the run ran counts as the run's own write only when the
    run reconciled it (its records say so) with a decision that rewrites it, and it now
    holds its baseline; any other change (the script, an edit saved mid-run) stays a
    change, and the next run follows.
    """
    out = dict(before)
    reconciled = run_files(spec, pid) if pid is not None else {}
    for path in set(before) | set(after):
        if before.get(path) == after.get(path):
            continue
        tag = reconciled.get(path, "absent")
        if tag == "absent" or tag not in _REWRITING:
            continue
        try:
            own = hashlib.sha1(files.WorkingFile(path).original.read_bytes()).hexdigest() == after.get(path)
        except OSError:
            own = False
        if own:
            if path in after:
                out[path] = after[path]
            else:
                out.pop(path, None)
    return out


def _changed(old: dict[Path, str], new: dict[Path, str]) -> tuple[Path, ...]:
    return tuple(sorted(p for p in set(old) | set(new) if old.get(p) != new.get(p)))


def run_once(spec: WatchSpec, number: int, changed: tuple[Path, ...]) -> Iterator[WatchEvent]:
    """Run the script once under `tltrace run` in a fresh process, yielding its output line by line."""
    yield RunStarting(number, changed)
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    # Its own process group: the run and whatever it started go down when it ends, when this
    # generator is closed, or when tltrace watch gets SIGINT, SIGTERM or SIGHUP (proc/group).
    with procgroup.started(
        spec.command(),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        errors="replace",
        bufsize=1,
        env=env,
    ) as proc:
        assert proc.stdout is not None
        for line in proc.stdout:
            yield OutputLine(number, line.rstrip("\n"))
        code = proc.wait()
    yield RunDone(
        number,
        code,
        run_tags(spec, proc.pid),
        proc.pid,
        build_errors(spec, proc.pid),
        build_compiles(_runs(spec, proc.pid)),
        changed,
    )


def _runs(spec: WatchSpec, pid: int) -> list[Any]:
    """The runs (`history.loading.Run`, manifest loaded) of the compiles process `pid` recorded, oldest first."""
    from ..format.ids import pid_of_run_id
    from ..history.runs import Run, load_manifest, run_dirs

    out = []
    try:
        dirs = run_dirs(spec.script_dir())
    except Exception:
        return []
    for d in dirs:
        if pid_of_run_id(d.name) != pid:  # the one id parser (format/ids.py)
            continue
        try:
            out.append(Run(d, load_manifest(d)))
        except Exception:
            continue
    return out


def _manifests(spec: WatchSpec, pid: int) -> list[Any]:
    """The manifests of the compiles process `pid` recorded."""
    return [r.manifest for r in _runs(spec, pid)]


def run_tags(spec: WatchSpec, pid: int) -> tuple[str, ...]:
    """Return "kernel: TAG" for each working file a run of process `pid` reconciled, from its manifests."""
    out = []
    for m in _manifests(spec, pid):
        for r in m.records:
            if r.reconcile:
                role = f" {r.role}" if r.role == "host" else ""
                out.append(f"{m.kernel_name or '?'}{role}: {r.reconcile}")
    return tuple(dict.fromkeys(out))


def build_errors(spec: WatchSpec, pid: int, limit: int = 5) -> tuple[str, ...]:
    """Return what a run of process `pid` recorded of failed backend builds: per compile a head line, then its errors."""
    from ..format import build as fb

    out: list[str] = []
    for m in _manifests(spec, pid):
        b = fb.of(m)
        if fb.failed(b):
            out.append(f"{m.kernel_name or '?'}: {fb.headline(b)}")
            out += [f"  {line}" for line in fb.error_lines(b, limit)]
    return tuple(out)


def run_files(spec: WatchSpec, pid: int) -> dict[Path, str | None]:
    """Return each working file a run of process `pid` reconciled, with its tag (None: unchanged, created)."""
    out: dict[Path, str | None] = {}
    for m in _manifests(spec, pid):
        for r in m.records:
            if r.working_file:
                out[Path(r.working_file).absolute()] = r.reconcile
    return out


def watch_runs(
    spec: WatchSpec, *, debounce_ms: int = 300, max_runs: int | None = None, stop_event: Any = None
) -> Generator[WatchEvent, None, None]:
    """Run once, then rerun on every content change until `max_runs` runs, `stop_event`, or Ctrl+C."""
    import watchfiles

    snap: dict[Path, str] = {}
    history = BuildHistory()  # each compile's last good build: what the next build's facts compare with

    def run(number: int, changed: tuple[Path, ...]) -> Iterator[WatchEvent]:
        # The snapshot is taken before the run starts, so a save made while it runs is a
        # change; the run's own rewrites are taken out of it when the run is done.
        nonlocal snap
        before = snapshot(spec)
        for ev in run_once(spec, number, changed):
            if isinstance(ev, RunDone):
                snap = absorb_own_writes(spec, before, snapshot(spec), ev.pid)
                ev = replace(ev, compiles=history.compare(ev.compiles))
            yield ev

    number = 1
    yield from run(number, ())
    if max_runs is not None and number >= max_runs:
        return
    layout = spec.layout()
    layout.directory.mkdir(parents=True, exist_ok=True)
    dirs = tuple(dict.fromkeys([spec.script.absolute().parent, layout.directory.absolute()]))
    yield Watching(dirs)
    for _batch in watchfiles.watch(
        *dirs,
        debounce=debounce_ms,
        step=50,
        stop_event=stop_event,
        rust_timeout=500,
        yield_on_timeout=True,
        recursive=False,
    ):
        now = snapshot(spec)
        if not _changed(snap, now):
            continue  # nothing new: our own rewrites, or a timeout tick
        while True:  # debounce: wait until the files stay still
            time.sleep(debounce_ms / 1000)
            again = snapshot(spec)
            if again == now:
                break
            now = again
        if stop_event is not None and stop_event.is_set():
            return
        number += 1
        yield from run(number, _changed(snap, now))
        if max_runs is not None and number >= max_runs:
            return
        yield Watching(dirs)
