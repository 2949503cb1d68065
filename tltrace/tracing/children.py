"""Child processes: every Python process a traced job starts traces its compiles, lazily.

How a child is reached (coverage.py's subprocess measurement is the model, without
its `.pth` file in site-packages):

- While an invocation is open, `Propagation` sets two variables in `os.environ`:
  TLTRACE_CHILD (the invocation's settings as JSON) and PYTHONPATH, with tltrace's
  own `_boot` directory first. Children inherit the environment whatever starts them:
  multiprocessing (spawn, forkserver), ProcessPoolExecutor, subprocess,
  `python other.py`, torchrun's ranks.
- At start-up a child's `site` imports `_boot/sitecustomize.py`. It adds one
  meta-path finder and imports nothing else (the sitecustomize it shadows is imported
  after it). A child that never imports TileLang pays that and nothing more.
- When the child imports `tilelang`, the finder calls `tltrace.tracing.child.activate()`: the
  child traces with the parent's settings (`settings_from_json`), under the parent's
  invocation id and script directory. It never prunes and prints no summary: the parent reads the children's
  compiles from disk when the invocation ends (`gather`).

Nothing is written outside the trace dir and nothing is installed: the hook lives in
the environment of the job's processes and dies with them. A killed parent leaves
nothing behind (there is no file to remove), and `Propagation.stop()` restores the
environment of a process that goes on (`disable()`, a watch rerun).

`os.fork()` children (and the fork start method) inherit the installed tool itself;
`Lifecycle.forked()` (tracing/lifecycle.py) tells the code that ends an invocation that it
runs in such a child.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ..config import (
    CHILD_ENV,
    DEFAULT,
    EXIT_WAIT_DEFAULT,
    EXPLAIN_TIMEOUT_DEFAULT,
    LAUNCH_LIMIT_DEFAULT,
    QUEUE_DEFAULT,
    QUEUE_MIN,
    SAVE_INPUTS_MAX_DEFAULT,
    WORKERS_DEFAULT,
    Settings,
    compile_regex,
)
from ..format.records import EXITED, EXITED_NOTE, INTERRUPTED, RUNNING, RunManifest
from ..format.writer import pid_of
from ..session.events import NOT_FINALISED, STILL_RUNNING, Notice

ENV = CHILD_ENV
KERNELS_ENV = "TLTRACE_KERNELS"
BOOT_DIR = str(Path(__file__).resolve().parent / "_boot")
_VERSION = 1

# The Settings a child takes as they are: its switches (false when absent) and its numbers
# (type, default, lowest: a value out of range is the default).
_SWITCHES = (
    "ignore_whitespace",
    "quiet",
    "all_passes",
    "verbose",
    "use_cache",
    "sync",
    "ptxas",
    "line_directives",
    "ptx",
    "sass",
    "exact",
    "check_texts",
    "launches",
)
_NUMBERS: dict[str, tuple[type, float, float]] = {
    "queue": (int, QUEUE_DEFAULT, QUEUE_MIN),
    "workers": (int, WORKERS_DEFAULT, 1),
    "exit_wait": (float, EXIT_WAIT_DEFAULT, 0),
    "explain_timeout": (float, EXPLAIN_TIMEOUT_DEFAULT, 0),
    "launch_limit": (int, LAUNCH_LIMIT_DEFAULT, 0),
    "save_inputs": (int, 0, 0),
    "save_inputs_max": (int, SAVE_INPUTS_MAX_DEFAULT, 0),
}


# -- the parent's side ------------------------------------------------------------------------------
def settings_json(settings: Settings, root_pid: int) -> str:
    """Return what a child needs to trace as `settings` does (TLTRACE_CHILD's value)."""
    from ..format.writer import process_start

    cg = settings.codegen_output
    data = {
        "v": _VERSION,
        "mode": settings.mode,
        "trace_dir": str(settings.trace_dir),
        "script_name": settings.script_name,
        "script_key": settings.script_key,
        "codegen_output": "default" if cg is DEFAULT else None if cg is None else str(cg),
        "context": settings.context,
        "only": settings.only.pattern if settings.only is not None else None,
        "skip": settings.skip.pattern if settings.skip is not None else None,
        "kernels": settings.kernels.pattern if settings.kernels is not None else None,
        "remarks": list(settings.remarks) if settings.remarks is not None else None,
        "source_map": settings.source_map,
        **{name: getattr(settings, name) for name in (*_SWITCHES, *_NUMBERS)},
        "command": list(settings.command),
        "invocation": settings.invocation,
        "root": {"pid": root_pid, "start": process_start(root_pid)},
    }
    return json.dumps(data)


def child_environment(settings: Settings, environ: dict[str, str] | None = None) -> dict[str, str]:
    """Return the variables that make the children of an environment trace as `settings` does."""
    env = os.environ if environ is None else environ
    path = [p for p in (env.get("PYTHONPATH") or "").split(os.pathsep) if p and p != BOOT_DIR]
    out = {
        ENV: settings_json(settings, os.getpid()),
        "PYTHONPATH": os.pathsep.join([BOOT_DIR, *path]),
    }
    if settings.kernels is not None:
        out[KERNELS_ENV] = settings.kernels.pattern
    return out


class Propagation:
    """Sets the child variables in os.environ while an invocation is open; puts back what was there."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._saved: dict[str, str | None] = {}
        self._set: dict[str, str] = {}

    def start(self) -> Propagation:
        values = child_environment(self.settings)
        for k in (ENV, "PYTHONPATH", KERNELS_ENV):
            self._saved[k] = os.environ.get(k)
        os.environ.update(values)
        self._set = values
        return self

    def stop(self) -> None:
        """Restore each variable that still holds what start() set (one changed since is left alone)."""
        for k, v in self._set.items():
            if os.environ.get(k) != v:
                continue
            old = self._saved.get(k)
            if old is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = old
        self._set = {}


def leave_parent_invocation() -> None:
    """This process traces on its own (`tltrace run`, `enable()`): do not join a parent's invocation."""
    os.environ.pop(ENV, None)


# -- the child's side --------------------------------------------------------------------------------
def settings_from_json(text: str) -> tuple[Settings, dict[str, Any]]:
    """Return the Settings a child traces with, and the root process ({pid, start}); raise ValueError."""
    data = json.loads(text)
    if not isinstance(data, dict) or data.get("v") != _VERSION:
        raise ValueError(f"{ENV} is not version {_VERSION} of tltrace's child settings")
    cg_raw = data.get("codegen_output")
    cg: object = DEFAULT if cg_raw == "default" else None if cg_raw is None else Path(str(cg_raw))

    def pattern(key: str) -> re.Pattern[str] | None:
        value = data.get(key)
        return (
            compile_regex(value, f"{ENV}'s {key}") if isinstance(value, str) else None
        )  # any case, as the parent's

    def number(key: str, kind: type, default: float, low: float) -> Any:
        value = data.get(key)
        ok = isinstance(value, (int, float)) and not isinstance(value, bool) and value >= low
        return kind(value if ok else default)

    settings = Settings(
        mode=str(data["mode"]),
        trace_dir=Path(str(data["trace_dir"])),
        script_name=str(data["script_name"]),
        script_key=data.get("script_key"),
        codegen_output=cg,
        keep=0,  # the parent prunes, once, when the invocation ends
        context=int(data.get("context", 3)),
        only=pattern("only"),
        skip=pattern("skip"),
        kernels=pattern("kernels"),
        remarks=_remarks(data.get("remarks")),
        source_map=bool(data.get("source_map", True)),
        **{name: bool(data.get(name)) for name in _SWITCHES},
        **{name: number(name, *spec) for name, spec in _NUMBERS.items()},
        wait=True,  # a child may end in os._exit (multiprocessing's do): no atexit drain there
        command=tuple(str(c) for c in data.get("command") or ()),
        invocation=str(data["invocation"]),
    )
    root = data.get("root")
    return settings, root if isinstance(root, dict) else {}


# -- the parent's side, when the invocation ends -------------------------------------------------------
@dataclass
class Gathered:
    """The invocation's compiles made by other processes, as found on disk when it ends."""

    runs: list[RunManifest] = field(default_factory=list)
    running: list[RunManifest] = field(default_factory=list)  # still being written by a live process

    @property
    def pids(self) -> list[int]:
        return sorted({p for p in (pid_of(m) for m in self.runs) if p is not None})


def gather(script_dir: Path, invocation: str, own: Iterable[str]) -> Gathered:
    """Return the compiles of `invocation` under `script_dir` that are not in `own` (run ids).

    Only run directories made since the invocation began are read (run and invocation
    ids carry their start time). Never raises: unreadable runs are left out.
    """
    from ..format import notes
    from ..format.ids import time_of_id
    from ..format.writer import writer_alive
    from ..history.loading import load_manifest, run_dirs  # (not history.runs: its readers unused here)

    mine = set(own)
    out = Gathered()
    try:
        dirs = run_dirs(Path(script_dir))
    except Exception:
        return out
    since = time_of_id(invocation)
    for d in dirs:
        if d.name in mine:
            continue
        t = time_of_id(d.name)
        if since is not None and t is not None and t < since - 2.0:
            continue
        try:
            m = load_manifest(d)
        except Exception:
            continue
        if m.invocation != invocation:
            continue
        if not m.run_id:
            m = replace(m, run_id=d.name)
        if m.status == RUNNING:
            if writer_alive(m.writer, d.name):
                out.running.append(m)
            elif notes.ended(d):
                # The compile had ended; its process exited before writing all its records (session/exits.py).
                m = replace(
                    m, status=EXITED, error=f"the compile ended, but its {EXITED_NOTE} (pid {pid_of(m)})"
                )
            else:
                # Its process is gone: interrupted, as `show` calls it (history/loading.py), not failed.
                m = replace(
                    m, status=INTERRUPTED, error=f"process {pid_of(m)} ended before this compile finished"
                )
        out.runs.append(m)
    return out


def working_files(runs: Iterable[RunManifest]) -> set[Path]:
    """Return the working files these compiles' codegen reconciled."""
    return {Path(r.working_file) for m in runs for r in m.records if r.working_file}


def gathered_notices(g: Gathered, own_pid: int, not_finalised: frozenset[str] = frozenset()) -> list[Notice]:
    """Return what to say about compiles not finished as the invocation ends (in threads or processes).

    `not_finalised`: run ids of this process's compiles that ended but whose final manifest
    could not be written (they look running on disk); the others are still running. The
    words match the summary's (events.STILL_RUNNING, events.NOT_FINALISED).
    """
    out: list[Notice] = []
    ended = [m for m in g.running if pid_of(m) == own_pid and m.run_id in not_finalised]
    here = [m for m in g.running if pid_of(m) == own_pid and m.run_id not in not_finalised]
    there = [m for m in g.running if pid_of(m) != own_pid]
    if ended:
        out.append(
            Notice(
                "warning",
                f"{len(ended)} compile(s) ({_names(ended)}) {NOT_FINALISED}: the compile ended, but tltrace "
                "could not write its final status (the warning above says why); its passes are recorded",
            )
        )
    if here:
        threads = ", ".join(sorted({m.thread or "?" for m in here}))
        out.append(
            Notice(
                "warning",
                f"{len(here)} compile(s) ({_names(here)}) {STILL_RUNNING} in thread(s) {threads} as the "
                f"script ended: recorded as far as they get, listed here as {STILL_RUNNING}",
            )
        )
    if there:
        pids = sorted({p for p in (pid_of(m) for m in there) if p is not None})
        out.append(
            Notice(
                "warning",
                f"{len(there)} compile(s) ({_names(there)}) {STILL_RUNNING} in other process(es) "
                f"(pid {', '.join(map(str, pids))}) as the job ends: recorded as far as they get, "
                f"listed here as {STILL_RUNNING}",
            )
        )
    return out


def _names(runs: list[RunManifest]) -> str:
    return ", ".join(sorted({m.kernel or "?" for m in runs}))


def _remarks(value: object) -> tuple[str, ...] | None:
    """The parent's --remarks planners (None: off); names this tltrace does not know are left out."""
    from ..config import REMARK_PLANNERS

    if not isinstance(value, list):
        return None
    return tuple(str(v) for v in value if str(v) in REMARK_PLANNERS)
