"""`tltrace watch` core: rerun a script in a fresh process whenever it or one of its working files is saved.

`watch_runs(spec)` yields events (a run starting, each output line, a run done, watching);
the CLI prints them. A change means new *content*: the working files a rerun itself
rewrites (REGENERATED, CONFLICT) are snapshotted after it and never trigger another run,
and a burst of saves is one change once the files stay still for `debounce_ms`.
"""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .config import Settings, env_trace_dir, script_name_from_argv
from .reconcile import files

TAG_RE = re.compile(r"\b(PATCHED|REGENERATED|SYNCED|CONFLICT|INIT-BACKUP|NOTE)\b")


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
        return (self.trace_dir or Path(env_trace_dir())).absolute()

    def layout(self) -> files.Layout:
        if self.codegen_output is not None:
            return files.Layout.custom_path(self.codegen_output.absolute())
        s = Settings(mode=self.mode, trace_dir=self.resolved_trace_dir(),
                     script_name=script_name_from_argv(str(self.script)))
        return files.Layout.default(s.script_dir)

    def command(self) -> list[str]:
        cmd = [self.python, "-m", "tltrace", "run", "--mode", self.mode,
               "--trace-dir", str(self.resolved_trace_dir())]
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
    tags: tuple[str, ...]  # the reconcile lines the run printed (PATCHED ..., CONFLICT ...)


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


def _changed(old: dict[Path, str], new: dict[Path, str]) -> tuple[Path, ...]:
    return tuple(sorted(p for p in set(old) | set(new) if old.get(p) != new.get(p)))


def run_once(spec: WatchSpec, number: int, changed: tuple[Path, ...]) -> Iterator[WatchEvent]:
    """Run the script once under `tltrace run` in a fresh process, yielding its output line by line."""
    yield RunStarting(number, changed)
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    proc = subprocess.Popen(spec.command(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            errors="replace", bufsize=1, env=env)
    tags = []
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            line = line.rstrip("\n")
            if TAG_RE.search(line) and not line.startswith(" "):
                tags.append(line)
            yield OutputLine(number, line)
        code = proc.wait()
    finally:
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
    yield RunDone(number, code, tuple(tags))


def watch_runs(spec: WatchSpec, *, debounce_ms: int = 300, max_runs: int | None = None,
               stop_event: Any = None) -> Iterator[WatchEvent]:
    """Run once, then rerun on every content change until `max_runs` runs, `stop_event`, or Ctrl+C."""
    import watchfiles

    snap: dict[Path, str] = {}

    def run(number: int, changed: tuple[Path, ...]) -> Iterator[WatchEvent]:
        # The snapshot is taken before RunDone leaves: a save made while the caller
        # handles RunDone is a change, and the run's own rewrites are not.
        nonlocal snap
        for ev in run_once(spec, number, changed):
            if isinstance(ev, RunDone):
                snap = snapshot(spec)
            yield ev

    number = 1
    yield from run(number, ())
    if max_runs is not None and number >= max_runs:
        return
    layout = spec.layout()
    layout.directory.mkdir(parents=True, exist_ok=True)
    dirs = tuple(dict.fromkeys([spec.script.absolute().parent, layout.directory.absolute()]))
    yield Watching(dirs)
    for _batch in watchfiles.watch(*dirs, debounce=debounce_ms, step=50, stop_event=stop_event,
                                   rust_timeout=500, yield_on_timeout=True, recursive=False):
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
